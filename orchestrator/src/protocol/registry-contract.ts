// The router ⇄ orchestrator contract (docs/router.md, "Orchestrator contract"):
// paths, JSON shapes and tiny validators both sides import. Pure: no I/O.

export const REGISTRY_PATH = '/api/v1/registry';
export const REGISTRY_STREAM_PATH = '/api/v1/registry/stream';
export const TRANSFER_CLAIM_PATH = '/api/v1/transfers/claim';
export const ROUTER_SESSIONS_PATH = '/api/v1/router/sessions';
export const instanceActionPath = (instanceId: string, action: WakeAction): string =>
  `/api/v1/instances/${encodeURIComponent(instanceId)}/${action}`;
/** A join to a `group:<id>` target: the orchestrator picks (or wakes, starts, spawns) the instance. */
export const groupJoinPath = (groupId: string): string => `/api/v1/router/groups/${encodeURIComponent(groupId)}/join`;
/** Router-scoped transfer request: moves a player (RCON `transfer`) to an instance once it is online. */
export const ROUTER_TRANSFERS_PATH = '/api/v1/router/transfers';
/** The token scope every endpoint above requires. */
export const ROUTER_SCOPE = 'router';

/** The orchestrator sends a `: keepalive` comment this often on the stream. */
export const KEEPALIVE_INTERVAL_MS = 15_000;
/** SSE event names on the stream, in order: one `snapshot`, then `upsert`/`remove`. */
export const STREAM_EVENTS = ['snapshot', 'upsert', 'remove'] as const;
export type StreamEventName = (typeof STREAM_EVENTS)[number];

/**
 * Routing view of an instance: Paused is routable after a wake; Stale is routed around;
 * Draining takes nobody new (no joins, no transfers to it) while its current players stay.
 */
export const REGISTRY_STATUSES = ['Running', 'Starting', 'Paused', 'Stopped', 'Stale', 'Draining'] as const;
export type RegistryStatus = (typeof REGISTRY_STATUSES)[number];

export interface RegistryBackend {
  instanceId: string;
  /** The instance's human name (unique); what `accept_registry_backends` matches. */
  name: string;
  groupId: string;
  sessionId: string | null;
  status: RegistryStatus;
  /** `host:port` players reach it at (IPv6 as `[addr]:port`); null while it has none. */
  address: string | null;
  players: { online: number; max: number } | null;
  maintenance: boolean;
  full: boolean;
  acceptsTransfers: boolean;
  /** Estimated ms until Running: a full start when Stopped, the remainder when Starting; null = unknown. */
  expectedStartMs: number | null;
}

export interface RegistrySnapshot {
  revision: number;
  backends: RegistryBackend[];
}

/** Each change raises the revision by exactly 1, so a skipped number is a detectable gap. */
export interface RegistryUpsert {
  revision: number;
  backend: RegistryBackend;
}

export interface RegistryRemove {
  revision: number;
  instanceId: string;
}

export type WakeAction = 'resume' | 'start';

/**
 * 202 answer to POST /instances/:id/resume|start. `commandId` is null when the
 * instance was already running or waking (start is idempotent): the router then
 * just waits for Running like after any other wake.
 */
export interface WakeAccepted {
  commandId: string | null;
}

/** Body of POST groupJoinPath(groupId). */
export interface GroupJoinRequest {
  player: string;
  uuid?: string;
}

/**
 * 200 answer to a group join. `route`: a Running instance with room; `wake`: a Paused one was
 * resumed; `start`: a Stopped/archived one was started; `spawn`: a new one was created within the
 * group's caps. The router waits for `instanceId` to be Running in the registry, as after a wake.
 * When nothing can be had the answer is 409 `{error:{code: CAPACITY_EXHAUSTED | CAP_REACHED}}`.
 */
export interface GroupJoinAnswer {
  instanceId: string;
  action: 'route' | 'wake' | 'start' | 'spawn';
  commandId: string | null;
}

export const GROUP_JOIN_ACTIONS = ['route', 'wake', 'start', 'spawn'] as const;

/** Body of POST ROUTER_TRANSFERS_PATH (answered 201/202): move `player` to `instanceId` now. */
export interface RouterTransferRequest {
  player: string;
  uuid?: string;
  instanceId: string;
}

export interface TransferClaimRequest {
  player: string;
  uuid?: string;
}

/** 200 answer to POST /transfers/claim (404 when the player has no pending transfer). */
export interface TransferClaim {
  transferId: string;
  instanceId: string;
  /** Where to send the player; null when the instance has no address yet (the router asks the registry). */
  address: string | null;
}

export type RouterSessionEventType = 'login' | 'denied' | 'disconnect';

export interface RouterSessionEvent {
  type: RouterSessionEventType;
  /** Router-side session id: a login and its disconnect share it; (routerId, id, type) is unique. */
  id: string;
  player: string;
  uuid: string | null;
  instanceId: string | null;
  /** `[servers]` or registry name of the backend; null when none was chosen (denied). */
  backend: string | null;
  /** ISO 8601. */
  at: string;
  reason?: string;
}

/**
 * Body of POST /router/sessions (answered 204). With `reset: true` the orchestrator first closes
 * every open session of this routerId, then applies `events` — the router sets it on its first
 * batch after start and repeats it until one is accepted.
 */
export interface RouterSessionsBatch {
  routerId: string;
  reset?: boolean;
  events: RouterSessionEvent[];
}

export const MAX_SESSION_EVENTS_PER_BATCH = 500;

// ---- validators: throw ContractError naming the field ----

export class ContractError extends Error {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'ContractError';
  }
}

type Obj = Record<string, unknown>;

function obj(v: unknown, field: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ContractError(field, 'must be an object');
  return v as Obj;
}
function str(o: Obj, key: string, field: string, max = 256): string {
  const v = o[key];
  if (typeof v !== 'string' || v.length === 0 || v.length > max)
    throw new ContractError(`${field}.${key}`, `must be a non-empty string of at most ${max} characters`);
  return v;
}
function strOrNull(o: Obj, key: string, field: string): string | null {
  return o[key] === null ? null : str(o, key, field);
}
function bool(o: Obj, key: string, field: string): boolean {
  if (typeof o[key] !== 'boolean') throw new ContractError(`${field}.${key}`, 'must be true or false');
  return o[key] as boolean;
}
function nonNegInt(o: Obj, key: string, field: string): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new ContractError(`${field}.${key}`, 'must be a non-negative integer');
  return v;
}

/** Splits `host:port` / `[v6]:port`; undefined when malformed. */
export function splitAddress(address: string): { host: string; port: number } | undefined {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(address) ?? /^([^:\s[\]]+):(\d{1,5})$/.exec(address);
  if (!m) return undefined;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: m[1]!, port } : undefined;
}

function address(o: Obj, key: string, field: string): string | null {
  const v = strOrNull(o, key, field);
  if (v !== null && !splitAddress(v)) throw new ContractError(`${field}.${key}`, `"${v}" is not host:port`);
  return v;
}

export function parseRegistryBackend(v: unknown, field = 'backend'): RegistryBackend {
  const o = obj(v, field);
  const status = o.status;
  if (!(REGISTRY_STATUSES as readonly unknown[]).includes(status))
    throw new ContractError(`${field}.status`, `must be one of ${REGISTRY_STATUSES.join(', ')}`);
  let players: RegistryBackend['players'] = null;
  if (o.players !== null) {
    const p = obj(o.players, `${field}.players`);
    players = { online: nonNegInt(p, 'online', `${field}.players`), max: nonNegInt(p, 'max', `${field}.players`) };
  }
  return {
    instanceId: str(o, 'instanceId', field, 128),
    name: str(o, 'name', field, 128),
    groupId: str(o, 'groupId', field, 128),
    sessionId: strOrNull(o, 'sessionId', field),
    status: status as RegistryStatus,
    address: address(o, 'address', field),
    players,
    maintenance: bool(o, 'maintenance', field),
    full: bool(o, 'full', field),
    acceptsTransfers: bool(o, 'acceptsTransfers', field),
    expectedStartMs: o.expectedStartMs === null ? null : nonNegInt(o, 'expectedStartMs', field),
  };
}

export function parseRegistrySnapshot(v: unknown): RegistrySnapshot {
  const o = obj(v, 'snapshot');
  if (!Array.isArray(o.backends)) throw new ContractError('snapshot.backends', 'must be an array');
  return {
    revision: nonNegInt(o, 'revision', 'snapshot'),
    backends: o.backends.map((b, i) => parseRegistryBackend(b, `snapshot.backends[${i}]`)),
  };
}

export function parseRegistryUpsert(v: unknown): RegistryUpsert {
  const o = obj(v, 'upsert');
  return { revision: nonNegInt(o, 'revision', 'upsert'), backend: parseRegistryBackend(o.backend, 'upsert.backend') };
}

export function parseRegistryRemove(v: unknown): RegistryRemove {
  const o = obj(v, 'remove');
  return { revision: nonNegInt(o, 'revision', 'remove'), instanceId: str(o, 'instanceId', 'remove', 128) };
}

export function parseWakeAccepted(v: unknown): WakeAccepted {
  return { commandId: strOrNull(obj(v, 'body'), 'commandId', 'body') };
}

export function parseGroupJoinAnswer(v: unknown): GroupJoinAnswer {
  const o = obj(v, 'join');
  if (!(GROUP_JOIN_ACTIONS as readonly unknown[]).includes(o.action))
    throw new ContractError('join.action', `must be one of ${GROUP_JOIN_ACTIONS.join(', ')}`);
  return {
    instanceId: str(o, 'instanceId', 'join', 128),
    action: o.action as GroupJoinAnswer['action'],
    commandId: strOrNull(o, 'commandId', 'join'),
  };
}

export function parseGroupJoinRequest(v: unknown): GroupJoinRequest {
  const o = obj(v, 'body');
  const player = str(o, 'player', 'body', 16);
  return o.uuid === undefined ? { player } : { player, uuid: str(o, 'uuid', 'body', 36) };
}

export function parseRouterTransferRequest(v: unknown): RouterTransferRequest {
  const o = obj(v, 'body');
  const base = { player: str(o, 'player', 'body', 16), instanceId: str(o, 'instanceId', 'body', 128) };
  return o.uuid === undefined ? base : { ...base, uuid: str(o, 'uuid', 'body', 36) };
}

export function parseTransferClaim(v: unknown): TransferClaim {
  const o = obj(v, 'claim');
  return {
    transferId: str(o, 'transferId', 'claim'),
    instanceId: str(o, 'instanceId', 'claim', 128),
    address: address(o, 'address', 'claim'),
  };
}

export function parseTransferClaimRequest(v: unknown): TransferClaimRequest {
  const o = obj(v, 'body');
  const player = str(o, 'player', 'body', 16);
  return o.uuid === undefined ? { player } : { player, uuid: str(o, 'uuid', 'body', 36) };
}

const SESSION_TYPES: readonly unknown[] = ['login', 'denied', 'disconnect'];

export function parseRouterSessionsBatch(v: unknown): RouterSessionsBatch {
  const o = obj(v, 'body');
  if (!Array.isArray(o.events)) throw new ContractError('body.events', 'must be an array');
  if (o.events.length > MAX_SESSION_EVENTS_PER_BATCH)
    throw new ContractError('body.events', `at most ${MAX_SESSION_EVENTS_PER_BATCH} events per batch`);
  const events = o.events.map((e, i): RouterSessionEvent => {
    const f = `body.events[${i}]`;
    const eo = obj(e, f);
    if (!SESSION_TYPES.includes(eo.type)) throw new ContractError(`${f}.type`, 'must be login, denied or disconnect');
    if (Number.isNaN(Date.parse(str(eo, 'at', f, 64)))) throw new ContractError(`${f}.at`, 'must be an ISO 8601 time');
    const event: RouterSessionEvent = {
      type: eo.type as RouterSessionEventType,
      id: str(eo, 'id', f, 128),
      player: str(eo, 'player', f, 16),
      uuid: strOrNull(eo, 'uuid', f),
      instanceId: strOrNull(eo, 'instanceId', f),
      backend: strOrNull(eo, 'backend', f),
      at: eo.at as string,
    };
    if (eo.reason !== undefined) event.reason = str(eo, 'reason', f, 512);
    return event;
  });
  const batch: RouterSessionsBatch = { routerId: str(o, 'routerId', 'body', 128), events };
  if (o.reset !== undefined) batch.reset = bool(o, 'reset', 'body');
  return batch;
}

/** One SSE event as the orchestrator writes it (data is one JSON line). */
export function formatSseEvent(event: StreamEventName, data: RegistrySnapshot | RegistryUpsert | RegistryRemove): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export const SSE_KEEPALIVE = ': keepalive\n\n';
