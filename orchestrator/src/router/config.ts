// Router configuration: the only place that reads the environment
// (ENDERCLOUD_ROUTER_CONFIG, ENDERCLOUD_ORCHESTRATOR_URL, ENDERCLOUD_ROUTER_TOKEN,
// ENDERCLOUD_ROUTER_ID) and the Velocity-shaped TOML file. A bad value is one line naming the key.

import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parse as parseToml } from 'smol-toml';
import { asString, ConfigError, EnvReader, freeze, parseDuration, parseUrl, type Env } from '../shared/config.js';
import { isValidId } from '../shared/ids.js';
import { MAX_FRAME_SIZE } from '../protocol/frame-reader.js';
import { parseCidr } from './cidr.js';

/** `instance:<ref>` matches a registry instance by id, else by name. */
export type ServerEntry =
  { kind: 'address'; host: string; port: number } | { kind: 'instance'; id: string } | { kind: 'group'; id: string };

export interface RoutingConfig {
  servers: Readonly<Record<string, ServerEntry>>;
  try: readonly string[];
  forcedHosts: Readonly<Record<string, readonly string[]>>;
  acceptRegistryBackends: boolean;
  /** `[wake] fallback`: the `[servers]` name a held login goes to when its world is not ready in time. */
  fallback?: string;
}

export interface HostPort {
  host: string;
  port: number;
}

export interface StatusConfig {
  versionName: string;
  maxPlayers: number;
  motd: { asleep: string; starting: string; stopped: string; unreachable: string; noBackend: string };
}

export interface MessagesConfig {
  unreachable: string;
  noBackend: string;
  rateLimited: string;
  /** `{seconds}`: the registry's remaining start estimate (10 when unknown). */
  wakeTimeout: string;
  /** With an orchestrator: `{seconds}` is replaced by the expected start time. */
  starting: string;
  full: string;
  maintenance: string;
  /** Prefix when the orchestrator refuses a wake or start; its reason follows. */
  wakeRefused: string;
  /** A group join found no instance with room and none could be started within the caps; `{reason}`: the orchestrator's reason. */
  capacity: string;
  /** `max_players_per_ip` reached for the player's address. */
  playersPerIp: string;
}

export interface LimitsConfig {
  handshakeTimeoutMs: number;
  maxHandshakeSize: number;
  maxLoginStartSize: number;
  maxPacketSize: number;
  /** Concurrent connections per address that have not logged in yet (slowloris defence); 0 = unlimited. */
  maxConnectionsPerIp: number;
  /** Logged-in players per address; 0 = unlimited (the default: schools, LAN parties, carrier NAT). */
  maxPlayersPerIp: number;
  loginRatelimitMs: number;
  wakeHoldTimeoutMs: number;
  backendDialTimeoutMs: number;
}

export interface ProxyProtocolConfig {
  sendToBackends: boolean;
  trustedCidrs: readonly string[];
}

export interface RouterFileConfig {
  bind: HostPort;
  routing: RoutingConfig;
  status: StatusConfig;
  messages: MessagesConfig;
  limits: LimitsConfig;
  proxyProtocol: ProxyProtocolConfig;
  metrics?: HostPort;
}

export interface RouterConfig extends RouterFileConfig {
  configPath: string;
  orchestratorUrl?: string;
  /** Bearer token with only the router's scopes; never logged. */
  routerToken?: string;
  /** Stable id for session reports (the orchestrator closes this router's stale sessions on restart). */
  routerId: string;
}

export const DEFAULT_LIMITS: LimitsConfig = {
  handshakeTimeoutMs: 5000,
  maxHandshakeSize: 1024,
  maxLoginStartSize: 1024,
  maxPacketSize: MAX_FRAME_SIZE,
  maxConnectionsPerIp: 16,
  maxPlayersPerIp: 0,
  loginRatelimitMs: 3000,
  wakeHoldTimeoutMs: 20_000,
  backendDialTimeoutMs: 2000,
};

export const DEFAULT_STATUS: StatusConfig = {
  versionName: 'EnderCloud',
  maxPlayers: 0,
  motd: {
    asleep: 'Asleep — join to wake it',
    starting: 'Starting…',
    stopped: 'Stopped — join to start it',
    unreachable: 'Unreachable — try again later',
    noBackend: 'No server for this address',
  },
};

export const DEFAULT_MESSAGES: MessagesConfig = {
  unreachable: 'The server is unreachable right now. Please try again in a moment.',
  noBackend: 'No server is configured for this address.',
  rateLimited: 'You are logging in too fast. Please wait a few seconds.',
  wakeTimeout: 'The world is still waking up. Please join again in about {seconds} seconds.',
  starting: 'The world is starting. Please join again in about {seconds} seconds.',
  full: 'The server is full. Please try again later.',
  maintenance: 'The server is under maintenance. Please try again later.',
  wakeRefused: 'This world cannot be started right now.',
  capacity: '{reason} Please try again in a minute.',
  playersPerIp: 'Too many players are connected from your address.',
};

type Table = Record<string, unknown>;

function isTable(v: unknown): v is Table {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/** Reads one section, rejecting unknown keys so typos do not pass silently. */
class Section {
  constructor(
    private readonly table: Table,
    private readonly path: string,
    allowed: readonly string[],
  ) {
    for (const key of Object.keys(table))
      if (!allowed.includes(key)) throw new ConfigError(this.key(key), `unknown key (expected one of: ${allowed.join(', ')})`);
  }

  key(name: string): string {
    return this.path ? `${this.path}.${name}` : name;
  }

  has(name: string): boolean {
    return this.table[name] !== undefined;
  }

  get<T>(name: string, fallback: T, parse: (v: unknown) => T): T {
    const v = this.table[name];
    if (v === undefined) return fallback;
    try {
      return parse(v);
    } catch (err) {
      throw new ConfigError(this.key(name), err instanceof Error ? err.message : String(err));
    }
  }

  section(name: string, allowed: readonly string[]): Section {
    const v = this.table[name];
    if (v === undefined) return new Section({}, this.key(name), allowed);
    if (!isTable(v)) throw new ConfigError(this.key(name), 'must be a table');
    return new Section(v, this.key(name), allowed);
  }

  raw(name: string): unknown {
    return this.table[name];
  }
}

const str = (v: unknown): string => {
  if (typeof v !== 'string') throw new Error(`must be a string, got ${JSON.stringify(v)}`);
  return v;
};
const bool = (v: unknown): boolean => {
  if (typeof v !== 'boolean') throw new Error(`must be true or false, got ${JSON.stringify(v)}`);
  return v;
};
const intIn =
  (min: number, max: number) =>
  (v: unknown): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      throw new Error(`must be an integer in ${min}-${max}, got ${JSON.stringify(v)}`);
    return v;
  };
/** A duration: integer milliseconds (Velocity style) or a string such as "20s". */
const duration =
  (min: number, max: number) =>
  (v: unknown): number => {
    const ms = typeof v === 'string' ? parseDuration(v) : intIn(min, max)(v);
    if (ms < min || ms > max) throw new Error(`must be between ${min} and ${max} ms, got ${ms}`);
    return ms;
  };
const stringList = (v: unknown): string[] => {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error('must be a list of strings');
  return v as string[];
};

export function parseHostPort(text: string): HostPort {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d+)$/.exec(text) ?? /^([^:\s]+):(\d+)$/.exec(text);
  if (!m) throw new Error(`"${text}" is not host:port (IPv6 as [addr]:port)`);
  const port = Number(m[2]);
  if (port < 1 || port > 65535) throw new Error(`port ${port} is outside 1-65535`);
  return { host: m[1]!, port };
}

function parseServerEntry(v: unknown): ServerEntry {
  const text = str(v).trim();
  const m = /^(instance|group):(.*)$/.exec(text);
  if (m) {
    if (!isValidId(m[2])) throw new Error(`"${m[2]}" is not a valid ${m[1]} id`);
    return { kind: m[1] as 'instance' | 'group', id: m[2]! };
  }
  return { kind: 'address', ...parseHostPort(text) };
}

function parseRouting(root: Section): RoutingConfig {
  const serversSection = root.raw('servers');
  if (serversSection !== undefined && !isTable(serversSection)) throw new ConfigError('servers', 'must be a table');
  const servers: Record<string, ServerEntry> = {};
  for (const [name, value] of Object.entries(serversSection ?? {})) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name))
      throw new ConfigError(`servers.${name}`, 'server names use letters, digits, "_", ".", "-"');
    try {
      servers[name] = parseServerEntry(value);
    } catch (err) {
      throw new ConfigError(`servers.${name}`, (err as Error).message);
    }
  }
  const known =
    (key: string) =>
    (names: string[]): string[] => {
      for (const n of names) if (!servers[n]) throw new ConfigError(key, `"${n}" is not a name in [servers]`);
      return names;
    };
  const tryList = known('try')(root.get('try', [], stringList));
  const forcedRaw = root.raw('forced-hosts');
  if (forcedRaw !== undefined && !isTable(forcedRaw)) throw new ConfigError('forced-hosts', 'must be a table');
  const forcedHosts: Record<string, string[]> = {};
  for (const [host, list] of Object.entries(forcedRaw ?? {})) {
    const key = `forced-hosts."${host}"`;
    let names: string[];
    try {
      names = stringList(list);
    } catch (err) {
      throw new ConfigError(key, (err as Error).message);
    }
    // Keys are matched against cleaned addresses, so normalise them the same way.
    forcedHosts[host.replace(/\.+$/, '').toLowerCase()] = known(key)(names);
  }
  const wake = root.section('wake', ['fallback']);
  const fallback = wake.get('fallback', undefined as string | undefined, str);
  if (fallback !== undefined) known('wake.fallback')([fallback]);
  const routing: RoutingConfig = {
    servers,
    try: tryList,
    forcedHosts,
    acceptRegistryBackends: root.get('accept_registry_backends', false, bool),
  };
  if (fallback !== undefined) routing.fallback = fallback;
  return routing;
}

/** Parses and validates the TOML text; throws ConfigError naming the key. */
export function parseRouterToml(text: string, source = 'router config'): RouterFileConfig {
  let doc: Table;
  try {
    doc = parseToml(text) as Table;
  } catch (err) {
    throw new ConfigError(source, `not valid TOML: ${(err as Error).message.split('\n')[0]}`);
  }
  const root = new Section(doc, '', [
    'bind',
    'servers',
    'try',
    'forced-hosts',
    'accept_registry_backends',
    'wake',
    'status',
    'messages',
    'limits',
    'proxy-protocol',
    'metrics',
  ]);
  const bind = root.get('bind', { host: '0.0.0.0', port: 25565 }, (v) => parseHostPort(str(v)));
  const routing = parseRouting(root);

  const s = root.section('status', ['version_name', 'max_players', 'asleep', 'starting', 'stopped', 'unreachable', 'no-backend']);
  const d = DEFAULT_STATUS;
  const status: StatusConfig = {
    versionName: s.get('version_name', d.versionName, str),
    maxPlayers: s.get('max_players', d.maxPlayers, intIn(0, 1_000_000)),
    motd: {
      asleep: s.get('asleep', d.motd.asleep, str),
      starting: s.get('starting', d.motd.starting, str),
      stopped: s.get('stopped', d.motd.stopped, str),
      unreachable: s.get('unreachable', d.motd.unreachable, str),
      noBackend: s.get('no-backend', d.motd.noBackend, str),
    },
  };

  const m = root.section('messages', [
    'unreachable',
    'no-backend',
    'rate-limited',
    'wake-timeout',
    'starting',
    'full',
    'maintenance',
    'wake-refused',
    'capacity',
    'players-per-ip',
  ]);
  const messages: MessagesConfig = {
    unreachable: m.get('unreachable', DEFAULT_MESSAGES.unreachable, str),
    noBackend: m.get('no-backend', DEFAULT_MESSAGES.noBackend, str),
    rateLimited: m.get('rate-limited', DEFAULT_MESSAGES.rateLimited, str),
    wakeTimeout: m.get('wake-timeout', DEFAULT_MESSAGES.wakeTimeout, str),
    starting: m.get('starting', DEFAULT_MESSAGES.starting, str),
    full: m.get('full', DEFAULT_MESSAGES.full, str),
    maintenance: m.get('maintenance', DEFAULT_MESSAGES.maintenance, str),
    wakeRefused: m.get('wake-refused', DEFAULT_MESSAGES.wakeRefused, str),
    capacity: m.get('capacity', DEFAULT_MESSAGES.capacity, str),
    playersPerIp: m.get('players-per-ip', DEFAULT_MESSAGES.playersPerIp, str),
  };

  const l = root.section('limits', [
    'handshake_timeout',
    'max_handshake_size',
    'max_login_start_size',
    'max_packet_size',
    'max_connections_per_ip',
    'max_players_per_ip',
    'login_ratelimit',
    'wake_hold_timeout',
    'backend_dial_timeout',
  ]);
  const dl = DEFAULT_LIMITS;
  const limits: LimitsConfig = {
    handshakeTimeoutMs: l.get('handshake_timeout', dl.handshakeTimeoutMs, duration(100, 60_000)),
    maxHandshakeSize: l.get('max_handshake_size', dl.maxHandshakeSize, intIn(16, 65_536)),
    maxLoginStartSize: l.get('max_login_start_size', dl.maxLoginStartSize, intIn(16, 65_536)),
    maxPacketSize: l.get('max_packet_size', dl.maxPacketSize, intIn(64, MAX_FRAME_SIZE)),
    maxConnectionsPerIp: l.get('max_connections_per_ip', dl.maxConnectionsPerIp, intIn(0, 1_000_000)),
    maxPlayersPerIp: l.get('max_players_per_ip', dl.maxPlayersPerIp, intIn(0, 1_000_000)),
    loginRatelimitMs: l.get('login_ratelimit', dl.loginRatelimitMs, duration(0, 3_600_000)),
    wakeHoldTimeoutMs: l.get('wake_hold_timeout', dl.wakeHoldTimeoutMs, duration(1000, 29_000)),
    backendDialTimeoutMs: l.get('backend_dial_timeout', dl.backendDialTimeoutMs, duration(50, 30_000)),
  };

  const p = root.section('proxy-protocol', ['send_to_backends', 'trusted_cidrs']);
  const proxyProtocol: ProxyProtocolConfig = {
    sendToBackends: p.get('send_to_backends', false, bool),
    trustedCidrs: p.get('trusted_cidrs', [], (v) => stringList(v).map((c) => parseCidr(c).text)),
  };

  const mt = root.section('metrics', ['bind']);
  const metrics = mt.has('bind') ? mt.get('bind', undefined, (v) => parseHostPort(str(v))) : undefined;

  return metrics
    ? { bind, routing, status, messages, limits, proxyProtocol, metrics }
    : { bind, routing, status, messages, limits, proxyProtocol };
}

/** Loads the whole router configuration from the environment and the TOML file it names. */
export function loadRouterConfig(
  env: Env = process.env,
  readFile: (path: string) => string = (p) => readFileSync(p, 'utf8'),
  defaultRouterId: () => string = hostname,
): Readonly<RouterConfig> {
  const reader = new EnvReader(env);
  const configPath = reader.required('ENDERCLOUD_ROUTER_CONFIG', asString);
  let text: string;
  try {
    text = readFile(configPath);
  } catch (err) {
    throw new ConfigError('ENDERCLOUD_ROUTER_CONFIG', `cannot read ${configPath}: ${(err as Error).message}`);
  }
  const file = parseRouterToml(text, configPath);
  const orchestratorUrl = reader.optional('ENDERCLOUD_ORCHESTRATOR_URL', parseUrl);
  const routerToken = reader.optional('ENDERCLOUD_ROUTER_TOKEN', asString);
  const routerId = reader.optional('ENDERCLOUD_ROUTER_ID', parseRouterId) ?? fallbackRouterId(defaultRouterId());
  const config: RouterConfig = { ...file, configPath, routerId };
  if (orchestratorUrl !== undefined) config.orchestratorUrl = orchestratorUrl;
  if (routerToken !== undefined) config.routerToken = routerToken;
  return freeze(config);
}

function parseRouterId(value: string): string {
  const id = value.trim();
  if (!isValidId(id)) throw new Error(`"${value}" is not a valid id (letters, digits, "_", ".", "-"; at most 128 characters)`);
  return id;
}

/** The hostname, made a valid id (containers may have odd hostnames); "router" when nothing is left. */
function fallbackRouterId(host: string): string {
  const id = host
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 128);
  return isValidId(id) ? id : 'router';
}

/**
 * Re-reads the TOML file of a running router (SIGHUP, file change). The environment part
 * (orchestrator URL, token, router id) stays; throws ConfigError naming the problem.
 */
export function reloadRouterConfig(
  previous: Readonly<RouterConfig>,
  readFile: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): Readonly<RouterConfig> {
  let text: string;
  try {
    text = readFile(previous.configPath);
  } catch (err) {
    throw new ConfigError(previous.configPath, `cannot read: ${(err as Error).message}`);
  }
  const file = parseRouterToml(text, previous.configPath);
  const config: RouterConfig = { ...file, configPath: previous.configPath, routerId: previous.routerId };
  if (previous.orchestratorUrl !== undefined) config.orchestratorUrl = previous.orchestratorUrl;
  if (previous.routerToken !== undefined) config.routerToken = previous.routerToken;
  return freeze(config);
}

/** Keys a reload cannot change in a running process (listeners are bound once). */
export function restartOnlyChanges(before: RouterFileConfig, after: RouterFileConfig): string[] {
  const out: string[] = [];
  const same = (a: HostPort | undefined, b: HostPort | undefined): boolean => a?.host === b?.host && a?.port === b?.port;
  if (!same(before.bind, after.bind)) out.push('bind');
  if (!same(before.metrics, after.metrics)) out.push('metrics.bind');
  return out;
}
