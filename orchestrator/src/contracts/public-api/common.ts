// Pieces every public API schema uses: identifiers, timestamps as the API
// writes them (ISO text, or null), open objects, and the one error body.
// Self-contained (TypeBox only): the panel's compiler reads this folder too.

import { Type, type Static, type TSchema } from '@sinclair/typebox';

export const IdString = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });
export const VersionString = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.+-]*$' });
export const Sha256String = Type.String({ pattern: '^[0-9a-f]{64}$' });
export const EnvName = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' });

/** A time in an answer: ISO 8601 text (`2026-01-31T12:00:00.000Z`). */
export const Iso = Type.String({ description: 'ISO 8601 time' });
/** A time that may not have happened (yet). */
export const NullableIso = Type.Union([Iso, Type.Null()]);
export const NullableString = Type.Union([Type.String(), Type.Null()]);
export const NullableInteger = Type.Union([Type.Integer(), Type.Null()]);
export const NullableNumber = Type.Union([Type.Number(), Type.Null()]);

export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

/** An object whose keys are open (settings, labels, details): every property is kept. */
export const OpenObject = Type.Object({}, { additionalProperties: true });
/** Any JSON value (a template's readiness block, a command's result). */
export const AnyJson = Type.Unknown();

/** An object with the named fields, and more the answer may carry (kept, not dropped). */
export function Open<T extends Record<string, TSchema>>(properties: T, description?: string) {
  return Type.Object(properties, { additionalProperties: true, ...(description ? { description } : {}) });
}

/** Every refusal and failure: `{error: {code, message, retryable?, details?}}` (shared/errors.ts). */
export const ErrorBody = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: 'stable code, e.g. INSTANCE_NOT_FOUND' }),
        message: Type.String(),
        retryable: Type.Optional(Type.Boolean()),
        details: Type.Optional(OpenObject),
      },
      { additionalProperties: true },
    ),
  },
  { description: 'the error answer of every route' },
);
export type ErrorBody = Static<typeof ErrorBody>;

export const Maintenance = Type.Object({ enabled: Type.Boolean(), message: Type.String(), since: NullableIso });
