// The records the public API answers with (src/server/views.ts builds them):
// hosts, instances, commands, tokens, templates, groups, layers, history,
// revisions, audit entries, transfers, imports and installation requests.

import { Type, type Static } from '@sinclair/typebox';
import { AnyJson, Iso, Maintenance, Nullable, NullableInteger, NullableIso, NullableString, Open, OpenObject } from './common.js';

// ---------------------------------------------------------------- hosts

export const HostView = Type.Object({
  id: Type.String(),
  status: Type.String({ description: 'ONLINE, RECOVERING, OFFLINE or MAINTENANCE' }),
  statusReason: NullableString,
  statusChangedAt: Iso,
  controlUrl: Type.String(),
  gameAddress: Type.String(),
  resources: Open({ memoryMb: Type.Number(), cpus: Type.Number(), diskBytes: Type.Optional(Type.Number()) }),
  memoryReservedMb: Type.Number(),
  portRange: Type.Object({ first: Type.Integer(), last: Type.Integer() }),
  version: Type.String(),
  heartbeatIntervalMs: Type.Number(),
  maintenance: Nullable(Maintenance),
  firstSeenAt: Iso,
  lastHeartbeatAt: Iso,
  instances: Type.Object({ total: Type.Integer() }),
  credential: Type.Object({
    mode: Type.String({ description: 'enrolled (its own credential), revoked, or shared (the legacy shared agent token)' }),
    generation: NullableInteger,
    enrolledAt: NullableIso,
    revokedAt: NullableIso,
  }),
});
export type HostView = Static<typeof HostView>;

export const JoinTokenView = Type.Object({
  id: Type.String(),
  agentId: NullableString,
  state: Type.String({ description: 'active, used, expired or revoked' }),
  createdBy: Type.String(),
  createdAt: Iso,
  expiresAt: Iso,
  usedAt: NullableIso,
  usedBy: NullableString,
  revokedAt: NullableIso,
});
export type JoinTokenView = Static<typeof JoinTokenView>;

// ---------------------------------------------------------------- instances

const PendingChangeView = Type.Object({
  key: Type.String(),
  value: Type.Optional(AnyJson),
  hidden: Type.Optional(Type.Boolean({ description: 'a hidden variable: its value is not shown to this reader' })),
  mode: Type.String({ description: 'restart_required or next_start' }),
  requestedAt: Iso,
  secret: Type.Optional(Type.Boolean()),
});

export const InstanceView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  groupId: Type.String(),
  variantId: Type.String(),
  hostId: NullableString,
  sessionId: NullableString,
  state: Type.String({ description: 'the lifecycle state (docs/lifecycle.md)' }),
  stateReason: NullableString,
  desiredState: Type.String(),
  observed: Nullable(
    Open(
      {
        container: Type.String(),
        exitCode: Type.Optional(Type.Integer()),
        oomKilled: Type.Optional(Type.Boolean()),
        startedAt: Type.Optional(Type.Number()),
        finishedAt: Type.Optional(Type.Number()),
        observedAt: Type.Number(),
      },
      'the last Docker state seen (epoch ms)',
    ),
  ),
  endpoint: Nullable(Type.Object({ host: Type.String(), port: Type.Integer() })),
  memoryMb: Type.Number(),
  memoryReserved: Type.Boolean(),
  observedState: NullableString,
  players: Nullable(Type.Object({ online: Type.Integer(), max: Type.Integer(), at: Iso })),
  pendingChanges: Type.Array(PendingChangeView),
  containerConfigPending: Type.Boolean(),
  crashLoop: Type.Object({
    count: Type.Integer(),
    windowMs: Type.Number(),
    maxExits: Type.Optional(Type.Integer()),
    tripped: Type.Boolean(),
    trippedAt: NullableIso,
  }),
  maintenance: Nullable(Maintenance),
  activeAction: Nullable(Type.Object({ kind: Type.String(), commandId: Type.String(), startedAt: Iso })),
  actions: Type.Optional(Type.Array(Type.String(), { description: 'the power actions the caller may run now' })),
  deletion: Nullable(
    Open({
      scopes: Type.Array(Type.String()),
      completed: Type.Array(Type.String()),
      requestedAt: Type.Number(),
      lastError: NullableString,
    }),
  ),
  image: Type.String(),
  labels: Type.Record(Type.String(), Type.String()),
  user: Open({ mode: Type.String(), uid: Type.Optional(Type.Integer()), gid: Type.Optional(Type.Integer()) }),
  revision: Type.Integer(),
  settings: OpenObject,
  hiddenSettings: Type.Optional(Type.Array(Type.String())),
  secretSettings: Type.Array(Type.String({ description: 'names of the secret settings that are set (never their values)' })),
  createdAt: Iso,
  updatedAt: Iso,
  stateChangedAt: Iso,
});
export type InstanceView = Static<typeof InstanceView>;

export const HistoryEntryView = Type.Object({
  at: Iso,
  from: NullableString,
  to: Type.String(),
  reason: NullableString,
  actor: NullableString,
  commandId: NullableString,
  details: Nullable(OpenObject),
});
export type HistoryEntryView = Static<typeof HistoryEntryView>;

export const RevisionView = Type.Object({
  revision: Type.Integer(),
  createdAt: Iso,
  actor: NullableString,
  reason: NullableString,
  config: OpenObject,
});
export type RevisionView = Static<typeof RevisionView>;

// ---------------------------------------------------------------- commands, tokens, audit

export const CommandView = Type.Object({
  id: Type.String(),
  kind: Type.String(),
  instanceId: NullableString,
  hostId: NullableString,
  status: Type.String(),
  attempts: Type.Integer(),
  maxAttempts: Type.Integer(),
  nextAttemptAt: Iso,
  lastError: NullableString,
  result: Nullable(OpenObject),
  requestId: NullableString,
  createdAt: Iso,
  updatedAt: Iso,
  completedAt: NullableIso,
});
export type CommandView = Static<typeof CommandView>;

export const TokenView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  createdAt: Iso,
  lastUsedAt: NullableIso,
  revokedAt: NullableIso,
});
export type TokenView = Static<typeof TokenView>;

export const AuditEntryView = Type.Object({
  id: Type.Integer(),
  at: Iso,
  actor: Type.String(),
  action: Type.String(),
  targetKind: Type.String(),
  targetId: NullableString,
  params: Nullable(OpenObject),
  result: Type.String(),
  errorCode: NullableString,
  requestId: NullableString,
});
export type AuditEntryView = Static<typeof AuditEntryView>;

// ---------------------------------------------------------------- catalog

const LayerRefView = Type.Object({ id: Type.String(), checksum: Type.String() });

/** A template version: its name, version and hash, and its spec (contracts/catalog.ts TemplateBody, normalised). */
export const TemplateView = Open(
  {
    name: Type.String(),
    version: Type.String(),
    specHash: Type.String(),
    createdAt: Iso,
    image: Type.String(),
    resources: Open({ memoryMb: Type.Number(), cpus: Type.Optional(Type.Number()) }),
    readiness: Type.Optional(Open({ kind: Type.Optional(Type.String()) })),
    layers: Type.Optional(Type.Array(LayerRefView)),
  },
  'the spec fields of the template follow (TemplateBody)',
);
export type TemplateView = Static<typeof TemplateView>;

const VariantView = Open({
  id: Type.String(),
  template: Type.Object({ name: Type.String(), version: Type.String() }),
  extraLayers: Type.Optional(Type.Array(LayerRefView)),
  resources: Type.Optional(Open({ memoryMb: Type.Number(), cpus: Type.Optional(Type.Number()) })),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
});

/** The scaling policy of a fleet group (provisioning/scaling-policy.ts). */
const ScalingView = Open({
  minInstances: Type.Integer(),
  maxInstances: Type.Optional(Type.Integer()),
  buffer: AnyJson,
  savegame: AnyJson,
});
const IdleTierView = Open({ after: Type.String(), afterMs: Type.Optional(Type.Number()), action: Type.String() });

export const GroupView = Type.Object({
  id: Type.String(),
  kind: Type.String(),
  placement: Type.String(),
  caps: Open({ maxInstances: Type.Optional(Type.Integer()) }),
  variants: Type.Array(VariantView),
  scaling: Nullable(ScalingView),
  idleTiers: Nullable(Type.Array(IdleTierView)),
  backup: Type.Optional(OpenObject),
  createdAt: Iso,
  updatedAt: Iso,
});
export type GroupView = Static<typeof GroupView>;

export const LayerView = Type.Object({ id: Type.String(), checksum: Type.String(), sizeBytes: Type.Integer(), createdAt: Iso });
export type LayerView = Static<typeof LayerView>;

// ---------------------------------------------------------------- transfers, imports, requests

export const TransferView = Type.Object({
  id: Type.String(),
  player: Type.String(),
  uuid: NullableString,
  target: Type.Record(Type.String(), Type.String(), { description: '{instance|group|session: id}' }),
  status: Type.String(),
  resolvedInstanceId: NullableString,
  createdAt: Iso,
  expiresAt: Iso,
  consumedAt: NullableIso,
});
export type TransferView = Static<typeof TransferView>;

export const ImportView = Type.Object({
  uploadId: Type.String(),
  entries: Type.Integer(),
  sizeBytes: Type.Integer(),
  detected: Type.Object({ world: Type.Boolean(), levelFile: NullableString, serverProperties: Type.Boolean() }),
  confidence: Type.String({ description: 'high, medium or low' }),
  notes: Type.Array(Type.String()),
});
export type ImportView = Static<typeof ImportView>;

/** A stored installation request; its times are epoch milliseconds (as stored). */
export const InstallationRequestView = Type.Object({
  id: Type.String(),
  requestedBy: Type.String(),
  groupId: Type.String(),
  variantId: Type.String(),
  name: NullableString,
  suggested: Open({ settings: Type.Optional(OpenObject), note: Type.Optional(Type.String()) }),
  status: Type.String({ description: 'pending, approved or rejected' }),
  decidedBy: NullableString,
  decisionNote: NullableString,
  instanceId: NullableString,
  createdAt: Type.Number({ description: 'epoch ms' }),
  decidedAt: NullableInteger,
});
export type InstallationRequestView = Static<typeof InstallationRequestView>;
