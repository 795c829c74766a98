// JSON schemas (TypeBox) of the agent API's request bodies and queries. Ids are
// validated again in the instance service, so a bad one names itself either way.

import { Type, type Static } from '@sinclair/typebox';

const Id = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });
const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });

const Signal = Type.String({ maxLength: 16, pattern: '^SIG[A-Z][A-Z0-9]*(\\+[0-9]{1,2})?$' });
const Port = Type.Integer({ minimum: 1, maximum: 65535 });
const TimeoutSeconds = Type.Integer({ minimum: 0, maximum: 86_400 });
const RconTarget = { port: Port, password: Type.String({ minLength: 1, maxLength: 512 }) };

/** The container-defining fields shared by create and replace. */
const containerFields = {
  groupId: Id,
  variantId: Id,
  sessionId: Type.Optional(Id),
  image: Type.String({ minLength: 1, maxLength: 512, pattern: '^[^\\s]+$' }),
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
  containerPort: Type.Optional(Port),
  command: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { minItems: 1, maxItems: 256 })),
  // Checked again in container-config.ts, which names the exact problem.
  user: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  labels: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 4096 }), { maxProperties: 64 })),
  stopSignal: Type.Optional(Signal),
  stopTimeoutSeconds: Type.Optional(TimeoutSeconds),
  pull: Type.Optional(Type.Union([Type.Literal('missing'), Type.Literal('always')])),
};

const Layers = Type.Array(Type.Object({ id: Id, checksum: Sha256 }, { additionalProperties: false }), { maxItems: 64 });

export const CreateInstanceBody = Type.Object(
  // `start: false` (import before the first start) leaves the container created, not running.
  { ...containerFields, layers: Layers, start: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export type CreateInstanceBody = Static<typeof CreateInstanceBody>;

export const StopBody = Type.Object(
  {
    timeoutSeconds: Type.Optional(TimeoutSeconds),
    signal: Type.Optional(Signal),
    rcon: Type.Optional(
      Type.Object({ ...RconTarget, command: Type.Optional(Type.String({ minLength: 1, maxLength: 1446 })) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);
export type StopBody = Static<typeof StopBody>;

export const RconBody = Type.Object(
  { ...RconTarget, command: Type.String({ minLength: 1, maxLength: 1446 }) },
  { additionalProperties: false },
);
export type RconBody = Static<typeof RconBody>;

export const ReplaceBody = Type.Object(
  {
    ...containerFields,
    layers: Type.Optional(Layers),
    start: Type.Boolean(),
    stop: Type.Optional(StopBody),
    preferredHostPort: Type.Optional(Port),
  },
  { additionalProperties: false },
);
export type ReplaceBody = Static<typeof ReplaceBody>;

const deleteFields = {
  keepData: Type.Optional(Type.Boolean()),
  paths: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { minItems: 1, maxItems: 256 })),
};
export const DeleteBody = Type.Object(deleteFields, { additionalProperties: false });
export type DeleteBody = Static<typeof DeleteBody>;
export const DeleteQuery = Type.Object(deleteFields, { additionalProperties: false });
export type DeleteQuery = Static<typeof DeleteQuery>;

export const LogsQuery = Type.Object(
  {
    tail: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    /** `start`: only output since the container's current start (earlier runs are left out). */
    since: Type.Optional(Type.Literal('start')),
  },
  { additionalProperties: false },
);
export type LogsQuery = Static<typeof LogsQuery>;

export const CleanupBody = Type.Object(
  {
    instanceIds: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 1000 }),
    /** Orphans whose runtime directory stays (persistent groups). */
    keepDataFor: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 1000 })),
  },
  { additionalProperties: false },
);
export type CleanupBody = Static<typeof CleanupBody>;

export const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });
export type InstanceParams = Static<typeof InstanceParams>;
