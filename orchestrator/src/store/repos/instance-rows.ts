// Mapping between Instance and its row: one table of field codecs, so create,
// patch and read cannot drift apart. The one secret column (secret_settings)
// is sealed here on every write and opened on every read (store/secret-codec.ts).

import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Instance } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import type { InstancesTable } from '../schema.js';
import { isPlaintextJson, secretContext, type SecretSlot } from '../secret-codec.js';

type Codec = { column: keyof InstancesTable; kind: 'plain' | 'json' | 'jsonOrNull' | 'bool' | 'time' | 'secretJson' };

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
  secretSettings: { column: 'secret_settings', kind: 'secretJson' },
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

/** What a secret column is bound to (a sealed value copied to another instance does not open there). */
export function secretSettingsContext(id: string): string {
  return secretContext('instances', id, 'secretSettings');
}

/** Refuses a write to instance `id` before anything is written when no key is installed (its answer could not be opened). */
export function requireSecretCodec(id: string, secrets: SecretSlot): void {
  if (!secrets.codec) throw noCodec(id);
}

function noCodec(id: string): AppError {
  return new AppError(
    'INTERNAL',
    `the secret settings of instance ${id} cannot be sealed or opened: this store has no secret key installed (useSecretCodec)`,
  );
}

/** The JSON of a secret column sealed under the installed key; never written in plaintext. */
export function sealSecretJson(value: unknown, id: string, secrets: SecretSlot): string {
  if (!secrets.codec) throw noCodec(id);
  return secrets.codec.seal(JSON.stringify(value), secretSettingsContext(id));
}

/** A secret column's value: opened under the installed key, or plain JSON from a database written before encryption. */
export function openSecretJson(stored: string, id: string, secrets: SecretSlot): unknown {
  if (isPlaintextJson(stored)) return JSON.parse(stored);
  if (!secrets.codec) throw noCodec(id);
  return JSON.parse(secrets.codec.open(stored, secretSettingsContext(id)));
}

/** Where a row's secret column is bound: its id, and the key slot. */
interface RowSecrets {
  id: string;
  secrets: SecretSlot;
}

function encode(kind: Codec['kind'], value: unknown, row: RowSecrets | undefined): unknown {
  switch (kind) {
    case 'secretJson':
      if (!row) throw new AppError('INTERNAL', 'a secret column was encoded without its row');
      return sealSecretJson(value, row.id, row.secrets);
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

function decode(kind: Codec['kind'], value: unknown, row: RowSecrets | undefined): unknown {
  switch (kind) {
    case 'secretJson':
      if (!row) throw new AppError('INTERNAL', 'a secret column was decoded without its row');
      return openSecretJson(value as string, row.id, row.secrets);
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
  /** `secrets`: the store's key slot, needed only when the fields include secretSettings (and the row its id). */
  decode(row: Partial<Selectable<InstancesTable>>, secrets?: SecretSlot): Pick<Instance, K>;
}

/** The codecs of `fields` as a list, built once (a decoder runs for every row read). */
export function instanceFields<K extends keyof Instance>(fields: readonly K[]): InstanceFields<K> {
  const list = fields.map((field) => ({ field, ...FIELDS[field] }));
  return {
    columns: list.map((f) => f.column),
    decode(row, secrets) {
      const out: Record<string, unknown> = {};
      const bound = secrets && typeof row.id === 'string' ? { id: row.id, secrets } : undefined;
      for (const f of list) out[f.field] = decode(f.kind, row[f.column], bound);
      return out as Pick<Instance, K>;
    },
  };
}

const ALL_FIELDS = instanceFields(Object.keys(FIELDS) as Array<keyof Instance>);

export function toInstance(row: Selectable<InstancesTable>, secrets: SecretSlot): Instance {
  return ALL_FIELDS.decode(row, secrets);
}

/** Encodes the fields present in `patch` (undefined members are skipped) of instance `id`. */
export function toRowPatch(patch: Partial<Instance>, id: string, secrets: SecretSlot): Updateable<InstancesTable> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(patch)) {
    const codec = FIELDS[field as keyof Instance];
    if (codec && value !== undefined) out[codec.column] = encode(codec.kind, value, { id, secrets });
  }
  return out as Updateable<InstancesTable>;
}

export function toRow(instance: Instance, secrets: SecretSlot): Insertable<InstancesTable> {
  return toRowPatch(instance, instance.id, secrets) as Insertable<InstancesTable>;
}
