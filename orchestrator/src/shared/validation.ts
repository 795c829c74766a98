// Fastify's request validation, one Ajv per kind of input. Query strings,
// path parameters and headers arrive as text: they are coerced ("5" → 5,
// ?a=x → ["x"]). JSON bodies already carry their types and are taken as sent.
// Coercing a body broke schemas such as `null | array`: Ajv's array coercion
// unwrapped the one-element array [x] to x while trying the `null` branch of
// the union, so `{"idleTiers":[{…}]}` was refused with "must be null".

import { Ajv, type Options } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

// As Fastify's own defaults, except that additional properties are refused
// (additionalProperties: false answers 400), never silently removed.
const COMMON: Options = { removeAdditional: false, useDefaults: true, allErrors: false, addUsedSchema: false };

/** A validator compiler for `app.setValidatorCompiler`: bodies strict, text inputs coerced. */
export function requestValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const body = new Ajv({ ...COMMON, coerceTypes: false });
  const text = new Ajv({ ...COMMON, coerceTypes: 'array' });
  return ({ schema, httpPart }) => (httpPart === 'body' ? body : text).compile(schema as object);
}
