// Routing with an orchestrator: `[servers]` entries (host:port, instance:<id or
// name>, group:<id>) filtered by the registry. Initial joins use only the
// configured pool; a pending transfer (claimed on login) is how a registry-only
// backend is reached. `planRoute` is the pure decision; the resolver adds only
// the transfer claim. Wakes and joins are the WakeCoordinator's, run by the connection.

import type { Logger } from '../shared/logger.js';
import { splitAddress, type RegistryBackend, type RegistryStatus, type TransferClaim } from '../protocol/registry-contract.js';
import type { MessagesConfig, RoutingConfig, ServerEntry } from './config.js';
import type { RegistryReader } from './registry-state.js';
import type { BackendResolver, BackendTarget, Player, RoutePlan, RouteRequest } from './resolver.js';

/** A target from the registry: carries its instance id (for session reports) and reads its address at dial time. */
export interface RegistryTarget extends BackendTarget {
  readonly instanceId: string;
}

export function instanceIdOf(target: BackendTarget | undefined): string | undefined {
  const id = target?.instanceId;
  return typeof id === 'string' ? id : undefined;
}

/** `instance:<ref>`: the id first, then the (unique) instance name. */
export function lookupInstance(registry: RegistryReader, ref: string): RegistryBackend | undefined {
  return registry.get(ref) ?? registry.backends().find((b) => b.name === ref);
}

/**
 * The address is read from the registry when dialled, so a login held while an instance starts
 * dials the port it came up on (a start may change it), falling back to the last known one.
 */
export function registryTarget(
  name: string,
  instanceId: string,
  registry: RegistryReader,
  fallbackAddress: string | null = registry.get(instanceId)?.address ?? null,
): RegistryTarget {
  const current = (): { host: string; port: number } => {
    const address = registry.get(instanceId)?.address ?? fallbackAddress;
    return (address ? splitAddress(address) : undefined) ?? { host: '0.0.0.0', port: 0 };
  };
  return {
    name,
    instanceId,
    get host() {
      return current().host;
    },
    get port() {
      return current().port;
    },
  };
}

export interface PlanOptions {
  holdTimeoutMs: number;
  /** Room left in the hold for the dial and login after Running (default 2 s). */
  holdSlackMs: number;
  messages: Pick<MessagesConfig, 'noBackend' | 'unreachable' | 'starting' | 'full' | 'maintenance'>;
}

type Option =
  | { kind: 'static'; target: BackendTarget }
  | { kind: 'registry'; name: string; backend: RegistryBackend }
  | { kind: 'group'; name: string; groupId: string; members: RegistryBackend[] };

const RANK: Record<RegistryStatus, number> = { Running: 0, Paused: 1, Starting: 2, Stopped: 3, Draining: 4, Stale: 5 };

/** Group members best first: Running (fullest first, so idle ones can empty and sleep), then Paused, Starting, Stopped. */
function rankGroup(members: RegistryBackend[]): RegistryBackend[] {
  return members.sort(
    (a, b) => RANK[a.status] - RANK[b.status] || (b.players?.online ?? 0) - (a.players?.online ?? 0) || a.name.localeCompare(b.name),
  );
}

function optionFor(name: string, entry: ServerEntry, registry: RegistryReader): Option | undefined {
  if (entry.kind === 'address') return { kind: 'static', target: { name, host: entry.host, port: entry.port } };
  if (entry.kind === 'instance') {
    const backend = lookupInstance(registry, entry.id);
    return backend ? { kind: 'registry', name, backend } : undefined;
  }
  // A group with no members is still an option: a fleet scaled to zero is spawned into by a join.
  return { kind: 'group', name, groupId: entry.id, members: rankGroup(registry.backends().filter((b) => b.groupId === entry.id)) };
}

/** The configured pool for an address, expanded through the registry, in order. `unknown` counts entries the registry does not know. */
export function candidatePool(
  routing: RoutingConfig,
  serverAddress: string,
  registry: RegistryReader,
): { options: Option[]; unknown: number } {
  const options: Option[] = [];
  let unknown = 0;
  const forced = routing.forcedHosts[serverAddress];
  if (!forced && routing.acceptRegistryBackends) {
    // Opt-in only: a registry backend named like the address's first label (wildcard DNS) comes first.
    const label = serverAddress.split('.')[0] ?? '';
    const named = registry.backends().find((b) => b.name.toLowerCase() === label || b.name.toLowerCase() === serverAddress);
    if (named) options.push({ kind: 'registry', name: named.name, backend: named });
  }
  for (const name of forced ?? routing.try) {
    const entry = routing.servers[name];
    if (!entry) continue;
    const option = optionFor(name, entry, registry);
    if (option) options.push(option);
    if (!option || (option.kind === 'group' && option.members.length === 0)) unknown++;
  }
  return { options, unknown };
}

function startingMessage(template: string, expectedStartMs: number | null): string {
  return template.replace(/\{seconds\}/g, String(expectedStartMs === null ? 30 : Math.max(1, Math.ceil(expectedStartMs / 1000))));
}

/** Where `[wake] fallback` sends a player now: its routable targets (none: no fallback). */
export function fallbackTargets(routing: RoutingConfig, registry: RegistryReader, exceptInstance?: string): BackendTarget[] {
  const entry = routing.fallback !== undefined ? routing.servers[routing.fallback] : undefined;
  if (!entry || routing.fallback === undefined) return [];
  const option = optionFor(routing.fallback, entry, registry);
  if (!option) return [];
  if (option.kind === 'static') return [option.target];
  const members = option.kind === 'registry' ? [option.backend] : option.members;
  return members
    .filter((b) => b.status === 'Running' && b.address !== null && !b.maintenance && !b.full && b.instanceId !== exceptInstance)
    .map((b) => registryTarget(option.name, b.instanceId, registry));
}

interface Context {
  intent: RouteRequest['intent'];
  registry: RegistryReader;
  routing: RoutingConfig;
  opts: PlanOptions;
}

/** Skipped for joins (status pings still see them). */
function closedToJoins(b: RegistryBackend): 'maintenance' | 'full' | 'draining' | undefined {
  if (b.maintenance) return 'maintenance';
  if (b.status === 'Draining') return 'draining';
  if (b.full) return 'full';
  return undefined;
}

/** What one instance means for a login (or, for status, which local answer). Undefined: route around it. */
function planInstance(name: string, backend: RegistryBackend, ctx: Context): RoutePlan | undefined {
  const { intent, registry, opts } = ctx;
  const fits = (ms: number | null): boolean => ms !== null && ms <= opts.holdTimeoutMs - opts.holdSlackMs;
  const target = (): BackendTarget => registryTarget(name, backend.instanceId, registry);
  const fallback = (): BackendTarget[] => fallbackTargets(ctx.routing, registry, backend.instanceId);
  const withFallback = (): { fallback?: BackendTarget[] } => {
    const f = fallback();
    return f.length > 0 ? { fallback: f } : {};
  };
  switch (backend.status) {
    case 'Stale':
      return undefined;
    case 'Running':
    case 'Draining':
      return backend.address ? { kind: 'route', candidates: [target()] } : undefined;
    case 'Paused':
      if (intent === 'status') return { kind: 'status', state: 'Paused' };
      return { kind: 'wake', instanceId: backend.instanceId, action: 'resume', target: target(), ...withFallback() };
    case 'Starting': {
      if (intent === 'status') return { kind: 'status', state: 'Starting' };
      // Unknown remaining time: wait within the hold; known and too long: the fallback, or say when to come back.
      if (backend.expectedStartMs === null || fits(backend.expectedStartMs))
        return { kind: 'hold', instanceId: backend.instanceId, target: target(), ...withFallback() };
      const f = fallback();
      if (f.length > 0) return { kind: 'fallback', instanceId: backend.instanceId, action: null, candidates: f };
      return {
        kind: 'refuse',
        reason: 'starting',
        message: startingMessage(opts.messages.starting, backend.expectedStartMs),
        start: { instanceId: backend.instanceId, action: null },
      };
    }
    case 'Stopped': {
      if (intent === 'status') return { kind: 'status', state: 'Stopped' };
      if (fits(backend.expectedStartMs))
        return { kind: 'wake', instanceId: backend.instanceId, action: 'start', target: target(), ...withFallback() };
      const f = fallback();
      if (f.length > 0) return { kind: 'fallback', instanceId: backend.instanceId, action: 'start', candidates: f };
      return {
        kind: 'refuse',
        reason: 'starting',
        message: startingMessage(opts.messages.starting, backend.expectedStartMs),
        start: { instanceId: backend.instanceId, action: 'start' },
      };
    }
  }
}

/**
 * A group: its Running members as dial candidates; none Running but some asleep, or no members at
 * all (a fleet scaled to zero): a join — the orchestrator picks, wakes, starts or spawns one, and
 * the login is held like any wake. Members that are all Stale, Draining, full or in maintenance are
 * routed around as before (the pool's refusal says why).
 */
function planGroup(option: Extract<Option, { kind: 'group' }>, ctx: Context, skipped: (why: string) => void): RoutePlan | undefined {
  const open = option.members.filter((b) => {
    if (b.status === 'Stale') return false;
    const why = closedToJoins(b);
    if (why && !(ctx.intent === 'status' && why !== 'maintenance')) {
      skipped(why);
      return false;
    }
    return true;
  });
  const running = open.filter((b) => (b.status === 'Running' || b.status === 'Draining') && b.address !== null);
  if (running.length > 0) return { kind: 'route', candidates: running.map((b) => registryTarget(option.name, b.instanceId, ctx.registry)) };
  const asleep = open.find((b) => b.status === 'Paused' || b.status === 'Starting' || b.status === 'Stopped');
  if (asleep && ctx.intent === 'status') return planInstance(option.name, asleep, ctx);
  if (!asleep) {
    // Empty only as far as a synced registry knows; before the first snapshot the pool says "unreachable".
    const empty = ctx.registry.synced && option.members.length === 0;
    if (!empty) return undefined;
    if (ctx.intent === 'status') return { kind: 'status', state: 'Stopped' };
  }
  const f = fallbackTargets(ctx.routing, ctx.registry);
  return f.length > 0
    ? { kind: 'join-group', groupId: option.groupId, name: option.name, fallback: f }
    : { kind: 'join-group', groupId: option.groupId, name: option.name };
}

/**
 * Initial join (or status): the first backend of the pool that is not routed around decides.
 * Running → route, with the later Running backends as dial fallbacks; Paused/Starting/Stopped →
 * wake, hold, start or fall back (status: the local answer for that state); a group without a
 * Running member but with sleeping ones, or with no members at all → join (status of an empty
 * group: Stopped). Stale, maintenance, Draining and (for logins) full backends are skipped.
 */
export function planRoute(
  request: Pick<RouteRequest, 'intent' | 'serverAddress'>,
  routing: RoutingConfig,
  registry: RegistryReader,
  opts: PlanOptions,
): RoutePlan {
  const ctx: Context = { intent: request.intent, registry, routing, opts };
  const { options, unknown } = candidatePool(routing, request.serverAddress, registry);
  const skipped = new Set<string>();
  let first: RoutePlan | undefined;
  const fallbacks: BackendTarget[] = [];
  for (const option of options) {
    let plan: RoutePlan | undefined;
    if (option.kind === 'static') plan = { kind: 'route', candidates: [option.target] };
    else if (option.kind === 'group') plan = planGroup(option, ctx, (why) => skipped.add(why));
    else {
      const why = closedToJoins(option.backend);
      if (why && !(request.intent === 'status' && why !== 'maintenance')) {
        skipped.add(why);
        continue;
      }
      plan = planInstance(option.name, option.backend, ctx);
    }
    if (!plan) continue;
    if (!first) first = plan;
    else if (first.kind === 'route' && plan.kind === 'route') fallbacks.push(...plan.candidates);
  }
  if (first?.kind === 'route') return { kind: 'route', candidates: [...first.candidates, ...fallbacks] };
  if (first) return first;
  // Nothing routable: say why, as precisely as we know.
  const notSynced = unknown > 0 && !registry.synced;
  if (request.intent === 'status') return { kind: 'status', state: notSynced || skipped.has('maintenance') ? 'Unreachable' : 'NoBackend' };
  if (skipped.has('full')) return { kind: 'refuse', reason: 'full', message: opts.messages.full };
  if (skipped.has('maintenance')) return { kind: 'refuse', reason: 'maintenance', message: opts.messages.maintenance };
  if (notSynced) return { kind: 'refuse', reason: 'unreachable', message: opts.messages.unreachable };
  return { kind: 'refuse', reason: 'no_backend', message: opts.messages.noBackend };
}

/**
 * A claimed transfer: its instance decides (whatever `[servers]` says — the orchestrator chose it);
 * Stale and Draining are routed around (undefined: fall back to the pool). Unknown to the registry
 * yet: the claim's address.
 */
export function planTransfer(
  claim: TransferClaim,
  routing: RoutingConfig,
  registry: RegistryReader,
  opts: PlanOptions,
): RoutePlan | undefined {
  const backend = registry.get(claim.instanceId);
  if (backend)
    return backend.status === 'Draining' ? undefined : planInstance(backend.name, backend, { intent: 'login', registry, routing, opts });
  const address = claim.address ? splitAddress(claim.address) : undefined;
  if (!address) return undefined;
  const target: RegistryTarget = { name: claim.instanceId, instanceId: claim.instanceId, ...address };
  return { kind: 'route', candidates: [target] };
}

/** `[servers]` entries the registry does not know, one line each naming the entry (warned at start and reload). */
export function unknownTargets(routing: RoutingConfig, registry: RegistryReader): string[] {
  const out: string[] = [];
  for (const [name, entry] of Object.entries(routing.servers)) {
    if (entry.kind === 'instance' && !lookupInstance(registry, entry.id))
      out.push(`servers.${name}: "instance:${entry.id}" matches no instance id or name in the registry`);
    if (entry.kind === 'group' && !registry.backends().some((b) => b.groupId === entry.id)) {
      out.push(
        `servers.${name}: "group:${entry.id}" has no instances in the registry (a login asks the orchestrator to spawn one; a group it does not know is refused as no-backend)`,
      );
    }
  }
  return out;
}

/** Claims the player's pending transfer; undefined when none (or the orchestrator cannot say). */
export interface TransferClaimer {
  claimTransfer(player: Player): Promise<TransferClaim | undefined>;
}

export interface RegistryResolverDeps {
  routing: RoutingConfig;
  registry: RegistryReader;
  messages: PlanOptions['messages'];
  holdTimeoutMs: number;
  holdSlackMs?: number;
  transfers?: TransferClaimer;
  logger: Logger;
}

export class RegistryResolver implements BackendResolver {
  private readonly opts: PlanOptions;

  constructor(private readonly deps: RegistryResolverDeps) {
    this.opts = { holdTimeoutMs: deps.holdTimeoutMs, holdSlackMs: deps.holdSlackMs ?? 2000, messages: deps.messages };
  }

  get routing(): RoutingConfig {
    return this.deps.routing;
  }

  async resolve(request: RouteRequest): Promise<RoutePlan> {
    let plan: RoutePlan | undefined;
    if (request.intent !== 'status' && request.player) plan = await this.transferPlan(request.player);
    return plan ?? planRoute(request, this.deps.routing, this.deps.registry, this.opts);
  }

  /** Claims are asked only while the registry stream is up: a down orchestrator must not slow every login. */
  private async transferPlan(player: Player): Promise<RoutePlan | undefined> {
    if (!this.deps.transfers || !this.deps.registry.connected) return undefined;
    let claim: TransferClaim | undefined;
    try {
      claim = await this.deps.transfers.claimTransfer(player);
    } catch (err) {
      this.deps.logger.warn({ player: player.name, err: (err as Error).message }, 'transfer claim failed; routing as an initial join');
      return undefined;
    }
    if (!claim) return undefined;
    const plan = planTransfer(claim, this.deps.routing, this.deps.registry, this.opts);
    this.deps.logger.info(
      { player: player.name, transfer: claim.transferId, instance: claim.instanceId, plan: plan?.kind ?? 'pool' },
      'transfer claimed',
    );
    return plan;
  }
}
