// The answers of the public API that are not plain records (views.ts): what an
// action, a delete, a fleet call or a router call answers.

import { Type, type Static } from '@sinclair/typebox';
import { Iso, Maintenance, Nullable, NullableInteger, NullableIso, NullableNumber, NullableString, Open, OpenObject } from './common.js';
import { ScheduleInput } from './bodies.js';
import { GroupView, HistoryEntryView, InstallationRequestView, InstanceView, RevisionView, TemplateView, TransferView } from './views.js';

// ---------------------------------------------------------------- system and panel

export const HealthAnswer = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String(),
  database: Type.String(),
  node: Type.String(),
  leader: Nullable(Type.Object({ node: Type.String(), epoch: Type.Integer(), self: Type.Boolean() })),
});
export type HealthAnswer = Static<typeof HealthAnswer>;
export const ReadyAnswer = Type.Object({ status: Type.Literal('ready'), database: Type.String(), latencyMs: Type.Number() });
export type ReadyAnswer = Static<typeof ReadyAnswer>;

/** GET /session: the principal, or `{authenticated: false}` without credentials. */
export const SignedIn = Type.Object({
  authenticated: Type.Literal(true),
  name: Type.String(),
  kind: Type.String(),
  scopes: Type.Array(Type.String()),
  via: Type.String({ description: 'bearer or session' }),
});
export type SignedIn = Static<typeof SignedIn>;
export const SessionAnswer = Type.Union([SignedIn, Type.Object({ authenticated: Type.Literal(false) })]);
export type SessionAnswer = Static<typeof SessionAnswer>;

export const MaintenanceAnswer = Maintenance;
export type MaintenanceAnswer = Static<typeof MaintenanceAnswer>;

// ---------------------------------------------------------------- hosts

export const HeartbeatAnswer = Type.Object({ hostId: Type.String(), status: Type.String() });
export const HostRemovedAnswer = Type.Object({
  hostId: Type.String(),
  status: Type.String(),
  forgottenInstances: Type.Array(Type.String()),
  deleted: Type.Literal(true),
});
export type HostRemovedAnswer = Static<typeof HostRemovedAnswer>;
export const UnclaimedView = Open(
  {
    instanceId: Type.String(),
    containerId: Type.String(),
    containerName: Type.String(),
    groupId: NullableString,
    variantId: NullableString,
    hostPort: NullableInteger,
    state: Type.String(),
    reason: Type.String(),
    firstSeenAt: Iso,
  },
  'a container the host runs that no instance claims (server/services/recovery-plan.ts UnclaimedContainer)',
);
export type UnclaimedView = Static<typeof UnclaimedView>;
export const UnclaimedAnswer = Type.Object({ hostId: Type.String(), unclaimed: Type.Array(UnclaimedView), lastRecoveryAt: NullableIso });
export const UnclaimedDeleted = Type.Object({
  hostId: Type.String(),
  instanceId: Type.String(),
  commandId: Type.String(),
  deleteData: Type.Boolean(),
});

const BackupEntry = Open({
  backupId: Type.String(),
  sizeBytes: Type.Integer(),
  createdAt: Type.String(),
  paths: Type.Optional(Type.Array(Type.String())),
});
export type BackupEntry = Static<typeof BackupEntry>;
export const KeptDataAnswer = Type.Object({
  keptData: Type.Array(
    Type.Object({ hostId: Type.String(), instanceId: Type.String(), data: Type.Boolean(), backups: Type.Array(BackupEntry) }),
  ),
  unreachable: Type.Array(Type.Object({ hostId: Type.String(), error: Type.String() })),
});
export type KeptDataAnswer = Static<typeof KeptDataAnswer>;
export const KeptDataPurged = Type.Object({
  hostId: Type.String(),
  instanceId: Type.String(),
  dataRemoved: Type.Boolean(),
  backupsRemoved: Type.Integer(),
});
export const KeptDataAttached = Type.Object({
  hostId: Type.String(),
  instanceId: Type.String(),
  from: Type.String(),
  replacedFresh: Type.Boolean(),
});

// ---------------------------------------------------------------- catalog

export const LayerUploaded = Type.Object({
  id: Type.String(),
  checksum: Type.String(),
  sizeBytes: Type.Integer(),
  created: Type.Boolean(),
});
export type LayerUploaded = Static<typeof LayerUploaded>;
export const TemplatePutAnswer = Type.Object(
  { ...TemplateView.properties, dryRun: Type.Optional(Type.Boolean()), created: Type.Optional(Type.Boolean()) },
  { additionalProperties: true },
);
export const GroupPutAnswer = Type.Object({
  ...GroupView.properties,
  created: Type.Boolean(),
  changed: Type.Boolean(),
  dryRun: Type.Optional(Type.Boolean()),
});
export type GroupPutAnswer = Static<typeof GroupPutAnswer>;
export const EggImportAnswer = Type.Object({
  dryRun: Type.Boolean(),
  outcome: Type.String({ description: 'create, unchanged, conflict or refused' }),
  created: Type.Optional(Type.Boolean()),
  preview: Type.Object(
    {
      format: NullableString,
      eggName: NullableString,
      mapped: Type.Array(Type.Object({ from: Type.String(), to: Type.String() })),
      untranslated: Type.Array(Open({ field: Type.String(), reason: Type.String() })),
      unknownFields: Type.Array(Type.String()),
      refused: Type.Optional(Type.String()),
    },
    { description: 'what the egg becomes (eggs/parse-egg.ts EggPreview)' },
  ),
  spec: Type.Optional(OpenObject),
  template: Type.Optional(TemplateView),
});
export type EggImportAnswer = Static<typeof EggImportAnswer>;

// ---------------------------------------------------------------- instances

export const InstanceCreated = Type.Object({
  id: Type.String(),
  name: Type.String(),
  state: Type.String(),
  hostId: NullableString,
  commandId: Type.String(),
});
export type InstanceCreated = Static<typeof InstanceCreated>;
/** An accepted (202) or no-op (200) instance action: the instance, its command and its state now. */
export const ActionAccepted = Type.Object({
  id: Type.String(),
  commandId: NullableString,
  state: Type.String(),
  noop: Type.Optional(Type.String()),
});
export type ActionAccepted = Static<typeof ActionAccepted>;
/**
 * POST /instances/:id/kill. 200 `ended`: the container was SIGKILLed at once and `commandId` is the
 * action in progress it ended (that command records the outcome); 202: a stop command that kills
 * instead of asking the server to stop; 200 `noop`: nothing runs.
 */
export const KillAccepted = Type.Object({
  ...ActionAccepted.properties,
  ended: Type.Optional(Type.Boolean()),
  killed: Type.Optional(Type.Boolean()),
});
export type KillAccepted = Static<typeof KillAccepted>;
export const RestoreAccepted = Type.Object({ ...ActionAccepted.properties, backupId: Type.String() });
export const DeleteAccepted = Type.Object({
  id: Type.String(),
  commandId: NullableString,
  scopes: Type.Array(Type.String()),
  retained: Type.Array(Type.String()),
  state: Type.String(),
});
export type DeleteAccepted = Static<typeof DeleteAccepted>;
export const SettingsAnswer = Type.Object({
  id: Type.String(),
  applied: Type.Array(Type.String()),
  commandId: NullableString,
  pendingChanges: InstanceView.properties.pendingChanges,
  containerConfigPending: Type.Boolean(),
});
export type SettingsAnswer = Static<typeof SettingsAnswer>;
export const ConsoleAnswer = Type.Object({ via: Type.String({ description: 'rcon or stdin' }), response: NullableString });
export type ConsoleAnswer = Static<typeof ConsoleAnswer>;
export const EventAccepted = Type.Object({ accepted: Type.Literal(true) });
export const HistoryAnswer = Type.Object({ instanceId: Type.String(), history: Type.Array(HistoryEntryView) });
export const RevisionsAnswer = Type.Object({ instanceId: Type.String(), revisions: Type.Array(RevisionView) });
export const PlayersAnswer = Type.Object({
  instanceId: Type.String(),
  online: Type.Integer(),
  routerReported: Type.Integer(),
  probe: Nullable(Type.Object({ online: Type.Integer(), max: NullableInteger, at: Iso })),
  players: Type.Array(Type.Object({ name: Type.String(), uuid: NullableString, routerId: Type.String(), connectedAt: Iso })),
});
export type PlayersAnswer = Static<typeof PlayersAnswer>;
/** One backup of an instance: where it is kept (the orchestrator's backup store and/or its host; null: the host was not asked). */
const BackupListing = Type.Object(
  {
    ...BackupEntry.properties,
    sha256: Type.String(),
    stored: Type.Boolean(),
    onHost: Type.Union([Type.Boolean(), Type.Null()]),
    trigger: NullableString,
    originHost: NullableString,
  },
  { additionalProperties: true },
);
export const BackupsAnswer = Type.Object({
  id: Type.String(),
  backups: Type.Array(BackupListing),
  hostError: Type.Optional(Type.String()),
});
export type BackupsAnswer = Static<typeof BackupsAnswer>;
export const BackupPolicyAnswer = Type.Object({
  id: Type.String(),
  own: Nullable(OpenObject),
  effective: Nullable(OpenObject),
  source: NullableString,
  nextRunAt: NullableIso,
});
export type BackupPolicyAnswer = Static<typeof BackupPolicyAnswer>;
const ImageView = Open({ ref: Type.String(), id: Type.Optional(Type.String()) });
/** GET /instances/:id/update-plan (computed by server/services/update-service.ts evaluateUpdate). */
export const UpdatePlanAnswer = Type.Object({
  instanceId: Type.String(),
  name: Type.String(),
  state: Type.String(),
  current: ImageView,
  candidate: ImageView,
  sameImage: Type.Boolean(),
  compatible: Type.Boolean(),
  checks: Type.Array(Type.Object({ name: Type.String(), ok: Type.Boolean(), detail: Type.String() })),
  changes: Type.Array(Type.String()),
  warnings: Type.Array(Type.String()),
  diskFreeBytes: NullableNumber,
  automaticUpdates: Type.Literal('off', { description: 'updates start only from POST /instances/:id/update' }),
});
export type UpdatePlanAnswer = Static<typeof UpdatePlanAnswer>;
export const UpdateAccepted = Type.Object({ ...ActionAccepted.properties, plan: UpdatePlanAnswer });
/** POST /instances/preview: the resolved configuration, redacted env, placement and caps (server/services/instance-preview.ts). */
export const PreviewAnswer = OpenObject;
export type PreviewAnswer = Static<typeof PreviewAnswer>;

export const InstallationApproved = Type.Object({ request: InstallationRequestView, instance: InstanceCreated });
export const InstallationPreview = Type.Object({ request: InstallationRequestView, preview: PreviewAnswer });
export const InstallationDecided = Type.Object({ request: InstallationRequestView });

// ---------------------------------------------------------------- fleets and the router

const IdleTierView = Open({ after: Type.String(), afterMs: Type.Optional(Type.Number()), action: Type.String() });
export const FleetInstanceView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  state: Type.String(),
  class: Type.String(),
  hostId: NullableString,
  allocated: Type.Boolean(),
  sessionId: NullableString,
  playersOnline: Type.Integer(),
  maxPlayers: NullableInteger,
  draining: Type.Boolean(),
  emptySince: NullableIso,
  next: Nullable(Type.Object({ action: Type.String(), dueAt: Iso, inSeconds: Type.Integer(), tier: NullableString })),
  awakeBecause: NullableString,
  idleTiers: Type.String({ description: 'the tiers in force as text ("10m:pause,1h:stop", or off)' }),
  idleTiersFrom: Type.String(),
  idleTiersOverridden: Type.Boolean(),
});
export type FleetInstanceView = Static<typeof FleetInstanceView>;
export const FleetAnswer = Type.Object({
  groupId: Type.String(),
  kind: Type.String(),
  scaling: Nullable(OpenObject),
  idleTiers: Type.String(),
  idleTiersFrom: Type.String(),
  buffer: Type.Object({ target: Type.Integer(), ready: Type.Integer(), starting: Type.Integer() }),
  short: Nullable(Type.Object({ reason: Type.String(), since: Iso })),
  counts: Type.Record(Type.String(), Type.Integer()),
  instances: Type.Array(FleetInstanceView),
});
export type FleetAnswer = Static<typeof FleetAnswer>;
export const SpawnAnswer = Type.Object({ ...InstanceView.properties, commandId: NullableString });
export type SpawnAnswer = Static<typeof SpawnAnswer>;
export const AllocationAnswer = Type.Object({
  allocationId: Type.String(),
  sessionId: Type.String(),
  instanceId: Type.String(),
  groupId: Type.String(),
  endpoint: NullableString,
  allocatedAt: Iso,
});
export type AllocationAnswer = Static<typeof AllocationAnswer>;
export const AllocationsAnswer = Type.Object({
  groupId: Type.String(),
  allocations: Type.Array(
    Type.Object({
      allocationId: Type.String(),
      sessionId: Type.String(),
      instanceId: Type.String(),
      metadata: Nullable(OpenObject),
      allocatedAt: Iso,
    }),
  ),
});
export const AllocationReleased = Type.Object({
  allocationId: Type.String(),
  instanceId: Type.String(),
  status: Type.String(),
  releasedAt: NullableIso,
});
export type AllocationReleased = Static<typeof AllocationReleased>;
export const IdleTiersAnswer = Type.Object({ id: Type.String(), idleTiers: Nullable(Type.Array(IdleTierView)) });
export const SystemIdleTiersAnswer = Type.Object({
  tiers: Type.Array(IdleTierView),
  source: Type.String({ description: 'stored or configured' }),
});
export const GroupJoinAnswer = Type.Object({
  instanceId: Type.String(),
  action: Type.String({ description: 'route, wake, start or spawn' }),
  commandId: NullableString,
});
const MoveResult = Type.Object({ moved: Type.Boolean(), fromInstanceId: NullableString, reason: Type.Optional(Type.String()) });
export const RouterTransferAnswer = Type.Object({ transferId: Type.String(), move: MoveResult });
export const TransferCreated = Type.Object({ transfer: TransferView, move: MoveResult });
export type TransferCreated = Static<typeof TransferCreated>;
export const TransferClaim = Type.Object({ transferId: Type.String(), instanceId: Type.String(), address: NullableString });
export const EvacuateAnswer = Type.Object({
  instanceId: Type.String(),
  draining: Type.Literal(true),
  players: Type.Array(Type.Object({ player: Type.String(), transferId: NullableString, ...MoveResult.properties })),
});
export type EvacuateAnswer = Static<typeof EvacuateAnswer>;
export const RegistrySnapshot = Type.Object({
  revision: Type.Integer(),
  backends: Type.Array(
    Open(
      {
        instanceId: Type.String(),
        name: Type.String(),
        groupId: Type.String(),
        sessionId: NullableString,
        status: Type.String(),
        address: NullableString,
        players: Nullable(Type.Object({ online: Type.Integer(), max: Type.Integer() })),
        maintenance: Type.Boolean(),
        full: Type.Boolean(),
        acceptsTransfers: Type.Boolean(),
        expectedStartMs: NullableNumber,
      },
      'protocol/registry-contract.ts RegistryBackend',
    ),
  ),
});

// ---------------------------------------------------------------- instance schedules

export const ScheduleView = Type.Composite([
  ScheduleInput,
  Type.Object({
    id: Type.String(),
    instanceId: Type.String(),
    nextRunAt: NullableInteger,
    lastRunAt: NullableInteger,
    lastResult: Nullable(Type.Union([Type.Literal('ok'), Type.Literal('failed'), Type.Literal('skipped')])),
    lastError: NullableString,
    running: Type.Boolean(),
    createdAt: Type.Integer(),
    updatedAt: Type.Integer(),
  }),
]);
export type ScheduleView = Static<typeof ScheduleView>;
export const ScheduleList = Type.Object({ schedules: Type.Array(ScheduleView) });
export type ScheduleList = Static<typeof ScheduleList>;
export const ScheduleRunAccepted = Type.Object({ id: Type.String(), instanceId: Type.String(), accepted: Type.Literal(true) });
export type ScheduleRunAccepted = Static<typeof ScheduleRunAccepted>;

// ---------------------------------------------------------------- instance files and stats

/** The files API answers are the agent's (the orchestrator passes them through, docs/orchestrator.md "Files and SFTP"). */
export { FileDeleted, FileExtracted, FileList, FileWritten } from '../agent-api.js';
export const FileDirectoryMade = Type.Object({ path: Type.String() });
export const FileRenamed = Type.Object({ from: Type.String(), to: Type.String() });

/** GET /instances/:id/stats: the last 10 minutes of the console graphs, oldest first. */
export const StatsAnswer = Type.Object({
  intervalMs: Type.Integer(),
  samples: Type.Array(
    Type.Object({
      at: Type.Number(),
      cpuPercent: Type.Union([Type.Number(), Type.Null()], {
        description: 'share of one core since the previous sample; null for the first one',
      }),
      memoryBytes: Type.Number(),
      memoryLimitBytes: Type.Number(),
      networkRxBytes: Type.Number(),
      networkTxBytes: Type.Number(),
    }),
  ),
});
export type StatsAnswer = Static<typeof StatsAnswer>;
