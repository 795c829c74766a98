// The agent's configuration: every AGENT_* variable parsed once at start into a
// frozen object that index.ts injects. docs/agent.md documents each variable.

import { isIP } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { isAbsolute } from 'node:path';
import {
  EnvReader,
  asString,
  freeze,
  parseByteSize,
  parseDuration,
  parseLogLevel,
  parsePort,
  parsePortRange,
  parseUrl,
  type Env,
  type LogLevel,
  type PortRange,
  parseSecret,
} from '../shared/config.js';
import { AGENT_ID_PATTERN } from '../shared/ids.js';

export interface AgentConfig {
  /** Durable host identity; becomes the `orchestrator.host` label. */
  agentId: string;
  orchestratorUrl: string;
  listenAddress: string;
  port: number;
  /** URL the orchestrator uses to reach this agent (sent in heartbeats). */
  controlUrl: string;
  /** Address players reach this host's game ports at. */
  gameAddress: string;
  /** Host IP game ports are published on. */
  gameBindAddress: string;
  /** `TZ` of egg servers (Wings' layout), an IANA zone name. */
  timezone: string;
  portRange: PortRange;
  /** Instance directories as the agent sees them. */
  runtimeDirectory: string;
  /** The same directories as the Docker daemon sees them (for the /data bind). */
  runtimeHostDirectory: string;
  cacheDirectory: string;
  dockerSocket: string;
  dockerNetwork: string;
  heartbeatIntervalMs: number;
  stopTimeoutMs: number;
  /** Legacy shared secret for the API, heartbeats and layer downloads; undefined when unset. Not used once enrolled. */
  token: string | undefined;
  /** AGENT_JOIN_TOKEN: a one-time join token, traded at start for this host's own credentials (enrolment.ts). */
  joinToken: string | undefined;
  logLevel: LogLevel;
  /** Largest compressed layer archive accepted from the orchestrator. */
  maxArchiveBytes: number;
  /** Largest extracted layer tree accepted (sum of file sizes). */
  maxLayerBytes: number;
  /** Bound on one layer download, from request to last byte. */
  layerDownloadTimeoutMs: number;
}

/** Facts about the machine that defaults depend on; injected so loading stays pure. */
export interface AgentHostFacts {
  hostname: string;
  platform: NodeJS.Platform;
  /** The machine's time zone; default UTC. */
  timezone?: string;
}

const TIMEZONE_PATTERN = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/;

function parseTimezone(v: string): string {
  const tz = v.trim();
  if (!TIMEZONE_PATTERN.test(tz)) throw new Error(`"${v}" is not a time zone name (e.g. UTC or Europe/Berlin)`);
  return tz;
}

const DEFAULT_DOCKER_SOCKET: Partial<Record<NodeJS.Platform, string>> = { win32: '//./pipe/docker_engine' };
const DOCKER_NETWORK_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/;
const HOSTNAME_PATTERN = /^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$|^\[[0-9a-fA-F:.]+\]$/;

function parseAgentId(v: string): string {
  if (!AGENT_ID_PATTERN.test(v) || v.length > 63) throw new Error(`"${v}" must match [a-z0-9][a-z0-9-]* (at most 63 characters)`);
  return v;
}

function parseIp(v: string): string {
  if (isIP(v.trim()) === 0) throw new Error(`"${v}" is not an IP address`);
  return v.trim();
}

function parseHost(v: string): string {
  const h = v.trim();
  if (isIP(h) === 0 && !HOSTNAME_PATTERN.test(h)) throw new Error(`"${v}" is not a hostname or IP address`);
  return h;
}

function parseAbsolutePath(v: string): string {
  if (!isAbsolute(v) && !v.startsWith('/')) throw new Error(`"${v}" is not an absolute path`);
  return v.length > 1 ? v.replace(/\/+$/, '') : v;
}

function parseNetworkName(v: string): string {
  if (!DOCKER_NETWORK_PATTERN.test(v)) throw new Error(`"${v}" is not a Docker network name ([a-zA-Z0-9][a-zA-Z0-9_.-]*)`);
  return v;
}

function hostForUrl(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

/** Parses the agent's environment. Pure: throws ConfigError naming the first bad variable. */
export function loadAgentConfig(
  env: Env,
  facts: AgentHostFacts = {
    hostname: osHostname(),
    platform: process.platform,
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  },
): Readonly<AgentConfig> {
  const r = new EnvReader(env);
  const agentId = r.required('AGENT_ID', parseAgentId);
  const orchestratorUrl = r.required('AGENT_ORCHESTRATOR_URL', parseUrl);
  const listenAddress = r.optional('AGENT_LISTEN_ADDRESS', parseIp, '0.0.0.0');
  const port = r.optional('AGENT_PORT', parsePort, 8081);
  const controlUrl = r.optional('AGENT_CONTROL_URL', parseUrl, `http://${hostForUrl(facts.hostname)}:${port}`);
  const gameAddress = r.optional('AGENT_GAME_ADDRESS', parseHost, facts.hostname);
  const gameBindAddress = r.optional('AGENT_GAME_BIND_ADDRESS', parseIp, '0.0.0.0');
  const timezone = r.optional(
    'AGENT_TIMEZONE',
    parseTimezone,
    facts.timezone !== undefined && TIMEZONE_PATTERN.test(facts.timezone) ? facts.timezone : 'UTC',
  );
  // Below Linux's ephemeral range and away from 25565, which the router takes on the same box.
  const portRange = r.optional('AGENT_GAME_PORT_RANGE', parsePortRange, { first: 30000, last: 30099 });
  const runtimeDirectory = r.optional('AGENT_RUNTIME_DIRECTORY', parseAbsolutePath, '/var/lib/endercloud/runtime');
  const runtimeHostDirectory = r.optional('AGENT_RUNTIME_HOST_DIRECTORY', parseAbsolutePath, runtimeDirectory);
  const cacheDirectory = r.optional('AGENT_CACHE_DIRECTORY', parseAbsolutePath, '/var/lib/endercloud/cache');
  const dockerSocket = r.optional('AGENT_DOCKER_SOCKET', asString, DEFAULT_DOCKER_SOCKET[facts.platform] ?? '/var/run/docker.sock');
  const dockerNetwork = r.optional('AGENT_DOCKER_NETWORK', parseNetworkName, 'endercloud');
  const heartbeatIntervalMs = r.optional('AGENT_HEARTBEAT_INTERVAL', positiveDuration, 10_000);
  const stopTimeoutMs = r.optional('AGENT_STOP_TIMEOUT', parseDuration, 30_000);
  const token = r.optional('AGENT_TOKEN', parseSecret);
  const joinToken = r.optional('AGENT_JOIN_TOKEN', parseJoinToken);
  const logLevel = r.optional('AGENT_LOG_LEVEL', parseLogLevel, 'info');
  const maxArchiveBytes = r.optional('AGENT_MAX_ARCHIVE_SIZE', positiveSize, 1024 ** 3);
  const maxLayerBytes = r.optional('AGENT_MAX_LAYER_SIZE', positiveSize, 4 * 1024 ** 3);
  const layerDownloadTimeoutMs = r.optional('AGENT_LAYER_DOWNLOAD_TIMEOUT', positiveDuration, 600_000);
  return freeze({
    agentId,
    orchestratorUrl,
    listenAddress,
    port,
    controlUrl,
    gameAddress,
    gameBindAddress,
    timezone,
    portRange,
    runtimeDirectory,
    runtimeHostDirectory,
    cacheDirectory,
    dockerSocket,
    dockerNetwork,
    heartbeatIntervalMs,
    stopTimeoutMs,
    token,
    joinToken,
    logLevel,
    maxArchiveBytes,
    maxLayerBytes,
    layerDownloadTimeoutMs,
  });
}

function parseJoinToken(v: string): string {
  const secret = parseSecret(v);
  if (!secret.startsWith('ecj_')) throw new Error('is not a join token (ecj_…: ectl hosts join-token create)');
  return secret;
}

function positiveDuration(v: string): number {
  const ms = parseDuration(v);
  if (ms <= 0) throw new Error(`"${v}" must be greater than zero`);
  return ms;
}

function positiveSize(v: string): number {
  const bytes = parseByteSize(v);
  if (bytes <= 0) throw new Error(`"${v}" must be greater than zero`);
  return bytes;
}

/** The process environment; only config modules may read it (eslint enforces this). */
export function processEnv(): Env {
  return process.env;
}
