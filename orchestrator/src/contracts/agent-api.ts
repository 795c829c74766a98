// The agent ⇄ orchestrator contract (docs/agent.md, "HTTP API" and
// "Heartbeats"): TypeBox schemas of every agent request and answer and of the
// heartbeat, with their static types. The agent's routes validate with them;
// the orchestrator's AgentHostDriver and heartbeat route use the same types.
// Pure: no I/O. Ids are validated again where they are used, so a bad one
// names itself either way.

import { Type, type Static } from '@sinclair/typebox';
import { HOST_STATUSES } from '../domain/host.js';
import { MAX_CAP_ADD } from '../shared/capabilities.js';

/** Every agent path is below this prefix. */
export const AGENT_API_PREFIX = '/api/v1';

/** The reconciler lease's fencing epoch on every call of the active orchestrator; agents refuse older ones. */
export const LEADER_EPOCH_HEADER = 'x-leader-epoch';

/**
 * `POST /leader` (empty body): the reconciler leader announces its epoch (in the
 * header, like every mutating call) before its first call to a host, so the
 * agent refuses a deposed leader's late calls from then on. Answers the highest epoch seen.
 */
export const LEADER_ANNOUNCE_PATH = '/leader';
export interface LeaderAnswer {
  epoch: number;
}

// ------------------------------------------------------------------ pieces

const Id = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });
const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });
const Signal = Type.String({ maxLength: 16, pattern: '^SIG[A-Z][A-Z0-9]*(\\+[0-9]{1,2})?$' });
const Port = Type.Integer({ minimum: 1, maximum: 65535 });
const TimeoutSeconds = Type.Integer({ minimum: 0, maximum: 86_400 });
const RconTargetFields = { port: Port, password: Type.String({ minLength: 1, maxLength: 512 }) };
const RconCommand = Type.String({ minLength: 1, maxLength: 1446 });
const RelativePaths = Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { minItems: 1, maxItems: 256 });
const NullableInt = Type.Union([Type.Integer(), Type.Null()]);
const NullableString = Type.Union([Type.String(), Type.Null()]);
const StringMap = Type.Record(Type.String(), Type.String());

export const PullPolicy = Type.Union([Type.Literal('missing'), Type.Literal('always')]);
export type PullPolicy = Static<typeof PullPolicy>;

export const LayerRef = Type.Object({ id: Id, checksum: Sha256 }, { additionalProperties: false });
export type LayerRef = Static<typeof LayerRef>;
const Layers = Type.Array(LayerRef, { maxItems: 64 });

/** Container states as the agent reports them (Docker's words; `unknown` when the engine says something else). */
export const CONTAINER_STATES = ['created', 'running', 'paused', 'restarting', 'removing', 'exited', 'dead', 'unknown'] as const;
export const ContainerState = Type.Union(CONTAINER_STATES.map((s) => Type.Literal(s)));
export type ContainerState = (typeof CONTAINER_STATES)[number];

export const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });
export type InstanceParams = Static<typeof InstanceParams>;

// ------------------------------------------------------------------ create / replace

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
  /** Replaces the image's CMD. */
  command: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { minItems: 1, maxItems: 256 })),
  /** `uid` or `uid:gid`; omitted = the image's USER. Checked again in container-config.ts, which names the exact problem. */
  user: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  /** The caller's own labels; `orchestrator.*` keys are refused. */
  labels: Type.Optional(Type.Record(Type.String(), Type.String({ maxLength: 4096 }), { maxProperties: 64 })),
  stopSignal: Type.Optional(Signal),
  stopTimeoutSeconds: Type.Optional(TimeoutSeconds),
  pull: Type.Optional(PullPolicy),
  /**
   * `wings`: Pterodactyl's runtime layout (egg templates): the instance directory at
   * /home/container and the working directory there, the image's own entrypoint
   * and command (with `command` refused), `SERVER_IP` (the address game ports are
   * published on) and `TZ` (the agent's time zone) after the env, and
   * `{{server.build.default.ip}}` in config-file values filled with that address.
   * Omitted: the directory at /data, the image's working directory.
   */
  layout: Type.Optional(Type.Literal('wings')),
  /**
   * The template's opt-outs from the hardened defaults: capabilities added back (the container drops
   * all; Docker's names without `CAP_`, checked again in container-config.ts, which names an unknown
   * one) and `readOnlyRootfs: false` for an image that writes outside its data directory and /tmp.
   */
  security: Type.Optional(
    Type.Object(
      {
        capAdd: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: MAX_CAP_ADD })),
        readOnlyRootfs: Type.Optional(Type.Boolean()),
      },
      { additionalProperties: false },
    ),
  ),
  /** Create the container with an open stdin (egg templates: console commands and the stdin stop). */
  openStdin: Type.Optional(Type.Boolean()),
  /** Configuration edits the agent applies to files of the instance directory before each start (references already resolved). */
  configFiles: Type.Optional(
    Type.Array(
      Type.Object(
        {
          path: Type.String({ minLength: 1, maxLength: 1024 }),
          parser: Type.Union(['properties', 'yaml', 'json', 'ini', 'xml', 'toml', 'file'].map((p) => Type.Literal(p))),
          edits: Type.Array(
            Type.Object(
              {
                key: Type.String({ minLength: 1, maxLength: 512 }),
                value: Type.String({ maxLength: 4096 }),
                /** Value matching: only a value equal to this, or matching `regex:RE`, is replaced. */
                ifValue: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
              },
              { additionalProperties: false },
            ),
            { maxItems: 4096 },
          ),
        },
        { additionalProperties: false },
      ),
      { maxItems: 64 },
    ),
  ),
};

/** `PUT /instances/:id`. `start: false` (import before the first start) leaves the container created, not running. */
export const CreateInstanceBody = Type.Object(
  { ...containerFields, layers: Layers, start: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export type CreateInstanceBody = Static<typeof CreateInstanceBody>;

/** `POST /instances/:id/stop` (also the `stop` of a replace). */
export const StopBody = Type.Object(
  {
    /** Wait after the graceful request before SIGKILL; default: the container's StopTimeout, else AGENT_STOP_TIMEOUT. */
    timeoutSeconds: Type.Optional(TimeoutSeconds),
    /** Signal for the signal path; default: the container's stop signal, else SIGTERM. */
    signal: Type.Optional(Signal),
    /** When given, the command (default `stop`) is sent over RCON first; failure falls back to the signal. */
    rcon: Type.Optional(Type.Object({ ...RconTargetFields, command: Type.Optional(RconCommand) }, { additionalProperties: false })),
    /** When given (and no RCON), this console command is written to the container's stdin instead of the signal. */
    stdin: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  },
  { additionalProperties: false },
);
export type StopBody = Static<typeof StopBody>;

/** `POST /instances/:id/replace`: new container, same runtime directory and (when free) host port. */
export const ReplaceBody = Type.Object(
  {
    ...containerFields,
    // No `layers`: a replace keeps the runtime directory and never re-materializes (a body naming them is refused).
    /** Start the new container; false leaves it created (a stopped instance stays stopped). */
    start: Type.Boolean(),
    /** How the old container is stopped. */
    stop: Type.Optional(StopBody),
    /** Host port to try when the old container is already gone (a retried replace). */
    preferredHostPort: Type.Optional(Port),
    /**
     * The old container's host port is held outside the runtime (its start
     * answered HOST_PORT_TAKEN): re-create it on another port of the range,
     * even when nothing else changed.
     */
    newHostPort: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ReplaceBody = Static<typeof ReplaceBody>;

// ------------------------------------------------------------------ stdin / install

/** `POST /instances/:id/stdin`: one line written to a running container's open stdin. */
export const StdinBody = Type.Object(
  { line: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[^\\r\\n]*$' }) },
  { additionalProperties: false },
);
export type StdinBody = Static<typeof StdinBody>;

/**
 * `POST /instances/:id/install`: a container of `image` run as root, the instance directory at
 * /mnt/server, the script at /mnt/install/install.sh run as `entrypoint /mnt/install/install.sh`;
 * afterwards every file belongs to the instance container's user. `memoryMb` (at least 1024) and
 * `cpus` bound it like the instance.
 */
export const InstallBody = Type.Object(
  {
    image: Type.String({ minLength: 1, maxLength: 512, pattern: '^[^\\s]+$' }),
    entrypoint: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_./-]+$' }),
    script: Type.String({ minLength: 1, maxLength: 262_144 }),
    timeoutMs: Type.Integer({ minimum: 1000, maximum: 7_200_000 }),
    env: Type.Optional(
      Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String({ maxLength: 32768 }), { maxProperties: 512 }),
    ),
    pull: Type.Optional(PullPolicy),
    memoryMb: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_048_576 })),
    cpus: Type.Optional(Type.Number({ minimum: 0, maximum: 1024 })),
  },
  { additionalProperties: false },
);
export type InstallBody = Static<typeof InstallBody>;
export const InstallAnswer = Type.Object({
  exitCode: NullableInt,
  timedOut: Type.Boolean(),
  /** The script's last output lines (bounded). */
  output: Type.String(),
  durationMs: Type.Integer(),
  /** How many files and directories were given to the container's user afterwards (0: the image's own user, left as the script made them). */
  owned: Type.Optional(Type.Integer()),
});
export type InstallAnswer = Static<typeof InstallAnswer>;

// ------------------------------------------------------------------ rcon / logs / delete / cleanup

/** `POST /instances/:id/rcon`: one console command (the RCON port is never published). */
export const RconBody = Type.Object({ ...RconTargetFields, command: RconCommand }, { additionalProperties: false });
export type RconBody = Static<typeof RconBody>;
export const RconAnswer = Type.Object({ response: Type.String() });
export type RconAnswer = Static<typeof RconAnswer>;

/**
 * `GET /instances/:id/logs`: answered as text/plain. With `follow=true` the
 * answer is chunked `text/plain; charset=utf-8` — the last `tail` lines, then
 * every line as the server writes it — until the client disconnects or the
 * container's log ends (it stopped); `since` does not apply then.
 */
export const LogsQuery = Type.Object(
  {
    tail: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    /** `start`: only output since the container's current start (earlier runs are left out). */
    since: Type.Optional(Type.Literal('start')),
    follow: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type LogsQuery = Static<typeof LogsQuery>;

const deleteFields = {
  /** Remove the container only; the runtime directory stays. */
  keepData: Type.Optional(Type.Boolean()),
  /** Remove the container and these paths (relative to the runtime directory) only. */
  paths: Type.Optional(RelativePaths),
};
/** `DELETE /instances/:id` scope, as a JSON body or a query (`?keepData=true`, `?paths=a&paths=b`). */
export const DeleteBody = Type.Object(deleteFields, { additionalProperties: false });
export type DeleteBody = Static<typeof DeleteBody>;
export const DeleteQuery = Type.Object(deleteFields, { additionalProperties: false });
export type DeleteQuery = Static<typeof DeleteQuery>;
/** The scope of a delete (either keepData or paths, not both). */
export type DeleteScope = DeleteBody;

export const DeleteReport = Type.Object({
  instanceId: Type.String(),
  /** `all`: container + runtime directory; `container`: keepData; `paths`: container + listed paths. */
  scope: Type.Union([Type.Literal('all'), Type.Literal('container'), Type.Literal('paths')]),
  containerRemoved: Type.Boolean(),
  directoryRemoved: Type.Boolean(),
  /** The listed paths that existed and were removed (scope `paths`). */
  pathsRemoved: Type.Array(Type.String()),
});
export type DeleteReport = Static<typeof DeleteReport>;

/** `POST /cleanup`: orphans; ownership labels are re-checked right before each removal. */
export const CleanupBody = Type.Object(
  {
    instanceIds: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 1000 }),
    /** Orphans whose runtime directory stays (persistent groups). */
    keepDataFor: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 1000 })),
  },
  { additionalProperties: false },
);
export type CleanupBody = Static<typeof CleanupBody>;

export const CleanupReport = Type.Object({
  removed: Type.Array(Type.String()),
  skipped: Type.Array(Type.Object({ instanceId: Type.String(), reason: Type.String() })),
  notFound: Type.Array(Type.String()),
  /** Removed orphans whose runtime directory was kept (keepDataFor). */
  dataKept: Type.Array(Type.String()),
});
export type CleanupReport = Static<typeof CleanupReport>;

// ------------------------------------------------------------------ instance answers

/** What create, start, pause and unpause answer. */
export const InstanceEndpoint = Type.Object({
  instanceId: Type.String(),
  containerId: Type.String(),
  containerName: Type.String(),
  hostPort: NullableInt,
  /** `gameAddress:hostPort` players reach it at; null without a port. */
  endpoint: NullableString,
  state: ContainerState,
});
export type InstanceEndpoint = Static<typeof InstanceEndpoint>;

/** How a stop ended: the graceful path taken, and whether the bounded timeout forced a kill. */
export const StopResult = Type.Object({
  /** `none`: the container was not running, nothing was sent. */
  method: Type.Union([Type.Literal('rcon'), Type.Literal('signal'), Type.Literal('stdin'), Type.Literal('none')]),
  killed: Type.Boolean(),
  exitCode: NullableInt,
  /** True when a `POST /kill` ended this stop before its timeout (then `killed` is true too). */
  killedOnRequest: Type.Optional(Type.Boolean()),
});
export type StopResult = Static<typeof StopResult>;

/** `POST /instances/:id/stop` answer. */
export const StopAnswer = Type.Intersect([InstanceEndpoint, StopResult]);
export type StopAnswer = Static<typeof StopAnswer>;

/**
 * `POST /instances/:id/kill` answer: SIGKILL at once, without waiting for the instance's other
 * actions (a stop that hangs ends with it). `killed: false` when the container was not running.
 */
export const KillAnswer = Type.Intersect([InstanceEndpoint, Type.Object({ killed: Type.Boolean(), exitCode: NullableInt })]);
export type KillAnswer = Static<typeof KillAnswer>;

/** One managed container of the inventory (`GET /instances` → `{instances: [...]}`). */
export const InventoryEntry = Type.Intersect([
  InstanceEndpoint,
  Type.Object({
    groupId: NullableString,
    variantId: NullableString,
    sessionId: NullableString,
    image: Type.String(),
    /** The user given at create; null = the image's default. */
    user: NullableString,
    /** The caller's labels (never the agent's `orchestrator.*` ones). */
    labels: StringMap,
    exitCode: NullableInt,
    oomKilled: Type.Boolean(),
    startedAt: NullableString,
    finishedAt: NullableString,
    restartCount: Type.Integer(),
  }),
]);
export type InventoryEntry = Static<typeof InventoryEntry>;

export const InventoryAnswer = Type.Object({ instances: Type.Array(InventoryEntry) });
export type InventoryAnswer = Static<typeof InventoryAnswer>;

/** `GET /instances/:id`: an inventory entry plus the creation time. */
export const InstanceDetails = Type.Intersect([InventoryEntry, Type.Object({ createdAt: NullableString })]);
export type InstanceDetails = Static<typeof InstanceDetails>;

/** `POST /instances/:id/replace` answer. */
export const ReplaceResult = Type.Intersect([
  InstanceEndpoint,
  Type.Object({
    /** False when the current container already has the requested config and image (retry or no-op). */
    replaced: Type.Boolean(),
    previousContainerId: NullableString,
    /** How the old container was stopped; null when none was stopped by this call. */
    stop: Type.Union([StopResult, Type.Null()]),
  }),
]);
export type ReplaceResult = Static<typeof ReplaceResult>;

/** `GET /health`. */
export const HealthAnswer = Type.Object({
  status: Type.Literal('ok'),
  agentId: Type.String(),
  version: Type.String(),
  engine: Type.Union([Type.Literal('reachable'), Type.Literal('unreachable')]),
});
export type HealthAnswer = Static<typeof HealthAnswer>;

// ------------------------------------------------------------------ backups

const BackupId = Id;

/** `POST /instances/:id/backups`. */
export const CreateBackupBody = Type.Object(
  {
    backupId: BackupId,
    // Checked again (normalized, no `..`, no absolute) in backups.ts, which names the bad path.
    paths: Type.Optional(RelativePaths),
  },
  { additionalProperties: false },
);
export type CreateBackupBody = Static<typeof CreateBackupBody>;

/** `POST /instances/:id/restore`. */
export const RestoreBody = Type.Object({ backupId: BackupId }, { additionalProperties: false });
export type RestoreBody = Static<typeof RestoreBody>;

export const BackupParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 256 }),
  backupId: Type.String({ minLength: 1, maxLength: 256 }),
});
export type BackupParams = Static<typeof BackupParams>;

export const BackupInfo = Type.Object({
  backupId: Type.String(),
  sizeBytes: Type.Integer(),
  sha256: Type.String(),
  createdAt: Type.String(),
  /** The relative paths archived; absent = the whole instance directory. */
  paths: Type.Optional(Type.Array(Type.String())),
});
export type BackupInfo = Static<typeof BackupInfo>;

export const BackupList = Type.Object({ backups: Type.Array(BackupInfo) });
export type BackupList = Static<typeof BackupList>;
/** `DELETE /instances/:id/backups/:backupId`. */
export const BackupDeleted = Type.Object({ deleted: Type.Boolean() });
export type BackupDeleted = Static<typeof BackupDeleted>;
/** `DELETE /instances/:id/backups`. */
export const BackupsDeleted = Type.Object({ deleted: Type.Integer() });
export type BackupsDeleted = Static<typeof BackupsDeleted>;
/**
 * `GET /instances/:id/backups/:backupId/archive` answers the gzip tar
 * (content-type application/gzip) with these headers; `PUT` of the same path
 * takes one (the orchestrator's store pushing a backup to a host that lost it).
 */
export const BACKUP_ARCHIVE_HEADERS = { sha256: 'x-backup-sha256', createdAt: 'x-backup-created-at', paths: 'x-backup-paths' } as const;
/** `PUT /instances/:id/backups/:backupId/archive` query: what the archive must hash to and when it was taken. */
export const BackupUploadQuery = Type.Object(
  {
    sha256: Sha256,
    createdAt: Type.String({ minLength: 1, maxLength: 64 }),
    /** A JSON array of the archived paths, when the backup is partial. */
    paths: Type.Optional(Type.String({ maxLength: 65_536 })),
  },
  { additionalProperties: false },
);
export type BackupUploadQuery = Static<typeof BackupUploadQuery>;
/** Content types the backup upload accepts as a streamed gzip tar. */
export const BACKUP_ARCHIVE_CONTENT_TYPES = ['application/gzip', 'application/x-gzip', 'application/octet-stream'];
/** `POST /instances/:id/restore` answer: the backup restored and the safety backup written first (null when there was no data). */
export const RestoreAnswer = Type.Object({ restored: Type.String(), safetyBackupId: NullableString });
export type RestoreAnswer = Static<typeof RestoreAnswer>;

// ------------------------------------------------------------------ kept data

/** `GET /kept-data`: instance data and backups on the host with no managed container (kept by a scoped delete). */
export const KeptDataEntry = Type.Object({
  instanceId: Type.String(),
  /** The runtime directory `<runtime>/instances/<id>` (the world) is there. */
  data: Type.Boolean(),
  backups: Type.Array(BackupInfo),
});
export type KeptDataEntry = Static<typeof KeptDataEntry>;
export const KeptDataList = Type.Object({ keptData: Type.Array(KeptDataEntry) });
export type KeptDataList = Static<typeof KeptDataList>;
/** `DELETE /kept-data/:id`: refused (INSTANCE_CONFLICT) while a managed container exists for the id. */
export const KeptDataPurged = Type.Object({ instanceId: Type.String(), dataRemoved: Type.Boolean(), backupsRemoved: Type.Integer() });
export type KeptDataPurged = Static<typeof KeptDataPurged>;
/** `POST /kept-data/:id/attach`: the kept world of `:id` becomes the world of `instanceId` (created, not running). */
export const KeptDataAttachBody = Type.Object(
  { instanceId: Type.String({ minLength: 1, maxLength: 256 }) },
  { additionalProperties: false },
);
export type KeptDataAttachBody = Static<typeof KeptDataAttachBody>;
export const KeptDataAttached = Type.Object({ instanceId: Type.String(), from: Type.String(), replacedFresh: Type.Boolean() });
export type KeptDataAttached = Static<typeof KeptDataAttached>;

// ------------------------------------------------------------------ images / data import

/** `GET /images/inspect?ref=&pull=`. */
export const ImageInspectQuery = Type.Object(
  {
    ref: Type.String({ minLength: 1, maxLength: 512, pattern: '^[^\\s]+$' }),
    pull: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);
export type ImageInspectQuery = Static<typeof ImageInspectQuery>;

export const ImageInfo = Type.Object({
  ref: Type.String(),
  /** Content id (`sha256:…`). */
  id: Type.String(),
  repoDigests: Type.Array(Type.String()),
  /** ISO time the image was built; null when the runtime does not say. */
  created: NullableString,
  sizeBytes: Type.Union([Type.Number(), Type.Null()]),
  /** Config.User of the image ('' = root/default); null when unknown. */
  user: NullableString,
  pulled: Type.Boolean(),
});
export type ImageInfo = Static<typeof ImageInfo>;

/** `PUT /instances/:id/data?path=` (body: a gzip tar). */
export const DataImportQuery = Type.Object({ path: Type.Optional(Type.String({ maxLength: 1024 })) });
export type DataImportQuery = Static<typeof DataImportQuery>;
/** Content types the data import accepts as a streamed gzip tar. */
export const DATA_IMPORT_CONTENT_TYPES = ['application/gzip', 'application/x-gzip', 'application/octet-stream', 'application/x-tar+gzip'];

export const DataImportResult = Type.Object({
  /** The destination, relative to the instance directory ('.' = its root). */
  path: Type.String(),
  entries: Type.Integer(),
  sizeBytes: Type.Integer(),
});
export type DataImportResult = Static<typeof DataImportResult>;

// ------------------------------------------------------------------ files

/**
 * A path of the files API: relative to the instance's data directory, written
 * with a leading `/` (`/server.properties`); `/` is the directory itself. The
 * agent checks it again (no `..`, NUL, control characters, symlinks).
 */
const FilePath = Type.String({ minLength: 1, maxLength: 1024, pattern: '^/' });
const FilePaths = Type.Array(FilePath, { minItems: 1, maxItems: 100 });

export const FILE_TYPES = ['file', 'directory', 'symlink'] as const;
export const FileEntry = Type.Object({
  name: Type.String(),
  path: Type.String(),
  /** Anything else (a socket, a fifo) is listed as `file` with size 0 and cannot be read. */
  type: Type.Union(FILE_TYPES.map((t) => Type.Literal(t))),
  size: Type.Integer({ minimum: 0 }),
  /** Epoch ms. */
  modifiedAt: Type.Integer(),
  /** Permission bits in octal, like "0644". */
  mode: Type.String(),
});
export type FileEntry = Static<typeof FileEntry>;

/** `GET /instances/:id/files?path=/`: directories first, then by name. */
export const FileList = Type.Object({ path: Type.String(), entries: Type.Array(FileEntry) });
export type FileList = Static<typeof FileList>;

export const FilePathQuery = Type.Object({ path: FilePath }, { additionalProperties: false });
export type FilePathQuery = Static<typeof FilePathQuery>;

/** `GET /instances/:id/files/content?path=&offset=`: raw bytes from `offset` (SFTP reads resume there). */
export const FileReadQuery = Type.Object(
  { path: FilePath, offset: Type.Optional(Type.Integer({ minimum: 0 })) },
  { additionalProperties: false },
);
export type FileReadQuery = Static<typeof FileReadQuery>;

/** `PUT /instances/:id/files/content?path=&maxBytes=` (raw body): the caller's size limit; the agent also applies its own. */
export const FileWriteQuery = Type.Object(
  { path: FilePath, maxBytes: Type.Optional(Type.Integer({ minimum: 0 })) },
  { additionalProperties: false },
);
export type FileWriteQuery = Static<typeof FileWriteQuery>;
export const FILE_CONTENT_TYPE = 'application/octet-stream';
/** The answer to a download carries the file's size and modification time in headers. */
export const FILE_MODIFIED_HEADER = 'x-file-modified-at';

export const FileWritten = Type.Object({ path: Type.String(), size: Type.Integer() });
export type FileWritten = Static<typeof FileWritten>;

export const FileDirectoryBody = Type.Object({ path: FilePath }, { additionalProperties: false });
export type FileDirectoryBody = Static<typeof FileDirectoryBody>;

export const FileRenameBody = Type.Object({ from: FilePath, to: FilePath }, { additionalProperties: false });
export type FileRenameBody = Static<typeof FileRenameBody>;

export const FileDeleteBody = Type.Object({ paths: FilePaths }, { additionalProperties: false });
export type FileDeleteBody = Static<typeof FileDeleteBody>;
export const FileDeleted = Type.Object({ deleted: Type.Array(Type.String()) });
export type FileDeleted = Static<typeof FileDeleted>;

/** The agent needs the destination (the orchestrator names the default, on its clock). */
export const FileArchiveBody = Type.Object({ paths: FilePaths, destination: FilePath }, { additionalProperties: false });
export type FileArchiveBody = Static<typeof FileArchiveBody>;

export const FileExtractBody = Type.Object({ path: FilePath, destination: Type.Optional(FilePath) }, { additionalProperties: false });
export type FileExtractBody = Static<typeof FileExtractBody>;
export const FileExtracted = Type.Object({ destination: Type.String(), entries: Type.Integer() });
export type FileExtracted = Static<typeof FileExtracted>;

// ------------------------------------------------------------------ stats

const Counter = Type.Number({ minimum: 0 });

/** One running or paused managed container's resource sample (`GET /instances/stats`). */
export const InstanceStatsEntry = Type.Object({
  instanceId: Type.String(),
  containerId: Type.String(),
  groupId: NullableString,
  state: ContainerState,
  /** CPU seconds used since the container started (a counter; it restarts with the container). */
  cpuSecondsTotal: Counter,
  /** Memory in use without the reclaimable page cache. */
  memoryBytes: Counter,
  /** The container's limit (the host's memory when it has none). */
  memoryLimitBytes: Counter,
  networkRxBytes: Counter,
  networkTxBytes: Counter,
});
export type InstanceStatsEntry = Static<typeof InstanceStatsEntry>;

/** `GET /instances/stats`: every running or paused managed container in one call; stopped ones have no live counters and are left out. */
export const InstanceStatsAnswer = Type.Object({
  /** ISO time the agent read the samples. */
  collectedAt: Type.String(),
  instances: Type.Array(InstanceStatsEntry),
});
export type InstanceStatsAnswer = Static<typeof InstanceStatsAnswer>;

// ------------------------------------------------------------------ heartbeat

/** `POST /api/v1/agents/:agentId/heartbeat` (agent → orchestrator). */
export const heartbeatPath = (agentId: string): string => `${AGENT_API_PREFIX}/agents/${encodeURIComponent(agentId)}/heartbeat`;

/** The raw machine facts a real agent reports. */
export const AgentResources = Type.Object({
  cpuCount: Type.Number({ minimum: 0 }),
  memoryTotalBytes: Type.Number({ minimum: 0 }),
  memoryAvailableBytes: Type.Number({ minimum: 0 }),
  diskFreeBytes: Type.Union([Type.Number({ minimum: 0 }), Type.Null()]),
});
export type AgentResources = Static<typeof AgentResources>;

export const HeartbeatBody = Type.Object(
  {
    controlUrl: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://' }),
    gameAddress: Type.String({ minLength: 1, maxLength: 255 }),
    version: Type.String({ minLength: 1, maxLength: 64 }),
    // The raw machine facts, one shape for every sender; a newer agent's extra fields pass (the store's
    // own memoryMb/cpus/diskBytes are refused by name: toHostHeartbeat).
    resources: Type.Object(
      {
        cpuCount: AgentResources.properties.cpuCount,
        memoryTotalBytes: AgentResources.properties.memoryTotalBytes,
        memoryAvailableBytes: Type.Optional(AgentResources.properties.memoryAvailableBytes),
        diskFreeBytes: Type.Optional(AgentResources.properties.diskFreeBytes),
      },
      { additionalProperties: true },
    ),
    portRange: Type.Object({ first: Port, last: Port }),
    heartbeatIntervalMs: Type.Integer({ minimum: 100, maximum: 3_600_000 }),
    /** Changes when the agent process restarts. */
    bootId: Type.Optional(Type.String({ maxLength: 128 })),
    /** sha256 (hex) of the managed-container inventory (inventoryDigest()): unchanged means nothing to re-read. */
    inventoryDigest: Type.Optional(Sha256),
  },
  { additionalProperties: true },
);
export type HeartbeatBody = Static<typeof HeartbeatBody>;
/** What a real agent sends: the heartbeat body with the raw machine facts always present. */
export type AgentHeartbeatBody = Omit<HeartbeatBody, 'resources'> & { resources: AgentResources };

export const HeartbeatAnswer = Type.Object({
  hostId: Type.String(),
  status: Type.Union(HOST_STATUSES.map((s) => Type.Literal(s))),
});
export type HeartbeatAnswer = Static<typeof HeartbeatAnswer>;

// ------------------------------------------------------------------ enrolment

/** `POST /api/v1/agents/enrol` (agent → orchestrator, the one-time join token as bearer). */
export const ENROL_PATH = `${AGENT_API_PREFIX}/agents/enrol`;

/** Who enrols, and the facts of its first heartbeat (the host row needs them). */
export const EnrolBody = Type.Object(
  { agentId: Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-z0-9][a-z0-9-]*$' }), ...HeartbeatBody.properties },
  { additionalProperties: true },
);
export type EnrolBody = Static<typeof EnrolBody>;

/** Shown once: the agent keeps both in `<runtime dir>/credentials.json` (0600). */
export const EnrolAnswer = Type.Object({
  hostId: Type.String(),
  /** The agent's credential towards the orchestrator (heartbeats, layer downloads): ech_… */
  hostCredential: Type.String(),
  /** The only bearer the agent accepts on its own API from now on. */
  callCredential: Type.String(),
  credentialGeneration: Type.Integer({ minimum: 1 }),
  /** The enrolled control URL: the only address the orchestrator calls this host at. */
  controlUrl: Type.String(),
});
export type EnrolAnswer = Static<typeof EnrolAnswer>;
