// Template layers and immutable template versions: everything needed to run
// one kind of server (image, typed variables, readiness, stop behaviour).

import type { EpochMs, JsonValue, LayerRef, Resources } from './common.js';

/** One immutable `(id, checksum)` layer; the gzip tar blob lives in the data dir. */
export interface TemplateLayer {
  id: string;
  checksum: string;
  sizeBytes: number;
  createdAt: EpochMs;
}

export type VariableType = 'string' | 'integer' | 'number' | 'boolean' | 'enum';

export interface VariableValidation {
  pattern?: string;
  min?: number;
  max?: number;
  minLength?: number;
  maxLength?: number;
  /** Allowed values for `enum`. */
  values?: string[];
}

/** A typed setting an instance fills in. */
export interface VariableSpec {
  name: string;
  type: VariableType;
  description?: string;
  /** Env var the value is passed as (defaults to `name`). */
  env?: string;
  default?: JsonValue;
  required?: boolean;
  /** Never stored in templates or revisions in clear, never logged or returned. */
  secret?: boolean;
  validation?: VariableValidation;
  /** How a change reaches a running instance (docs/lifecycle.md "Settings and pending changes"). */
  apply?: 'immediate' | 'restart_required';
  /** Only operators (admin, manager, operator tokens) may set it, on every path (eggs/variable-access.ts); other tokens are refused (egg `user_editable: false`). */
  operatorOnly?: boolean;
  /**
   * Its value is shown to operators only (admin, manager, operator tokens): left out of the
   * settings, pending changes and revisions that narrow tokens read (egg `user_viewable: false`).
   * It is operator-only too.
   */
  hidden?: boolean;
  /**
   * An egg's boolean (enum of these two values): `true`/`false`/`1`/`0` given in
   * any spelling are stored as the egg's own (`1`/`0` or `true`/`false`).
   */
  booleanValues?: BooleanValues;
}

export interface BooleanValues {
  true: string;
  false: string;
}

export const READINESS_KINDS = ['minecraft', 'tcp', 'http', 'log', 'bridge'] as const;
export type ReadinessKind = (typeof READINESS_KINDS)[number];

interface ReadinessBase {
  /** Running but not ready after this → `degraded`. */
  startupTimeoutMs: number;
  intervalMs?: number;
  probeTimeoutMs?: number;
  /** Consecutive failed probes that move an online instance to degraded. */
  failureThreshold?: number;
}
export type ReadinessSpec =
  | (ReadinessBase & { kind: 'minecraft'; port?: number })
  | (ReadinessBase & { kind: 'tcp'; port?: number })
  | (ReadinessBase & { kind: 'http'; path: string; port?: number; expectStatus?: number })
  | (ReadinessBase & { kind: 'log'; pattern: string })
  | (ReadinessBase & { kind: 'bridge' });
/** A template's probe with every default filled in: what the prober runs. */
export type ResolvedReadinessSpec = ReadinessSpec & Required<ReadinessBase>;

export interface RconSpec {
  port: number;
  /** Variable (usually secret) holding the RCON password. */
  passwordVariable: string;
  /** Console command for a graceful stop; default `stop`. */
  command?: string;
}

export interface StopSpec {
  signal: string;
  rcon?: RconSpec;
  /** Console command written to the server's stdin for a graceful stop (needs `stdin: true`); the signal after the timeout. */
  stdin?: string;
  /** Kill after this long without exit. */
  timeoutMs: number;
}

export type RestartPolicy = 'never' | 'on-failure' | 'always';

/** Per-template crash-loop breaker overrides (the orchestrator's configuration gives the defaults). */
export interface CrashLoopSpec {
  maxExits?: number;
  windowMs?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
}

/** The container user, chosen at instance creation and never edited after. */
export type ContainerUserSpec = { mode: 'endercloud' } | { mode: 'custom'; uid: number; gid: number } | { mode: 'image' };

export interface TemplateSpec {
  image: string;
  env: Record<string, string>;
  variables: VariableSpec[];
  resources: Resources;
  containerPort: number;
  readiness: ReadinessSpec;
  stop: StopSpec;
  /** Paths under /data holding player data (deletion scope `player_data`, backups). */
  dataPaths: string[];
  /** Applied in order; later layers overwrite earlier files. */
  layers: LayerRef[];
  restartPolicy: RestartPolicy;
  user: ContainerUserSpec;
  labels?: Record<string, string>;
  /** Caches, logs, generated files under /data: deleted with the `technical` deletion scope. */
  technicalPaths?: string[];
  /** Paths the files API and SFTP refuse to read or write (the egg's file_denylist; eggs/file-denylist.ts). */
  fileDenylist?: string[];
  crashLoop?: CrashLoopSpec;
  backup?: BackupSpec;
  /** At most this many instances of this template across all groups (atomic, beside the group and global caps). */
  caps?: { maxInstances?: number };
  /**
   * Where the network's shared secret (e.g. Velocity's forwarding secret) goes in
   * the container: generated once by the orchestrator, injected at creation,
   * never stored in the template, the instance, its history or revisions.
   */
  networkSecret?: { env: string };
  /** Replaces the image's CMD; `{{VAR}}` and `${VAR}` in each argument are filled from the instance's env at creation. */
  command?: string[];
  /** The container is created with an open stdin: console commands and the stdin stop path write to it. */
  stdin?: boolean;
  install?: InstallSpec;
  /**
   * The server needs the operator's acceptance of the Minecraft EULA (an egg's `eula` feature): its
   * variable `EULA` must be `true` before any start, which is refused otherwise (src/eggs/features.ts).
   */
  eula?: boolean;
  configFiles?: ConfigFileSpec[];
  /**
   * Wings' runtime (egg templates): this startup line is given to the image's own
   * entrypoint as `STARTUP` (`{{VAR}}` left for it to fill from the environment),
   * the instance directory is mounted at `/home/container` and is the working
   * directory, and Wings' variables join the env. Never together with `command`.
   */
  startup?: string;
  /** The image choices an egg offers (label → image): chosen per instance at creation (`image`) or by an update. */
  images?: Record<string, string>;
  /** Opt-outs from the game container's hardened defaults (docs/agent.md, "Container hardening"). */
  security?: SecuritySpec;
}

/**
 * Game containers start with every capability dropped, a read-only root filesystem (the data
 * directory and a tmpfs `/tmp` writable) and no-new-privileges. A template adds back only the
 * capabilities its image needs (`capAdd`, Docker's names without `CAP_`), and an image that writes
 * outside its data directory and `/tmp` says `readOnlyRootfs: false`.
 */
export interface SecuritySpec {
  capAdd?: string[];
  readOnlyRootfs?: boolean;
}

/** A one-off script run at creation (state `installing`) in its own container, the instance directory at `/mnt/server`. */
export interface InstallSpec {
  image: string;
  /** The interpreter the script is given to (`bash`, `ash`, `/bin/sh`). */
  entrypoint: string;
  script: string;
  timeoutMs: number;
}

export const CONFIG_PARSERS = ['properties', 'yaml', 'json', 'ini', 'xml', 'toml', 'file'] as const;
export type ConfigParser = (typeof CONFIG_PARSERS)[number];

/**
 * Edits applied to a file under /data before each start: keys (paths with `[0]`
 * indexes and `*` wildcards in yaml/json/toml) → values with `{{…}}` references,
 * or value matching: `{old value or "regex:RE": new value}` replaces only a value that fits.
 */
export interface ConfigFileSpec {
  path: string;
  parser: ConfigParser;
  find: Record<string, string | Record<string, string>>;
}

/** Backup rules: `onlineSave` archives a running server after save-off + save-all flush over RCON; `paths` limit the archive (default: all of /data). */
export interface BackupSpec {
  onlineSave?: boolean;
  paths?: string[];
  /** What an automatic (idle-tier) stop does when its backup fails; default `abort_stop`: the world keeps running. */
  onFailure?: 'abort_stop' | 'stop_without_backup' | 'force_stop_after_timeout';
}

/** Immutable once created: a different spec for an existing version is refused. */
export interface TemplateVersion {
  name: string;
  version: string;
  spec: TemplateSpec;
  /** sha256 of the canonical JSON of `spec`; equal hashes mean an idempotent re-put. */
  specHash: string;
  createdAt: EpochMs;
}
