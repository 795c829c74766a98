// Fastify's schema compilers: request validation (one Ajv per kind of input)
// and response serialisation. Query strings, path parameters and headers arrive
// as text: they are coerced ("5" → 5, ?a=x → ["x"]). JSON bodies already carry
// their types and are taken as sent. Coercing a body broke schemas such as
// `null | array`: Ajv's array coercion unwrapped the one-element array [x] to x
// while trying the `null` branch of the union, so `{"idleTiers":[{…}]}` was
// refused with "must be null".
//
// What a schema compiles to is kept for the life of the process, keyed by the
// schema's JSON text: an orchestrator built again in the same process (a
// restart in the simulation, each test's own orchestrator) reuses the compiled
// functions instead of compiling every route's schemas again, which was most of
// the cost of a build. A compiled validator or serializer keeps no state
// between calls, so sharing one between apps changes no answer.

import { createRequire } from 'node:module';
import { Ajv, type Options, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';

// As Fastify's own defaults, except that additional properties are refused
// (additionalProperties: false answers 400), never silently removed.
const COMMON: Options = { removeAdditional: false, useDefaults: true, allErrors: false, addUsedSchema: false };

const compilers = {
  body: { ajv: new Ajv({ ...COMMON, coerceTypes: false }), compiled: new Map<string, ValidateFunction>() },
  text: { ajv: new Ajv({ ...COMMON, coerceTypes: 'array' }), compiled: new Map<string, ValidateFunction>() },
};

/** A validator compiler for `app.setValidatorCompiler`: bodies strict, text inputs coerced. */
export function requestValidatorCompiler(): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart }) => {
    const c = httpPart === 'body' ? compilers.body : compilers.text;
    const key = JSON.stringify(schema);
    let fn = c.compiled.get(key);
    if (!fn) c.compiled.set(key, (fn = c.ajv.compile(schema as object)));
    return fn;
  };
}

type Serialize = (data: unknown) => string;
type SerializerBuilder = (externalSchemas: unknown, options: unknown) => (route: { schema: unknown }) => Serialize;
const serializers = new Map<string, Serialize>();
let defaultSerializer: ((route: { schema: unknown }) => Serialize) | undefined;

/**
 * A serializer compiler for `app.setSerializerCompiler`: Fastify's own (the
 * compiler package Fastify itself loads, resolved from Fastify's directory),
 * with no shared schemas — the app adds none, so a `$ref` to one fails at
 * build — and its results kept per schema.
 */
export function responseSerializerCompiler(): FastifySerializerCompiler<unknown> {
  return ({ schema }) => {
    const key = JSON.stringify(schema);
    let fn = serializers.get(key);
    if (!fn) {
      if (!defaultSerializer) {
        const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
        const selector = fromFastify('@fastify/fast-json-stringify-compiler') as () => SerializerBuilder;
        defaultSerializer = selector()({}, {});
      }
      serializers.set(key, (fn = defaultSerializer({ schema })));
    }
    return fn;
  };
}
