// Shared TypeBox pieces of the orchestrator API schemas.

import { Type } from '@sinclair/typebox';

export const IdString = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });
export const AgentIdString = Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-z0-9][a-z0-9-]*$' });
export const VersionString = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.+-]*$' });
export const Sha256String = Type.String({ pattern: '^[0-9a-f]{64}$' });
export const EnvName = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' });
export const EnvMap = Type.Record(EnvName, Type.String({ maxLength: 32_768 }), { maxProperties: 512 });
export const LayerRefSchema = Type.Object({ id: IdString, checksum: Sha256String }, { additionalProperties: false });
export const ResourcesSchema = Type.Object(
  {
    memoryMb: Type.Integer({ minimum: 16, maximum: 1024 * 1024 }),
    cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1024 })),
  },
  { additionalProperties: false },
);

export const IdParams = Type.Object({ id: IdString });
