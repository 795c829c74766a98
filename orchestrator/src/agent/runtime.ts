// The container runtime the agent drives (Nomad driver / Wings environment
// shaped), in engine-neutral verbs: the Docker adapter (docker-runtime.ts)
// implements it and keeps networks, Docker's port bookkeeping and its error
// text to itself. (A Kubernetes driver plugs in higher up, at the
// orchestrator's HostDriver seam, not here.)

import type { Readable } from 'node:stream';
import type { ContainerState, PullPolicy } from '../contracts/agent-api.js';
import { AppError } from '../shared/errors.js';

export type { ContainerState, PullPolicy };

export interface PublishedPort {
  containerPort: number;
  hostPort: number;
  /** Host IP the port is published on. */
  hostIp: string;
}

export interface ContainerSpec {
  name: string;
  image: string;
  /** Replaces the image's CMD when set. */
  command?: readonly string[];
  /** Ordered environment; later entries win over earlier ones with the same name. */
  env: readonly (readonly [string, string])[];
  labels: Readonly<Record<string, string>>;
  /** Hard memory limit in bytes; omitted or 0 = the runtime's default limit (never unlimited). */
  memoryBytes?: number;
  /** CPU limit as a fraction of cores; omitted or 0 = no limit (a zero quota confuses Java). */
  cpus?: number;
  /** Capabilities added back (the container starts with all dropped); Docker's names without `CAP_`. */
  capAdd?: readonly string[];
  /** false: the root filesystem is writable (default: read-only, the data directory and /tmp writable). */
  readOnlyRootfs?: boolean;
  /** Host-visible directory mounted read-write at `dataTarget`. */
  dataHostPath: string;
  /** Where the directory is mounted in the container; default /data. */
  dataTarget?: string;
  /** The container's working directory; omitted = the image's. */
  workingDir?: string;
  port: PublishedPort;
  /** `uid` or `uid:gid`; omitted = the image's USER. */
  user?: string;
  /** Signal the engine's own stop sends; omitted = the image's STOPSIGNAL. */
  stopSignal?: string;
  /** Seconds the engine's own stop waits before SIGKILL. */
  stopTimeoutSeconds?: number;
  /** Keep stdin open (egg templates take console commands there). */
  openStdin?: boolean;
}

/**
 * A one-off container (egg install scripts, as Wings runs them): the host directory at
 * `mountTarget`, `files` put into the container's own filesystem before it starts (nothing else
 * of the host is mounted), removed after the run.
 */
export interface OneOffSpec {
  name: string;
  image: string;
  entrypoint: readonly string[];
  command: readonly string[];
  env: readonly (readonly [string, string])[];
  labels: Readonly<Record<string, string>>;
  hostPath: string;
  mountTarget: string;
  /** Files written into the container before its start (absolute paths; parent directories are created). */
  files?: readonly { path: string; content: string; mode: number }[];
  /** `uid` or `uid:gid`; omitted = the image's USER. */
  user?: string;
  /** Hard memory limit in bytes; omitted or 0 = the runtime's default limit (never unlimited). */
  memoryBytes?: number;
  /** CPU limit as a fraction of cores; omitted or 0 = no limit. */
  cpus?: number;
  pidsLimit: number;
  timeoutMs: number;
  /** Answer at most this many bytes of output (the newest). */
  maxOutputBytes: number;
  /** Called once the container runs, with its id (its log can be read and followed until it is removed). */
  onStarted?: (containerId: string) => void;
}
export interface OneOffResult {
  exitCode: number | null;
  timedOut: boolean;
  output: string;
}

/** Optional abilities of a runtime (the Docker adapter has all three). */
export interface StdinRuntime {
  /** Writes text to the open stdin of a running container. */
  writeStdin(id: string, text: string): Promise<void>;
}
export interface OneOffRuntime {
  runOneOff(spec: OneOffSpec): Promise<OneOffResult>;
}
export interface LogFollowRuntime {
  /**
   * The container's output from its last `tail` lines on, as it is written
   * (stdout and stderr in one byte stream). It ends when the container's log
   * ends (the container stopped); destroying it closes the engine's stream.
   */
  followLogs(id: string, options: { tail: number }): Promise<Readable>;
}

/** An optional ability of the runtime, or NOT_IMPLEMENTED saying what this agent's runtime cannot do. */
export function runtimeAbility<T extends object>(runtime: ContainerRuntime, method: keyof T, what: string): T {
  if (typeof (runtime as unknown as Record<string, unknown>)[method as string] !== 'function')
    throw new AppError('NOT_IMPLEMENTED', `this agent's container runtime cannot ${what}`);
  return runtime as unknown as T;
}

export interface ContainerSummary {
  id: string;
  name: string;
  state: ContainerState;
  labels: Readonly<Record<string, string>>;
}

export interface ContainerDetails extends ContainerSummary {
  /** The image reference the container was created from. */
  image: string;
  /** The image's content id (`sha256:…`), to tell a re-pointed tag. */
  imageId: string;
  /** Config.User ('' when the image default applies and the image sets none). */
  user: string;
  /** The configured stop signal (Config.StopSignal), '' when unset. */
  stopSignal: string;
  /** The configured stop timeout in seconds, null when unset. */
  stopTimeoutSeconds: number | null;
  /** Where processes on this host reach the container (RCON); null when it has no address. */
  address: string | null;
  ports: readonly PublishedPort[];
  exitCode: number | null;
  oomKilled: boolean;
  /** ISO timestamps; null when the container never started / never finished. */
  startedAt: string | null;
  finishedAt: string | null;
  createdAt: string | null;
  restartCount: number;
}

export interface LogOptions {
  /** Last N lines. */
  tail: number;
  /** Answer at most this many bytes (the newest ones, cut at a line start). */
  maxBytes: number;
  /** Only lines stamped at or after this time (epoch nanoseconds; see log-window.ts). */
  sinceNanos?: bigint;
}

/** One sample of a container's resource use, in engine-neutral units. */
export interface ContainerStats {
  /** CPU time the container's processes used since it started, in seconds (a counter). */
  cpuSecondsTotal: number;
  /** Memory in use without the reclaimable page cache (what `docker stats` shows). */
  memoryBytes: number;
  /** The limit the container is held to; the engine reports the host's memory when unlimited. */
  memoryLimitBytes: number;
  /** Bytes received and sent on every interface since the container started (counters). */
  networkRxBytes: number;
  networkTxBytes: number;
}

export type ProgressListener = (event: { status: string; id?: string; current?: number; total?: number }) => void;

export interface ContainerRuntime {
  /** Checks the engine answers; throws a retryable AppError when it does not. */
  ping(): Promise<void>;
  /**
   * Creates (does not start) the container, with whatever the engine needs
   * around it (the Docker adapter ensures its managed network). CONFLICT when
   * the name is taken.
   */
  create(spec: ContainerSpec): Promise<{ id: string }>;
  /** Starts it; HostPortTakenError when something outside the runtime holds the host port. */
  start(id: string): Promise<void>;
  /** Graceful signal, wait up to timeoutSeconds, then kill. */
  stop(id: string, timeoutSeconds: number): Promise<void>;
  /** Sends a signal; a container that is not running is not an error. */
  kill(id: string, signal?: string): Promise<void>;
  /** Resolves true once the container is not running, false after timeoutMs. */
  waitForExit(id: string, timeoutMs: number): Promise<boolean>;
  pause(id: string): Promise<void>;
  unpause(id: string): Promise<void>;
  /** Removes the container (forcefully); a missing container is not an error. */
  remove(id: string): Promise<void>;
  /** Inspects by id or name; undefined when no such container exists. */
  inspect(idOrName: string): Promise<ContainerDetails | undefined>;
  /** Every container (any state) carrying all the given labels. */
  list(labels: Readonly<Record<string, string>>): Promise<ContainerSummary[]>;
  logs(id: string, options: LogOptions): Promise<string>;
  /**
   * Pulls the image unless present (`missing`, the default) or always
   * (`always`); reports progress. Returns whether it pulled.
   */
  ensureImage(image: string, onProgress?: ProgressListener, policy?: PullPolicy): Promise<{ pulled: boolean }>;
  /** The local image's content id, undefined when it is not present. */
  imageId(image: string): Promise<string | undefined>;
  /**
   * Host ports the runtime holds or has promised: ports published by running
   * or paused containers plus the `orchestrator.host-port` label of every
   * container (any state). The port allocator never hands these out.
   */
  reservedHostPorts(): Promise<Set<number>>;
  /**
   * One resource sample of a running or paused container; undefined when no
   * such container exists or it is not running (no live counters to read).
   */
  stats(id: string): Promise<ContainerStats | undefined>;
}

/**
 * A start failed because the container's host port is held outside the
 * runtime (a listener the bind probe could not see, or a port published
 * while the container was stopped). The placement retries with the next
 * port; a start of an existing container answers HOST_PORT_TAKEN, and the
 * orchestrator re-creates it on another port (a replace with newHostPort).
 */
export class HostPortTakenError extends AppError {
  constructor(engineError: AppError) {
    super('HOST_PORT_TAKEN', engineError.message, {
      retryable: engineError.retryable,
      cause: engineError.cause,
      ...(engineError.details ? { details: engineError.details } : {}),
    });
    this.name = 'HostPortTakenError';
  }
}
