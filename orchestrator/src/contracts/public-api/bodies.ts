// Request bodies of the public API that clients (ectl, the panel) send: one
// definition, validated by the route and typed in the clients.

import { Type, type Static } from '@sinclair/typebox';
import { EnvName, IdString, VersionString } from './common.js';

const MaintenanceFields = { enabled: Type.Boolean(), message: Type.Optional(Type.String({ maxLength: 500 })) };
/** Host, instance and global maintenance. */
export const MaintenanceBody = Type.Object(MaintenanceFields, { additionalProperties: false });
export type MaintenanceBody = Static<typeof MaintenanceBody>;

export const CreateInstanceBody = Type.Object(
  {
    groupId: IdString,
    variantId: IdString,
    name: Type.Optional(IdString),
    start: Type.Optional(Type.Boolean({ description: 'start the container once created (default true)' })),
    user: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description: 'container user: {mode: endercloud} (default), {mode: custom, uid, gid} or {mode: image}; never editable',
        },
      ),
    ),
    import: Type.Optional(
      Type.Object(
        {
          uploadId: Type.String({ minLength: 1, maxLength: 64 }),
          destination: Type.Optional(
            Type.String({ minLength: 1, maxLength: 1024, description: 'relative directory inside the instance (default ".", its root)' }),
          ),
        },
        { additionalProperties: false, description: 'existing data from PUT /imports, put in before the first start' },
      ),
    ),
    settings: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 128 }), Type.Unknown(), {
        maxProperties: 256,
        description: "values of the template's variables, checked before anything is written",
      }),
    ),
    secrets: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 128 }), Type.String({ maxLength: 4096 }), {
        maxProperties: 64,
        description: 'values of secret variables: never shown again, never logged or kept in history',
      }),
    ),
    image: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: 'one of the template\'s image choices (images), by label ("Java 17") or image; default the template\'s image',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateInstanceBody = Static<typeof CreateInstanceBody>;

export const SettingsBody = Type.Object(
  {
    // Values are checked against the template variable's type (a coercing union would turn 50 into "50").
    settings: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 128 }), Type.Unknown(), { maxProperties: 256 })),
    image: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    labels: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.Union([Type.String({ maxLength: 4096 }), Type.Null()]), {
        maxProperties: 64,
      }),
    ),
    mode: Type.Optional(Type.Union([Type.Literal('immediate'), Type.Literal('next_start')])),
    applyNow: Type.Optional(Type.Boolean({ description: 'apply every pending change now through one replacement' })),
    user: Type.Optional(Type.Unknown({ description: 'refused: the container user is chosen at creation' })),
  },
  { additionalProperties: false },
);
export type SettingsBody = Static<typeof SettingsBody>;

export const DeleteInstanceBody = Type.Object(
  {
    scopes: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { minItems: 1, maxItems: 4 })),
    confirm: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
);
export type DeleteInstanceBody = Static<typeof DeleteInstanceBody>;

/** A manual stop may archive player data first; it must then say what happens if that fails. */
export const StopBody = Type.Object(
  {
    backup: Type.Optional(Type.Boolean({ description: 'archive player data as part of the stop (template backup rules)' })),
    failurePolicy: Type.Optional(
      Type.Union([Type.Literal('abort_stop'), Type.Literal('stop_without_backup'), Type.Literal('force_stop_after_timeout')], {
        description: 'required with backup: what the stop does when the backup fails',
      }),
    ),
  },
  { additionalProperties: false },
);
export type StopBody = Static<typeof StopBody>;

export const ConsoleBody = Type.Object(
  { command: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[^\\r\\n]*$' }) },
  { additionalProperties: false },
);
export type ConsoleBody = Static<typeof ConsoleBody>;

export const ImportEggBody = Type.Object(
  {
    egg: Type.Unknown({
      description:
        'the egg (PTDL_v1, PTDL_v2, PLCN_v1, PLCN_v2 or PLCN_v3) as a JSON value, as exported by the panel (a YAML export parsed into the same value)',
    }),
    name: IdString,
    version: VersionString,
    image: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: 'key (label) of docker_images, or any image reference; default the first of docker_images',
      }),
    ),
    dryRun: Type.Optional(Type.Boolean()),
    memoryMb: Type.Optional(Type.Integer({ minimum: 16, maximum: 1024 * 1024 })),
    installTimeoutMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 7_200_000 })),
    rcon: Type.Optional(
      Type.Object(
        { port: Type.Integer({ minimum: 1, maximum: 65535 }), passwordVariable: EnvName },
        { additionalProperties: false, description: "the server's RCON: the stop command goes over RCON instead of stdin" },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ImportEggBody = Static<typeof ImportEggBody>;

export const TokenBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' }),
    scopes: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 32 }),
  },
  { additionalProperties: false },
);
export type TokenBody = Static<typeof TokenBody>;

/** `POST /hosts/join-tokens`: a one-time join token for agent enrolment (docs/agent.md "Enrolment"). */
export const JoinTokenBody = Type.Object(
  {
    agentId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-z0-9][a-z0-9-]*$', description: 'the only agent id it may enrol' }),
    ),
    ttl: Type.Optional(
      Type.Union(
        [Type.Integer({ minimum: 1, description: 'seconds' }), Type.String({ pattern: '^\\d+(ms|s|m|h|d)$', description: 'e.g. 1h' })],
        {
          description: 'how long it stays usable: default 1h, at most 7d',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type JoinTokenBody = Static<typeof JoinTokenBody>;

export const LoginBody = Type.Object({ token: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false });
export type LoginBody = Static<typeof LoginBody>;

/** One task of a schedule (issue 24, Pelican's model): `payload` is the command line, the power action, or a backup's note. */
export const ScheduleTaskBody = Type.Object(
  {
    action: Type.Union([Type.Literal('command'), Type.Literal('power'), Type.Literal('backup')]),
    payload: Type.String({
      maxLength: 1024,
      description: 'command: the console line; power: start|stop|restart|kill; backup: an optional note',
    }),
    offsetSeconds: Type.Integer({
      minimum: 0,
      maximum: 900,
      description: 'wait this long after the previous task (or the run start) before this one',
    }),
    continueOnFailure: Type.Boolean({ description: 'a failure of this task does not stop the chain' }),
  },
  { additionalProperties: false },
);
export type ScheduleTaskBody = Static<typeof ScheduleTaskBody>;

/** POST /instances/:id/schedules and PUT /instances/:id/schedules/:scheduleId. */
export const ScheduleInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    cron: Type.String({ minLength: 1, maxLength: 200, description: '5 fields, UTC' }),
    enabled: Type.Boolean(),
    onlyWhenOnline: Type.Boolean({ description: 'skip the run (lastResult skipped) when the instance is not online' }),
    tasks: Type.Array(ScheduleTaskBody, { minItems: 1, maxItems: 10 }),
  },
  { additionalProperties: false },
);
export type ScheduleInput = Static<typeof ScheduleInput>;

// ---------------------------------------------------------------- backups, restore, update

/** POST /instances/:id/backups (and the older /backup). */
export const BackupBody = Type.Object(
  {
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    /** The explicit choice to stop a running server whose backup cannot be taken online. */
    stop: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type BackupBody = Static<typeof BackupBody>;

/** POST /instances/:id/restore: a kept backup (`backupId`) or an uploaded archive (`uploadId`), with the typed name. */
export const RestoreBody = Type.Object(
  {
    backupId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' })),
    /** An archive uploaded with PUT /imports (so it passed the import checks) instead of a backup id. */
    uploadId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    confirm: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
);
export type RestoreBody = Static<typeof RestoreBody>;

/** An image reference, or the label of one of the template's image choices (`Java 17`). */
export const ImageRef = Type.String({
  minLength: 1,
  maxLength: 512,
  description: "an image reference, or the label of one of the template's image choices (images)",
});

/** POST /instances/:id/update. */
export const UpdateBody = Type.Object(
  {
    image: ImageRef,
    confirm: Type.Optional(Type.Boolean({ description: 'must be true: the plan was read and accepted' })),
    backup: Type.Optional(Type.Boolean({ description: 'take a safety backup before the stop (default false)' })),
  },
  { additionalProperties: false },
);
export type UpdateBody = Static<typeof UpdateBody>;

// ---------------------------------------------------------------- fleets and sleep

/** A duration: an integer of milliseconds, or text like "30s". */
const Duration = Type.Union([Type.Integer({ minimum: 0, maximum: 3_600_000 }), Type.String({ minLength: 2, maxLength: 16 })]);

/** POST /groups/:id/spawn. */
export const SpawnBody = Type.Object(
  {
    variantId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    wait: Type.Optional(Duration),
  },
  { additionalProperties: false },
);
export type SpawnBody = Static<typeof SpawnBody>;

/** POST /instances/:id/despawn. */
export const DespawnBody = Type.Object(
  {
    timeout: Type.Optional(Duration),
    force: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type DespawnBody = Static<typeof DespawnBody>;

/** POST /groups/:id/allocations. */
export const AllocationBody = Type.Object(
  {
    variantId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    labels: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 4096 }), { maxProperties: 32 }),
    ),
    players: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 1000 })),
    wait: Type.Optional(Duration),
  },
  { additionalProperties: false },
);
export type AllocationBody = Static<typeof AllocationBody>;

/**
 * PUT /instances/:id/idle-tiers, /groups/:id/idle-tiers and /system/idle-tiers. `nullable`
 * rather than a union with null: one tier must never be coerced into the null branch. The
 * tiers are parsed by the scaling rules (provisioning/scaling-policy.ts), which name a bad one.
 */
export const IdleTiersBody = Type.Object(
  {
    idleTiers: Type.Unsafe<unknown[] | null>({
      ...Type.Array(Type.Unknown(), { maxItems: 8 }),
      nullable: true,
      description: 'the tiers ([] = never sleep), or null = follow the next level',
    }),
  },
  { additionalProperties: false },
);
export type IdleTiersBody = Static<typeof IdleTiersBody>;
