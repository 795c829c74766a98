// The schema compilers kept per process (src/shared/validation.ts): equal schemas
// from a second build of the app get the functions compiled for the first, and
// sharing them changes no answer (bodies stay uncoerced, text inputs coerced,
// answers keep only the schema's fields).

import { describe, expect, it } from 'vitest';
import { requestValidatorCompiler, responseSerializerCompiler } from '../../src/shared/validation.js';

const schema = () => ({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false });
const compile = (httpPart: string, s: object) =>
  requestValidatorCompiler()({ schema: s, httpPart, method: 'POST', url: '/x' }) as (d: unknown) => boolean;

describe('schema compilers kept per process', () => {
  it('a second build reuses the validator compiled for an equal schema; body and text keep their own coercion', () => {
    expect(compile('body', schema())).toBe(compile('body', schema()));
    expect(compile('querystring', schema())).not.toBe(compile('body', schema()));
    expect(compile('body', schema())({ n: '5' })).toBe(false);
    const query = { n: '5' };
    expect(compile('querystring', schema())(query)).toBe(true);
    expect(query).toEqual({ n: 5 });
  });

  it('a second build reuses the serializer compiled for an equal schema, and it sends only the schema fields', () => {
    const serializer = (s: object) =>
      responseSerializerCompiler()({ schema: s, method: 'GET', url: '/x', httpStatus: '200' }) as (d: unknown) => string;
    const a = serializer({ type: 'object', properties: { n: { type: 'integer' } } });
    expect(serializer({ type: 'object', properties: { n: { type: 'integer' } } })).toBe(a);
    expect(a({ n: 5, secret: 'x' })).toBe('{"n":5}');
    expect(serializer({ type: 'object', properties: { m: { type: 'string' } } })({ m: 'y', n: 5 })).toBe('{"m":"y"}');
  });
});
