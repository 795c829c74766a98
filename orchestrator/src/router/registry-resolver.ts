// Routing with an orchestrator: `[servers]` entries (host:port, instance:<id>,
// group:<id>) filtered by the registry. Initial joins use only the configured
// pool; a pending transfer (claimed on login) is how a registry-only backend is
// reached. `planRoute` is the pure decision; the class adds the I/O (claim, wake).

import type { Logger } from '../shared/logger.js';
import { splitAddress, type RegistryBackend, type RegistryStatus, type TransferClaim, type WakeAction } from '../protocol/registry-contract.js';
import type { MessagesConfig, RoutingConfig } from './config.js';
import type { WakeRequester } from './orchestrator-waker.js';
import type { RegistryReader } from './registry-state.js';
import type { BackendResolver, BackendTarget, LocalStatusState, Player, RouteDecision, RouteRequest } from './resolver.js';

/** A target from the registry: carries its instance id (for session reports) and reads its address at dial time. */
export interface RegistryTarget extends BackendTarget {
  readonly instanceId: string;
}

export function instanceIdOf(target: BackendTarget | undefined): string | undefined {
  const id = (target as Partial<RegistryTarget> | undefined)?.instanceId;
  return typeof id === 'string' ? id : undefined;
}

/**
 * The address is read from the registry when dialled, so a login held while an instance starts
 * dials the port it came up on (a start may change it), falling back to the last known one.
 */
export function registryTarget(name: string, backend: RegistryBackend, registry: RegistryReader, fallbackAddress: string | null = backend.address): RegistryTarget {
  const current = (): { host: string; port: number } => {
    const address = registry.get(backend.instanceId)?.address ?? fallbackAddress;
    return (address ? splitAddress(address) : undefined) ?? { host: '0.0.0.0', port: 0 };
  };
  return {
    name,
    instanceId: backend.instanceId,
    get host() {
      return current().host;
    },
    get port() {
      return current().port;
    },
  };
}

export type Plan =
  | { kind: 'connect'; candidates: BackendTarget[] }
  | { kind: 'status'; state: LocalStatusState }
  /** Hold the login; `action` is what to ask the orchestrator first (null: already Starting). */
  | { kind: 'wake'; instanceId: string; action: WakeAction | null; target: RegistryTarget }
  /** Ask for a start (unless `action` is null) and disconnect with `message`. */
  | { kind: 'start'; instanceId: string; action: WakeAction | null; message: string }
  | { kind: 'refuse'; message: string };

export interface PlanOptions {
  holdTimeoutMs: number;
  /** Room left in the hold for the dial and login after Running (default 2 s). */
  holdSlackMs: number;
  messages: Pick<MessagesConfig, 'noBackend' | 'unreachable' | 'starting' | 'full' | 'maintenance'>;
}

type Option = { kind: 'static'; target: BackendTarget } | { kind: 'registry'; name: string; backend: RegistryBackend };

const RANK: Record<RegistryStatus, number> = { Running: 0, Paused: 1, Starting: 2, Stopped: 3, Stale: 4 };

/** Group members best first: Running (fullest first, so idle ones can empty and sleep), then Paused, Starting, Stopped. */
function rankGroup(members: RegistryBackend[]): RegistryBackend[] {
  return members.sort((a, b) => RANK[a.status] - RANK[b.status] || (b.players?.online ?? 0) - (a.players?.online ?? 0) || a.name.localeCompare(b.name));
}

/** The configured pool for an address, expanded through the registry, in order. */
export function candidatePool(routing: RoutingConfig, serverAddress: string, registry: RegistryReader): { options: Option[]; unknown: number } {
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
    if (entry.kind === 'address') {
      options.push({ kind: 'static', target: { name, host: entry.host, port: entry.port } });
    } else if (entry.kind === 'instance') {
      const backend = registry.get(entry.id);
      if (backend) options.push({ kind: 'registry', name, backend });
      else unknown++;
    } else {
      const members = registry.backends().filter((b) => b.groupId === entry.id);
      if (members.length === 0) unknown++;
      for (const backend of rankGroup(members)) options.push({ kind: 'registry', name, backend });
    }
  }
  return { options, unknown };
}

function startingMessage(template: string, expectedStartMs: number | null): string {
  return template.replace(/\{seconds\}/g, String(expectedStartMs === null ? 30 : Math.max(1, Math.ceil(expectedStartMs / 1000))));
}

/** What one backend means for a login (or, for status, which local answer). Undefined: route around it. */
function planFor(option: Option, intent: RouteRequest['intent'], registry: RegistryReader, opts: PlanOptions): Plan | undefined {
  if (option.kind === 'static') return { kind: 'connect', candidates: [option.target] };
  const { backend, name } = option;
  const fits = (ms: number | null): boolean => ms !== null && ms <= opts.holdTimeoutMs - opts.holdSlackMs;
  switch (backend.status) {
    case 'Stale':
      return undefined;
    case 'Running':
      return backend.address ? { kind: 'connect', candidates: [registryTarget(name, backend, registry)] } : undefined;
    case 'Paused':
      if (intent === 'status') return { kind: 'status', state: 'Paused' };
      return { kind: 'wake', instanceId: backend.instanceId, action: 'resume', target: registryTarget(name, backend, registry) };
    case 'Starting':
      if (intent === 'status') return { kind: 'status', state: 'Starting' };
      // Unknown remaining time: wait within the hold; known and too long: say when to come back.
      if (backend.expectedStartMs === null || fits(backend.expectedStartMs)) return { kind: 'wake', instanceId: backend.instanceId, action: null, target: registryTarget(name, backend, registry) };
      return { kind: 'start', instanceId: backend.instanceId, action: null, message: startingMessage(opts.messages.starting, backend.expectedStartMs) };
    case 'Stopped':
      if (intent === 'status') return { kind: 'status', state: 'Stopped' };
      if (fits(backend.expectedStartMs)) return { kind: 'wake', instanceId: backend.instanceId, action: 'start', target: registryTarget(name, backend, registry) };
      return { kind: 'start', instanceId: backend.instanceId, action: 'start', message: startingMessage(opts.messages.starting, backend.expectedStartMs) };
  }
}

/**
 * Initial join (or status): the first backend of the pool that is not routed around decides.
 * Running → connect, with the later Running backends as dial fallbacks; Paused/Starting/Stopped →
 * wake, wait or start it (status: the local answer for that state). Stale, maintenance and (for
 * logins) full backends are skipped.
 */
export function planRoute(request: Pick<RouteRequest, 'intent' | 'serverAddress'>, routing: RoutingConfig, registry: RegistryReader, opts: PlanOptions): Plan {
  const { options, unknown } = candidatePool(routing, request.serverAddress, registry);
  let skippedFull = false;
  let skippedMaintenance = false;
  let first: Plan | undefined;
  const fallbacks: BackendTarget[] = [];
  for (const option of options) {
    if (option.kind === 'registry') {
      if (option.backend.maintenance) {
        skippedMaintenance = true;
        continue;
      }
      if (option.backend.full && request.intent !== 'status') {
        skippedFull = true;
        continue;
      }
    }
    const plan = planFor(option, request.intent, registry, opts);
    if (!plan) continue;
    if (!first) first = plan;
    else if (first.kind === 'connect' && plan.kind === 'connect') fallbacks.push(...plan.candidates);
  }
  if (first?.kind === 'connect') return { kind: 'connect', candidates: [...first.candidates, ...fallbacks] };
  if (first) return first;
  // Nothing routable: say why, as precisely as we know.
  const notSynced = unknown > 0 && !registry.synced;
  if (request.intent === 'status') return { kind: 'status', state: notSynced || skippedMaintenance ? 'Unreachable' : 'NoBackend' };
  if (skippedFull) return { kind: 'refuse', message: opts.messages.full };
  if (skippedMaintenance) return { kind: 'refuse', message: opts.messages.maintenance };
  return { kind: 'refuse', message: notSynced ? opts.messages.unreachable : opts.messages.noBackend };
}

/**
 * A claimed transfer: its instance decides (whatever `[servers]` says — the orchestrator chose it);
 * only Stale is routed around (undefined: fall back to the pool). Unknown to the registry yet: the
 * claim's address.
 */
export function planTransfer(claim: TransferClaim, registry: RegistryReader, opts: PlanOptions): Plan | undefined {
  const backend = registry.get(claim.instanceId);
  if (backend) return planFor({ kind: 'registry', name: backend.name, backend }, 'login', registry, opts);
  const address = claim.address ? splitAddress(claim.address) : undefined;
  if (!address) return undefined;
  const target: RegistryTarget = { name: claim.instanceId, instanceId: claim.instanceId, ...address };
  return { kind: 'connect', candidates: [target] };
}

/** Claims the player's pending transfer; undefined when none (or the orchestrator cannot say). */
export interface TransferClaimer {
  claimTransfer(player: Player): Promise<TransferClaim | undefined>;
}

export interface RegistryResolverDeps {
  routing: RoutingConfig;
  registry: RegistryReader;
  messages: PlanOptions['messages'] & Pick<MessagesConfig, 'wakeRefused'>;
  holdTimeoutMs: number;
  holdSlackMs?: number;
  waker?: WakeRequester;
  transfers?: TransferClaimer;
  logger: Logger;
}

export class RegistryResolver implements BackendResolver {
  private readonly opts: PlanOptions;

  constructor(private readonly deps: RegistryResolverDeps) {
    this.opts = { holdTimeoutMs: deps.holdTimeoutMs, holdSlackMs: deps.holdSlackMs ?? 2000, messages: deps.messages };
  }

  async resolve(request: RouteRequest): Promise<RouteDecision> {
    let plan: Plan | undefined;
    if (request.intent !== 'status' && request.player) plan = await this.transferPlan(request.player);
    plan ??= planRoute(request, this.deps.routing, this.deps.registry, this.opts);
    return this.carryOut(plan);
  }

  /** Claims are asked only while the registry stream is up: a down orchestrator must not slow every login. */
  private async transferPlan(player: Player): Promise<Plan | undefined> {
    if (!this.deps.transfers || !this.deps.registry.connected) return undefined;
    let claim: TransferClaim | undefined;
    try {
      claim = await this.deps.transfers.claimTransfer(player);
    } catch (err) {
      this.deps.logger.warn({ player: player.name, err: (err as Error).message }, 'transfer claim failed; routing as an initial join');
      return undefined;
    }
    if (!claim) return undefined;
    const plan = planTransfer(claim, this.deps.registry, this.opts);
    this.deps.logger.info({ player: player.name, transfer: claim.transferId, instance: claim.instanceId, plan: plan?.kind ?? 'fallback' }, 'transfer claimed');
    return plan;
  }

  /** Wake and start requests go out here so a policy refusal reaches the player as a clear message. */
  private async carryOut(plan: Plan): Promise<RouteDecision> {
    switch (plan.kind) {
      case 'connect':
      case 'status':
      case 'refuse':
        return plan;
      case 'wake': {
        const refused = await this.ask(plan.instanceId, plan.action);
        return refused ?? { kind: 'wake-then-connect', instanceId: plan.instanceId, target: plan.target };
      }
      case 'start': {
        const refused = await this.ask(plan.instanceId, plan.action);
        // No instanceId: the start was already requested here, the connection must not ask again.
        return refused ?? { kind: 'start-and-disconnect', message: plan.message };
      }
    }
  }

  private async ask(instanceId: string, action: WakeAction | null): Promise<RouteDecision | undefined> {
    if (action === null) return undefined;
    if (!this.deps.waker) return { kind: 'refuse', message: this.deps.messages.unreachable };
    try {
      await this.deps.waker.request(instanceId, action);
      return undefined;
    } catch (err) {
      const e = err as { retryable?: boolean; message?: string };
      this.deps.logger.info({ instance: instanceId, action, err: e.message }, 'orchestrator did not accept the wake');
      if (e.retryable) return { kind: 'refuse', message: this.deps.messages.unreachable };
      return { kind: 'refuse', message: `${this.deps.messages.wakeRefused} ${e.message ?? ''}`.trim() };
    }
  }
}
