// The container runtime the agent drives (Nomad driver / Wings environment
// shaped). Plain types only: the Docker adapter implements it today, a
// Kubernetes driver can sit behind the same interface later.

import type { ContainerState, PullPolicy } from '../contracts/agent-api.js';

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
  /** Hard memory limit in bytes; omitted = unlimited. */
  memoryBytes?: number;
  /** CPU limit as a fraction of cores; omitted or 0 = no limit (a zero quota confuses Java). */
  cpus?: number;
  /** Host-visible directory mounted read-write at /data. */
  dataHostPath: string;
  port: PublishedPort;
  network: string;
  /** `uid` or `uid:gid`; omitted = the image's USER. */
  user?: string;
  /** Signal `docker stop` sends; omitted = the image's STOPSIGNAL. */
  stopSignal?: string;
  /** Seconds `docker stop` waits before SIGKILL (Docker StopTimeout). */
  stopTimeoutSeconds?: number;
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
  /** Docker StopTimeout in seconds, null when unset. */
  stopTimeoutSeconds: number | null;
  /** IPv4 address per attached network name. */
  networkAddresses: Readonly<Record<string, string>>;
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


export type ProgressListener = (event: { status: string; id?: string; current?: number; total?: number }) => void;

export interface ContainerRuntime {
  /** Checks the engine answers; throws a retryable AppError when it does not. */
  ping(): Promise<void>;
  create(spec: ContainerSpec): Promise<{ id: string }>;
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
  ensureNetwork(name: string): Promise<void>;
  /**
   * Host ports the runtime holds or has promised: ports published by running
   * containers plus the `orchestrator.host-port` label of every container.
   */
  usedHostPorts(): Promise<Set<number>>;
}
