// The orchestrator's configuration: every ENDERCLOUD_* variable parsed once at
// start into a frozen object that the composition root injects. docs/orchestrator.md
// documents each variable; a bad value stops the process with one line naming it.

import {
  ConfigError,
  EnvReader,
  asString,
  freeze,
  parseByteSize,
  parseDuration,
  parseLogLevel,
  parsePort,
  parsePositiveInt,
  parseUrl,
  type Env,
  type LogLevel,
  parseSecret,
} from '../shared/config.js';
import { parseFailureLimit, type FailureLimit } from './auth/failure-limiter.js';
import { parseRouterPublicAddress, type RouterPublicAddress } from './registry/router-address.js';
import { DEFAULT_UNKNOWN_GRACE_MS } from '../lifecycle/reconcile.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_STATEMENT_TIMEOUT_MS } from '../store/postgres-store.js';
import { parseIdleTierText, SYSTEM_DEFAULT_IDLE_TIERS_TEXT, type IdleTier } from '../provisioning/index.js';

export interface OrchestratorConfig {
  /** host:port the API listens on. */
  listenHost: string;
  listenPort: number;
  /** Base URL agents and users reach the API at (defaults to http://<listen>). */
  /** Set by ENDERCLOUD_PUBLIC_URL; otherwise derived from the address actually listened on. */
  publicUrl: string | undefined;
  dataDir: string;
  /** undefined → SQLite file in the data dir; postgres://… → PostgreSQL. */
  databaseUrl: string | undefined;
  /** The Redis channel's prefix (`<prefix>:changes`); undefined: derived from the database's identity. */
  redisPrefix: string | undefined;
  /** Bound on opening a PostgreSQL connection or waiting for a pooled one. */
  databaseConnectTimeoutMs: number;
  /** PostgreSQL's statement_timeout for every pooled connection; 0 = none. */
  databaseStatementTimeoutMs: number;
  /** Bound on the readiness check's `select 1` (GET /api/v1/ready). */
  readyTimeoutMs: number;
  /** Redis for the change fan-out across replicas (pub/sub); unset: PostgreSQL LISTEN/NOTIFY, or in-process on SQLite. */
  redisUrl: string | undefined;
  /** The reconciler lease's TTL (renewed every third of it; failover within ttl + ttl/3). */
  leaderLeaseTtlMs: number;
  /** This replica's stable node id; undefined: generated once and kept in `<dataDir>/node-id`. */
  nodeId: string | undefined;
  /** Hosts whose heartbeats carry an inventory digest: full inventory re-read at least this often (else only on change). */
  inventorySweepMs: number;
  /** Preset admin token; when set no admin-token file is generated. */
  adminToken: string | undefined;
  /** Shared AGENT_TOKEN: authenticates agents and is sent to them. */
  agentToken: string | undefined;
  /** Failed authentications allowed per client address (ENDERCLOUD_AUTH_FAILURE_LIMIT); undefined = off. */
  authFailureLimit: FailureLimit | undefined;
  /** ENDERCLOUD_SECRET_KEY (base64 of 32 bytes); with the file below unset too: `<dataDir>/secret-key` (server/secrets/master-key.ts). */
  secretKey: string | undefined;
  /** ENDERCLOUD_SECRET_KEY_FILE: a file holding the key (a mounted secret store). */
  secretKeyFile: string | undefined;
  /** Missed heartbeat intervals after which a host is OFFLINE. */
  hostOfflineAfterBeats: number;
  /** How often the OFFLINE detector sweeps. */
  offlineSweepIntervalMs: number;
  logLevel: LogLevel;
  commandPollIntervalMs: number;
  commandLeaseMs: number;
  commandBatchSize: number;
  /** Total attempts of one command before it fails for good. */
  commandMaxAttempts: number;
  commandRetryInitialMs: number;
  commandRetryMaxMs: number;
  /** Bound on one HTTP call to an agent (create may pull an image: keep it generous). */
  agentRequestTimeoutMs: number;
  /** Largest accepted layer upload (gzip bytes). */
  /** The off-host backup store; default `<dataDir>/backups`. */
  backupDir?: string | undefined;
  /** How often the backup scheduler looks for due schedules and prunes. */
  backupScheduleIntervalMs: number;
  /** The built web panel served at `/` (docs/panel.md); default `<repo>/web/dist`. */
  webDir?: string | undefined;
  maxLayerArchiveBytes: number;
  /** Largest extracted layer tree (sum of file sizes). */
  maxLayerExtractedBytes: number;
  /** Operator-wide cap on instances; undefined = none. */
  maxTotalInstances: number | undefined;
  /** How often the supervisor compares agents' inventories with the store and probes readiness. */
  superviseIntervalMs: number;
  /** How often the provisioner evaluates scaling policies and idle tiers (docs/provisioning.md "How fleets scale"). */
  provisionIntervalMs: number;
  /** The system's idle tiers (a world nobody configured sleeps by them); the API's stored choice wins. */
  idleTiers: IdleTier[];
  /** Crash-loop breaker defaults (a template's `crashLoop` overrides them). */
  crashLoopMaxExits: number;
  crashLoopWindowMs: number;
  restartBackoffInitialMs: number;
  restartBackoffMaxMs: number;
  /** How long a missing managed container stays `unknown` before `intervention_required`. */
  unknownGraceMs: number;
  /** Bound of the quick readiness check after a resume. */
  resumeTimeoutMs: number;
  /** uid:gid of the `endercloud` container user mode. */
  endercloudUser: { uid: number; gid: number };
  /** How often per-instance resource stats are read from ONLINE hosts for /metrics; 0 = never. */
  statsIntervalMs: number;
  /** Where RCON `transfer` sends players (the router's public host:port); unset = no RCON transfers. */
  routerPublicAddress: RouterPublicAddress | undefined;
  /** Largest file one upload of the files API (PUT …/files/content, an SFTP write) may write. */
  fileUploadMaxBytes: number;
  /** The SFTP server's port (docs/orchestrator.md "SFTP"); 0 = off. */
  sftpPort: number;
  /** The address the SFTP server listens on; default the API's listen host. */
  sftpHost: string;
}

function parseListen(value: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(value.trim());
  if (!match) throw new Error(`"${value}" is not host:port (e.g. 127.0.0.1:8080)`);
  // Port 0 lets the OS pick a free port (in-process tests and the dev stack).
  return { host: (match[1] ?? match[2]) as string, port: match[3] === '0' ? 0 : parsePort(match[3] as string) };
}

function parseUidGid(value: string): { uid: number; gid: number } {
  const m = /^(\d{1,10}):(\d{1,10})$/.exec(value.trim());
  if (!m) throw new Error(`"${value}" is not uid:gid (e.g. 1000:1000)`);
  return { uid: Number(m[1]), gid: Number(m[2]) };
}

/** A port, or 0 to switch the listener off. */
function parsePortOrOff(value: string): number {
  return value.trim() === '0' ? 0 : parsePort(value);
}

/** A duration, or a bare 0 to switch the loop off. */
function parseIntervalOrOff(value: string): number {
  return value.trim() === '0' ? 0 : parseDuration(value);
}

function parseDatabaseUrl(value: string): string {
  const v = value.trim();
  if (!/^(postgres(ql)?:\/\/|sqlite:)/i.test(v)) throw new Error('must start with postgres://, postgresql:// or sqlite:');
  return v;
}

function parseLeaseTtl(value: string): number {
  const ms = parseDuration(value);
  if (ms < 1000) throw new Error(`"${value}" is shorter than 1s (renewals every third of it need some slack)`);
  return ms;
}

function parseNodeId(value: string): string {
  const v = value.trim();
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(v))
    throw new Error('must be 1-64 characters of A-Z a-z 0-9 _ . - (no colon), starting with a letter or digit');
  return v;
}

function parseRedisUrl(value: string): string {
  if (!/^rediss?:\/\//.test(value.trim())) throw new Error('must start with redis:// or rediss://');
  return value.trim();
}

function parseRedisPrefix(value: string): string {
  const v = value.trim();
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:{}-]{0,99}$/.test(v))
    throw new Error('must be 1-100 characters of A-Z a-z 0-9 _ . : - { }, starting with a letter or digit');
  return v;
}

export function loadOrchestratorConfig(env: Env): Readonly<OrchestratorConfig> {
  const r = new EnvReader(env);
  const listen = r.optional('ENDERCLOUD_LISTEN', parseListen, { host: '127.0.0.1', port: 8080 });
  const retryInitial = r.optional('ENDERCLOUD_COMMAND_RETRY_INITIAL', parseDuration, 500);
  const retryMax = r.optional('ENDERCLOUD_COMMAND_RETRY_MAX', parseDuration, 30_000);
  if (retryMax < retryInitial)
    throw new ConfigError('ENDERCLOUD_COMMAND_RETRY_MAX', `must not be shorter than ENDERCLOUD_COMMAND_RETRY_INITIAL (${retryInitial} ms)`);
  const config: OrchestratorConfig = {
    listenHost: listen.host,
    listenPort: listen.port,
    publicUrl: r.optional('ENDERCLOUD_PUBLIC_URL', parseUrl),
    dataDir: r.optional('ENDERCLOUD_DATA_DIR', asString, './data'),
    databaseUrl: r.optional('ENDERCLOUD_DATABASE_URL', parseDatabaseUrl),
    databaseConnectTimeoutMs: r.optional('ENDERCLOUD_DATABASE_CONNECT_TIMEOUT', parseDuration, DEFAULT_CONNECT_TIMEOUT_MS),
    databaseStatementTimeoutMs: r.optional('ENDERCLOUD_DATABASE_STATEMENT_TIMEOUT', parseIntervalOrOff, DEFAULT_STATEMENT_TIMEOUT_MS),
    readyTimeoutMs: r.optional('ENDERCLOUD_READY_TIMEOUT', parseDuration, 2000),
    redisUrl: r.optional('ENDERCLOUD_REDIS_URL', parseRedisUrl),
    redisPrefix: r.optional('ENDERCLOUD_REDIS_PREFIX', parseRedisPrefix),
    leaderLeaseTtlMs: r.optional('ENDERCLOUD_LEADER_LEASE_TTL', parseLeaseTtl, 10_000),
    nodeId: r.optional('ENDERCLOUD_NODE_ID', parseNodeId),
    inventorySweepMs: r.optional('ENDERCLOUD_INVENTORY_SWEEP_INTERVAL', parseDuration, 60_000),
    adminToken: r.optional('ENDERCLOUD_ADMIN_TOKEN', parseSecret),
    agentToken: r.optional('ENDERCLOUD_AGENT_TOKEN', parseSecret),
    authFailureLimit: r.optional('ENDERCLOUD_AUTH_FAILURE_LIMIT', parseFailureLimit, { limit: 10, windowMs: 60_000 }),
    secretKey: r.optional('ENDERCLOUD_SECRET_KEY', parseSecret),
    secretKeyFile: r.optional('ENDERCLOUD_SECRET_KEY_FILE', asString),
    hostOfflineAfterBeats: r.optional('ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS', parsePositiveInt, 3),
    offlineSweepIntervalMs: r.optional('ENDERCLOUD_OFFLINE_SWEEP_INTERVAL', parseDuration, 1000),
    logLevel: r.optional('ENDERCLOUD_LOG_LEVEL', parseLogLevel, 'info'),
    commandPollIntervalMs: r.optional('ENDERCLOUD_COMMAND_POLL_INTERVAL', parseDuration, 500),
    commandLeaseMs: r.optional('ENDERCLOUD_COMMAND_LEASE', parseDuration, 30_000),
    commandBatchSize: r.optional('ENDERCLOUD_COMMAND_BATCH', parsePositiveInt, 16),
    commandMaxAttempts: r.optional('ENDERCLOUD_COMMAND_MAX_ATTEMPTS', parsePositiveInt, 8),
    commandRetryInitialMs: retryInitial,
    commandRetryMaxMs: retryMax,
    agentRequestTimeoutMs: r.optional('ENDERCLOUD_AGENT_REQUEST_TIMEOUT', parseDuration, 10 * 60_000),
    maxLayerArchiveBytes: r.optional('ENDERCLOUD_MAX_LAYER_ARCHIVE', parseByteSize, 512 * 1024 ** 2),
    maxLayerExtractedBytes: r.optional('ENDERCLOUD_MAX_LAYER_SIZE', parseByteSize, 2 * 1024 ** 3),
    maxTotalInstances: r.optional('ENDERCLOUD_MAX_INSTANCES', parsePositiveInt),
    superviseIntervalMs: r.optional('ENDERCLOUD_SUPERVISE_INTERVAL', parseDuration, 2000),
    provisionIntervalMs: r.optional('ENDERCLOUD_PROVISION_INTERVAL', parseDuration, 5000),
    idleTiers: r.optional(
      'ENDERCLOUD_IDLE_TIERS',
      (v) => parseIdleTierText(v, 'ENDERCLOUD_IDLE_TIERS'),
      parseIdleTierText(SYSTEM_DEFAULT_IDLE_TIERS_TEXT),
    ),
    crashLoopMaxExits: r.optional('ENDERCLOUD_CRASH_LOOP_MAX_EXITS', parsePositiveInt, 5),
    crashLoopWindowMs: r.optional('ENDERCLOUD_CRASH_LOOP_WINDOW', parseDuration, 10 * 60_000),
    restartBackoffInitialMs: r.optional('ENDERCLOUD_RESTART_BACKOFF_INITIAL', parseDuration, 1000),
    restartBackoffMaxMs: r.optional('ENDERCLOUD_RESTART_BACKOFF_MAX', parseDuration, 60_000),
    unknownGraceMs: r.optional('ENDERCLOUD_UNKNOWN_GRACE', parseDuration, DEFAULT_UNKNOWN_GRACE_MS),
    resumeTimeoutMs: r.optional('ENDERCLOUD_RESUME_TIMEOUT', parseDuration, 10_000),
    endercloudUser: r.optional('ENDERCLOUD_CONTAINER_USER', parseUidGid, { uid: 1000, gid: 1000 }),
    routerPublicAddress: r.optional('ENDERCLOUD_ROUTER_PUBLIC_ADDRESS', parseRouterPublicAddress),
    statsIntervalMs: r.optional('ENDERCLOUD_STATS_INTERVAL', parseIntervalOrOff, 15_000),
    backupDir: r.optional('ENDERCLOUD_BACKUP_DIR', asString),
    backupScheduleIntervalMs: r.optional('ENDERCLOUD_BACKUP_SCHEDULE_INTERVAL', parseDuration, 30_000),
    webDir: r.optional('ENDERCLOUD_WEB_DIR', asString),
    fileUploadMaxBytes: r.optional('ENDERCLOUD_FILE_UPLOAD_MAX_BYTES', parseByteSize, 1024 ** 3),
    sftpPort: r.optional('ENDERCLOUD_SFTP_PORT', parsePortOrOff, 2022),
    sftpHost: r.optional('ENDERCLOUD_SFTP_HOST', asString, listen.host),
  };
  return freeze(config);
}

/**
 * Test helper: a full config from a few overrides, validated like the real one.
 * SFTP is off unless an override names its port (tests start it on an ephemeral
 * one with OrchestratorDeps.sftpPort), so parallel tests never contend for 2022.
 */
export function orchestratorConfig(overrides: Env = {}): Readonly<OrchestratorConfig> {
  return loadOrchestratorConfig({ ENDERCLOUD_SFTP_PORT: '0', ...overrides });
}

/** The process environment; the only place the orchestrator reads it. */
export function processEnv(): Env {
  return process.env;
}
