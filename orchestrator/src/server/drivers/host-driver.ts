// The orchestrator's seam to a host (docs/architecture.md "Layers of the orchestrator", the driver seam): what the
// control plane asks of the place an instance runs, in its own verbs. The
// agent adapter (agent-driver.ts) sits behind it today; a Kubernetes driver
// would sit behind the same interface. Nothing above a driver knows agent
// paths or a host's control URL.
//
// The request and answer shapes are the agent contract's today
// (src/contracts/agent-api.ts): they are the orchestrator's vocabulary for an
// instance's container too, so another driver answers in the same shapes.

import type { Readable } from 'node:stream';
import type * as Api from '../../contracts/agent-api.js';
import type { Host } from '../../domain/host.js';
import { AppError } from '../../shared/errors.js';

/**
 * Ids every call carries so the host's logs line up with ours (sent as
 * x-command-id / x-request-id by the agent driver), and the reconciler
 * lease's fencing `epoch` (x-leader-epoch), which hosts check: a mutating call
 * with an epoch older than one the host has seen is refused (STALE_LEADER).
 * Filled in one place: the engine driver's `epoch` option (agent-driver.ts).
 */
export interface CallIds {
  commandId?: string;
  requestId?: string;
  epoch?: number;
}

/** The host a call goes to: a full domain Host fits; a driver reads only what it needs. */
/** `credentialGeneration`: set for an enrolled host (the driver derives its call credential from it). */
export type DriverHost = Pick<Host, 'id' | 'controlUrl' | 'credentialGeneration'>;

export type CreateInstanceRequest = Api.CreateInstanceBody;
export type ReplaceInstanceRequest = Api.ReplaceBody;
export type StopRequest = Api.StopBody;
export type RemoveScope = Api.DeleteScope;
export type CleanupRequest = { instanceIds: readonly string[]; keepDataFor?: readonly string[] };
export type LogsRequest = { tail: number; sinceStart?: boolean };

export type InstanceEndpoint = Api.InstanceEndpoint;
export type InventoryEntry = Api.InventoryEntry;
export type InstanceDetails = Api.InstanceDetails;
export type StopOutcome = Api.StopAnswer;
export type KillOutcome = Api.KillAnswer;
export type ReplaceOutcome = Api.ReplaceResult;
export type RemoveReport = Api.DeleteReport;
export type CleanupReport = Api.CleanupReport;
export type BackupInfo = Api.BackupInfo;
export type ImageInfo = Api.ImageInfo;
export type DataImportResult = Api.DataImportResult;
export type InstanceStatsEntry = Api.InstanceStatsEntry;

export interface HostDriver {
  /** Every managed container on the host, any state (reconciliation, recovery). */
  inventory(host: DriverHost, ids?: CallIds): Promise<InventoryEntry[]>;
  /**
   * Creates the instance (layers materialized, image pulled) and starts it
   * unless `start: false`. Idempotent: a retry answers the existing container.
   */
  create(host: DriverHost, instanceId: string, request: CreateInstanceRequest, ids?: CallIds): Promise<InstanceEndpoint>;
  /** Starts a created or stopped instance; running already is not an error. */
  start(host: DriverHost, instanceId: string, ids?: CallIds): Promise<InstanceEndpoint>;
  /** Graceful stop (RCON command or signal), bounded wait, then kill; says which path was taken. */
  stop(host: DriverHost, instanceId: string, request: StopRequest, ids?: CallIds): Promise<StopOutcome>;
  /**
   * SIGKILL at once, not queued behind the instance's other calls at the host (a stop that hangs
   * then answers); a container that is not running is not an error (`killed: false`).
   */
  kill(host: DriverHost, instanceId: string, ids?: CallIds): Promise<KillOutcome>;
  /** Freezes a running instance (warm sleep); paused already is not an error. */
  pause(host: DriverHost, instanceId: string, ids?: CallIds): Promise<InstanceEndpoint>;
  /** Thaws a paused instance; running already is not an error. */
  resume(host: DriverHost, instanceId: string, ids?: CallIds): Promise<InstanceEndpoint>;
  /** New container with a new config on the same data and (when free) host port; a no-op when already current. */
  replace(host: DriverHost, instanceId: string, request: ReplaceInstanceRequest, ids?: CallIds): Promise<ReplaceOutcome>;
  /** Removes the container and, by scope, nothing (keepData), listed paths, or all data (default). */
  remove(host: DriverHost, instanceId: string, scope?: RemoveScope, ids?: CallIds): Promise<RemoveReport>;
  /** The container's current details; INSTANCE_NOT_FOUND when the host has none. */
  inspect(host: DriverHost, instanceId: string, ids?: CallIds): Promise<InstanceDetails>;
  /** The last `tail` lines of output as text; `sinceStart` leaves out earlier runs. */
  logs(host: DriverHost, instanceId: string, request: LogsRequest, ids?: CallIds): Promise<string>;
  /**
   * The output from the last `tail` lines on, as the server writes it (UTF-8
   * bytes). Ends when the container's log ends; aborting `signal` (or
   * destroying the stream) closes it at the host. Only the wait for the host's
   * answer is bounded.
   */
  followLogs(host: DriverHost, instanceId: string, request: { tail: number }, signal: AbortSignal, ids?: CallIds): Promise<Readable>;
  /** Removes orphans; the host re-checks ownership before each removal. `keepDataFor` keeps their data. */
  cleanup(host: DriverHost, request: CleanupRequest, ids?: CallIds): Promise<CleanupReport>;

  /** Instance backups, when the host keeps them. */
  readonly backups?: HostBackups;
  /** Image inspection, when the host can resolve image references. */
  readonly images?: HostImages;
  /** Console commands over RCON inside the host (the RCON port is never published). */
  readonly rcon?: HostRcon;
  /** Importing existing data into a created, not running instance. */
  readonly dataImport?: HostDataImport;
  /** Data a scoped delete kept (worlds, backups) of instances without a container. */
  readonly keptData?: HostKeptData;
  /** Resource samples of the host's running instances, when the host measures them. */
  readonly metrics?: HostMetrics;
  /** Egg templates: install scripts before the first start and console lines on stdin. */
  readonly eggs?: HostEggs;
  /** The instance data directory's files (the files API and SFTP), running or not. */
  readonly files?: HostFiles;
}

/**
 * Files of an instance's data directory. Paths are `/`-rooted relative to it;
 * the host checks them (FILE_PATH_INVALID for `..`, NUL, a symlink crossed).
 */
export interface HostFiles {
  list(host: DriverHost, instanceId: string, path: string, ids?: CallIds): Promise<Api.FileList>;
  stat(host: DriverHost, instanceId: string, path: string, ids?: CallIds): Promise<Api.FileEntry>;
  /** A regular file's bytes from `offset`, streamed (only the wait for the head is bounded). */
  read(
    host: DriverHost,
    instanceId: string,
    path: string,
    offset: number,
    ids?: CallIds,
  ): Promise<{ size: number; modifiedAt: number; stream: Readable }>;
  /** Creates or replaces a file with the stream's bytes (temp file + rename at the host); FILE_TOO_LARGE past `maxBytes`. */
  write(host: DriverHost, instanceId: string, path: string, content: Readable, maxBytes: number, ids?: CallIds): Promise<Api.FileWritten>;
  mkdir(host: DriverHost, instanceId: string, path: string, ids?: CallIds): Promise<{ path: string }>;
  rename(host: DriverHost, instanceId: string, from: string, to: string, ids?: CallIds): Promise<{ from: string; to: string }>;
  remove(host: DriverHost, instanceId: string, paths: readonly string[], ids?: CallIds): Promise<Api.FileDeleted>;
  archive(host: DriverHost, instanceId: string, paths: readonly string[], destination: string, ids?: CallIds): Promise<Api.FileWritten>;
  extract(host: DriverHost, instanceId: string, path: string, destination: string | undefined, ids?: CallIds): Promise<Api.FileExtracted>;
}

export interface HostMetrics {
  /** One sample of every running or paused instance on the host, in one call. */
  stats(host: DriverHost, ids?: CallIds): Promise<InstanceStatsEntry[]>;
}

export interface HostKeptData {
  /** Every instance id on the host with data or backups and no managed container. */
  list(host: DriverHost, ids?: CallIds): Promise<Api.KeptDataEntry[]>;
  /** Removes that data and those backups; INSTANCE_CONFLICT while a managed container exists. */
  purge(host: DriverHost, instanceId: string, ids?: CallIds): Promise<Api.KeptDataPurged>;
  /** Makes the kept world of `keptId` the world of instance `to` (its container created or stopped). */
  attach(host: DriverHost, keptId: string, to: string, ids?: CallIds): Promise<Api.KeptDataAttached>;
}

export interface HostEggs {
  /** Runs an install script in a one-off container with the instance directory at /mnt/server. */
  install(host: DriverHost, instanceId: string, request: Api.InstallBody, ids?: CallIds): Promise<Api.InstallAnswer>;
  /** Writes one line to a running instance's open stdin. */
  stdin(host: DriverHost, instanceId: string, request: Api.StdinBody, ids?: CallIds): Promise<{ written: boolean }>;
}

export interface HostBackups {
  /** Writes a backup (idempotent per backup id); `paths` limits it to relative paths. */
  create(host: DriverHost, instanceId: string, request: { backupId: string; paths?: string[] }, ids?: CallIds): Promise<BackupInfo>;
  /** The instance's backups on this host. */
  list(host: DriverHost, instanceId: string, ids?: CallIds): Promise<BackupInfo[]>;
  /** Restores a backup into a stopped instance, writing a safety backup of the current data first. */
  restore(host: DriverHost, instanceId: string, backupId: string, ids?: CallIds): Promise<Api.RestoreAnswer>;
  /** Deletes one backup; `deleted: false` when it did not exist. */
  delete(host: DriverHost, instanceId: string, backupId: string, ids?: CallIds): Promise<Api.BackupDeleted>;
  /** Deletes every backup of the instance (after the instance itself is deleted). */
  deleteAll(host: DriverHost, instanceId: string, ids?: CallIds): Promise<Api.BackupsDeleted>;
  /** Streams one backup's archive (gzip tar) with its metadata; NOT_FOUND when the host lacks it. */
  download(host: DriverHost, instanceId: string, backupId: string, ids?: CallIds): Promise<{ info: BackupInfo; stream: Readable }>;
  /** Puts an archive taken elsewhere onto the host (checked there against `info.sha256`); idempotent per backup id. */
  upload(host: DriverHost, instanceId: string, info: BackupInfo, archive: Readable, ids?: CallIds): Promise<BackupInfo>;
}

export interface HostImages {
  /** What an image reference resolves to on that host, pulled first when `pull`. */
  inspectImage(host: DriverHost, ref: string, options: { pull: boolean }, ids?: CallIds): Promise<ImageInfo>;
}

export interface HostRcon {
  /** Runs one console command on a running instance and answers the server's reply. */
  command(host: DriverHost, instanceId: string, request: Api.RconBody, ids?: CallIds): Promise<Api.RconAnswer>;
}

export interface HostDataImport {
  /** Streams a gzip tar into a created, not running instance; `path` is relative to its data directory. */
  importData(host: DriverHost, instanceId: string, path: string, archive: Readable, ids?: CallIds): Promise<DataImportResult>;
}

/** An optional capability, or NOT_IMPLEMENTED naming the host whose driver lacks it. */
export function capability<T>(value: T | undefined, name: string, host: DriverHost): T {
  if (value === undefined) throw new AppError('NOT_IMPLEMENTED', `the driver of host ${host.id} has no ${name} capability`);
  return value;
}
