// Mapping between Instance and its row: one table of field codecs, so create,
// patch and read cannot drift apart.

import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Instance } from '../../domain/index.js';
import type { InstancesTable } from '../schema.js';

type Codec = { column: keyof InstancesTable; kind: 'plain' | 'json' | 'jsonOrNull' | 'bool' | 'time' };

const FIELDS: Record<keyof Instance, Codec> = {
  id: { column: 'id', kind: 'plain' },
  name: { column: 'name', kind: 'plain' },
  groupId: { column: 'group_id', kind: 'plain' },
  variantId: { column: 'variant_id', kind: 'plain' },
  hostId: { column: 'host_id', kind: 'plain' },
  sessionId: { column: 'session_id', kind: 'plain' },
  state: { column: 'state', kind: 'plain' },
  stateReason: { column: 'state_reason', kind: 'plain' },
  stateChangedAt: { column: 'state_changed_at', kind: 'time' },
  desiredState: { column: 'desired_state', kind: 'plain' },
  observed: { column: 'observed', kind: 'jsonOrNull' },
  endpoint: { column: 'endpoint', kind: 'jsonOrNull' },
  hostPort: { column: 'host_port', kind: 'plain' },
  memoryMb: { column: 'memory_mb', kind: 'plain' },
  memoryReserved: { column: 'memory_reserved', kind: 'bool' },
  settings: { column: 'settings', kind: 'json' },
  secretSettings: { column: 'secret_settings', kind: 'json' },
  pendingChanges: { column: 'pending_changes', kind: 'json' },
  containerConfig: { column: 'container_config', kind: 'json' },
  containerConfigPending: { column: 'container_config_pending', kind: 'bool' },
  revision: { column: 'revision', kind: 'plain' },
  user: { column: 'user_spec', kind: 'json' },
  crashLoop: { column: 'crash_loop', kind: 'json' },
  maintenance: { column: 'maintenance', kind: 'jsonOrNull' },
  activeAction: { column: 'active_action', kind: 'jsonOrNull' },
  players: { column: 'players', kind: 'jsonOrNull' },
  deletion: { column: 'deletion', kind: 'jsonOrNull' },
  bridgeTokenHash: { column: 'bridge_token_hash', kind: 'plain' },
  fleet: { column: 'fleet', kind: 'jsonOrNull' },
  version: { column: 'version', kind: 'plain' },
  createdAt: { column: 'created_at', kind: 'time' },
  updatedAt: { column: 'updated_at', kind: 'time' },
};

function encode(kind: Codec['kind'], value: unknown): unknown {
  switch (kind) {
    case 'json':
      return JSON.stringify(value);
    case 'jsonOrNull':
      return value === null || value === undefined ? null : JSON.stringify(value);
    case 'bool':
      return value ? 1 : 0;
    default:
      return value === undefined ? null : value;
  }
}

function decode(kind: Codec['kind'], value: unknown): unknown {
  switch (kind) {
    case 'json':
      return JSON.parse(value as string);
    case 'jsonOrNull':
      return value === null ? null : JSON.parse(value as string);
    case 'bool':
      return Number(value) !== 0;
    case 'time':
      return Number(value);
    default:
      return value;
  }
}

/** Some fields of an instance: their columns (for a statement that names them) and the decoder of such a row. */
export interface InstanceFields<K extends keyof Instance> {
  columns: readonly string[];
  decode(row: Partial<Selectable<InstancesTable>>): Pick<Instance, K>;
}

/** The codecs of `fields` as a list, built once (a decoder runs for every row read). */
export function instanceFields<K extends keyof Instance>(fields: readonly K[]): InstanceFields<K> {
  const list = fields.map((field) => ({ field, ...FIELDS[field] }));
  return {
    columns: list.map((f) => f.column),
    decode(row) {
      const out: Record<string, unknown> = {};
      for (const f of list) out[f.field] = decode(f.kind, row[f.column]);
      return out as Pick<Instance, K>;
    },
  };
}

const ALL_FIELDS = instanceFields(Object.keys(FIELDS) as Array<keyof Instance>);

export function toInstance(row: Selectable<InstancesTable>): Instance {
  return ALL_FIELDS.decode(row);
}

/** Encodes the fields present in `patch` (undefined members are skipped). */
export function toRowPatch(patch: Partial<Instance>): Updateable<InstancesTable> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(patch)) {
    const codec = FIELDS[field as keyof Instance];
    if (codec && value !== undefined) out[codec.column] = encode(codec.kind, value);
  }
  return out as Updateable<InstancesTable>;
}

export function toRow(instance: Instance): Insertable<InstancesTable> {
  return toRowPatch(instance) as Insertable<InstancesTable>;
}
