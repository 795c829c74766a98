// JSON schemas (TypeBox) of the agent API's request bodies and queries. Ids are
// validated again in the instance service, so a bad one names itself either way.

import { Type, type Static } from '@sinclair/typebox';

const Id = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });
const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });

export const CreateInstanceBody = Type.Object(
  {
    groupId: Id,
    variantId: Id,
    sessionId: Type.Optional(Id),
    image: Type.String({ minLength: 1, maxLength: 512, pattern: '^[^\\s]+$' }),
    layers: Type.Array(Type.Object({ id: Id, checksum: Sha256 }, { additionalProperties: false }), { maxItems: 64 }),
    resources: Type.Object(
      {
        memoryMb: Type.Integer({ minimum: 16, maximum: 1024 * 1024 }),
        cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1024 })),
      },
      { additionalProperties: false },
    ),
    env: Type.Optional(
      Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String({ maxLength: 32768 }), {
        maxProperties: 512,
        additionalProperties: false,
      }),
    ),
    containerPort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    command: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { minItems: 1, maxItems: 256 })),
  },
  { additionalProperties: false },
);
export type CreateInstanceBody = Static<typeof CreateInstanceBody>;

export const StopBody = Type.Object(
  { timeoutSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400 })) },
  { additionalProperties: false },
);
export type StopBody = Static<typeof StopBody>;

export const LogsQuery = Type.Object(
  { tail: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })) },
  { additionalProperties: false },
);
export type LogsQuery = Static<typeof LogsQuery>;

export const CleanupBody = Type.Object(
  { instanceIds: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 1000 }) },
  { additionalProperties: false },
);
export type CleanupBody = Static<typeof CleanupBody>;

export const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });
export type InstanceParams = Static<typeof InstanceParams>;
