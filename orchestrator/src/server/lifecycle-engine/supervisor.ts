// The supervisor: at startup and every interval it compares each host's agent
// inventory with the store (pure reconcile.ts), records observations, handles
// unexpected exits with the crash-loop breaker (crash-loop.ts), and keeps one
// readiness probe loop per starting/online/degraded instance (readiness.ts).
// Clock and timers are injected, so tests drive it without waiting.

import type { Host, Instance, ObservedState } from '../../domain/index.js';
import { crashLoopPolicy, fromStored, recordExit, shouldAutoRestart, toStored, type CrashLoopPolicy } from '../../lifecycle/crash-loop.js';
import { evaluateReadiness, readinessContainerStatus } from '../../lifecycle/readiness.js';
import {
  reconcileHost,
  type HostInventoryEntry,
  type ObservedContainer,
  type ReconcileDecision,
  type StoredInstance,
} from '../../lifecycle/reconcile.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { HostDriver, InventoryEntry as AgentInventoryEntry } from '../drivers/host-driver.js';
import type { Clock } from '../clock.js';
import { moveInstance } from './instance-transitions.js';
import { SYSTEM_ACTOR, type LifecycleService } from '../services/lifecycle-service.js';
import { readinessOf, type ReadinessProber } from './readiness-prober.js';
import { unrefTimers, type Timers } from '../../shared/timers.js';
import { templateOf } from '../services/template-of.js';
import { InventoryCache } from './inventory-cache.js';
import { correctDrift, type DriftDecision } from './drift.js';
import { PeriodicTask } from '../../shared/periodic-task.js';

export interface SupervisorOptions {
  store: Store;
  driver: HostDriver;
  clock: Clock;
  logger: Logger;
  prober: ReadinessProber;
  lifecycle: LifecycleService;
  intervalMs: number;
  /** Ticks only while this is true (the leader lease); default always. */
  isActive?: () => boolean;
  unknownGraceMs: number;
  crashLoopDefaults: CrashLoopPolicy;
  timers?: Timers;
  /** With heartbeat inventory digests: the longest a host's inventory is trusted unchanged (unset: read every tick). */
  inventorySweepMs?: number;
}

const PROBED = ['starting', 'online', 'degraded'] as const;
/**
 * Inventory calls in flight at once during a pass: enough to keep the pass
 * short at 1,000 hosts (bench:scale), few enough that a pass does not open a
 * socket to every agent at the same moment. Up to this many unresponsive
 * agents cost one agent timeout per pass, as one did before.
 */
const INVENTORY_READS_IN_FLIGHT = 64;
const PLAYER_RECORD_EVERY_MS = 10_000;
const OBSERVABLE: readonly ObservedState['container'][] = ['created', 'running', 'paused', 'restarting', 'exited', 'dead'];

export class Supervisor {
  private readonly timers: Timers;
  private readonly loop: PeriodicTask;
  private readonly probeLoops = new Map<string, unknown>();
  private readonly probing = new Set<Promise<unknown>>();
  private readonly failures = new Map<string, number>();
  /** Drift corrections in flight (a graceful stop takes seconds; the tick does not wait for it). */
  private readonly correcting = new Map<string, Promise<void>>();
  /** The last refusal logged per instance: a refusal repeated every tick is logged once per change. */
  private readonly refusals = new Map<string, string>();

  private readonly inventories: InventoryCache;

  constructor(private readonly deps: SupervisorOptions) {
    this.timers = deps.timers ?? unrefTimers;
    this.inventories = new InventoryCache(deps.inventorySweepMs);
    this.loop = new PeriodicTask({
      name: 'supervisor tick',
      intervalMs: deps.intervalMs,
      run: () => this.tick(),
      logger: deps.logger,
      timers: this.timers,
    });
  }

  private get running(): boolean {
    return this.loop.isRunning;
  }

  /** Reconciles at once (startup), then every interval. */
  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    const stopping = this.loop.stop();
    for (const handle of this.probeLoops.values()) if (handle !== null) this.timers.clearTimeout(handle);
    this.probeLoops.clear();
    await stopping;
    await Promise.allSettled([...this.probing, ...this.correcting.values()]);
  }

  /** Reconcile soon (after a command finished or a container started). */
  kick(): void {
    this.loop.kick();
  }

  /** Starts the probe loop of a freshly started instance at once. */
  watch(instanceId: string): void {
    if (!this.running) return;
    this.failures.delete(instanceId);
    this.ensureProbeLoop(instanceId, 0, true);
  }

  forget(instanceId: string): void {
    const handle = this.probeLoops.get(instanceId);
    if (handle) this.timers.clearTimeout(handle);
    this.probeLoops.delete(instanceId);
    this.failures.delete(instanceId);
  }

  /**
   * One reconciliation pass over every reachable host: every host's inventory
   * (or its cached one, at most INVENTORY_READS_IN_FLIGHT asked at a time),
   * one read of all their stored instances (sent once the last inventory was
   * asked for, so it overlaps the last answers), then the per-host decisions.
   * Costs three store reads for the whole fleet, not three per host.
   */
  async tick(): Promise<void> {
    if (this.deps.isActive?.() === false) return;
    const { store } = this.deps;
    const hosts = await store.hosts.list({ statuses: ['ONLINE', 'MAINTENANCE'] });
    if (hosts.length === 0) return;
    const unfinished = await store.commands.list({ statuses: ['pending', 'dispatched'], limit: 1000 });
    const busy = new Set(unfinished.map((c) => c.instanceId).filter((id): id is string => id !== null));
    // Read before the inventories, as the stored instances below are read after them.
    const lastChange = hosts.some((h) => h.inventoryDigest !== undefined) ? await store.instances.lastChangeByHost() : {};
    const inventories: Array<{ entries: AgentInventoryEntry[]; readAt: number } | undefined> = new Array<undefined>(hosts.length);
    let allAsked!: () => void;
    const asked = new Promise<void>((resolve) => (allAsked = resolve));
    let next = 0;
    const reader = async (): Promise<void> => {
      while (next < hosts.length) {
        const i = next++;
        // inventoryOf takes its readAt when called: the stored read below starts after every host's.
        const answer = this.inventoryOf(hosts[i]!, lastChange[hosts[i]!.id] ?? 0);
        if (next === hosts.length) allAsked();
        inventories[i] = await answer;
      }
    };
    // Stored rows changed after a host's inventory was asked for are skipped in superviseHost (judged next pass).
    const storedRead = asked.then(() => store.instances.list({ hostIds: hosts.map((h) => h.id) }));
    const [, stored] = await Promise.all([
      Promise.all(Array.from({ length: Math.min(INVENTORY_READS_IN_FLIGHT, hosts.length) }, reader)),
      storedRead,
    ]);
    const storedByHost = new Map<string, Instance[]>();
    for (const i of stored) {
      const list = storedByHost.get(i.hostId!) ?? [];
      list.push(i);
      storedByHost.set(i.hostId!, list);
    }
    await Promise.all(
      hosts.map((h, i) => {
        const inventory = inventories[i];
        return inventory ? this.superviseHost(h, inventory, storedByHost.get(h.id) ?? [], busy) : undefined;
      }),
    );
  }

  /** The host's inventory (read, or cached while its digest allows), or undefined when the agent did not answer. */
  private async inventoryOf(host: Host, lastChange: number): Promise<{ entries: AgentInventoryEntry[]; readAt: number } | undefined> {
    try {
      return await this.inventories.get(host, host.inventoryDigest === undefined ? 0 : lastChange, this.deps.clock.now(), () =>
        this.deps.driver.inventory(host),
      );
    } catch (err) {
      this.deps.logger.warn({ hostId: host.id, err: (err as Error).message }, 'no inventory from host; its instances keep their state');
      return undefined;
    }
  }

  private async superviseHost(
    host: Host,
    inventory: { entries: AgentInventoryEntry[]; readAt: number },
    stored: Instance[],
    busy: ReadonlySet<string>,
  ): Promise<void> {
    const byId = new Map(inventory.entries.map((c) => [c.instanceId, c]));
    const observed: Instance[] = [];
    const containers: HostInventoryEntry[] = [];
    for (const instance of stored) {
      if (instance.activeAction || busy.has(instance.id) || this.correcting.has(instance.id)) continue;
      // Changed after its inventory was asked for: judged on the next tick, against an inventory that can show the change.
      if (instance.updatedAt > inventory.readAt) continue;
      try {
        // Most instances need no I/O here (no inspect, observation unchanged): no await for them.
        const observation = this.observe(instance, byId.get(instance.id) ?? null, host);
        const result = observation instanceof Promise ? await observation : observation;
        // The row moved on while its observation was written (an action was requested meanwhile): judged next pass.
        if (!result) continue;
        const { instance: seen, container } = result;
        observed.push(seen);
        if (container) containers.push({ ...container, instanceId: seen.id });
      } catch (err) {
        this.deps.logger.error({ instanceId: instance.id, err }, 'observing an instance failed');
      }
    }
    // One pure decision per stored instance of the host (reconcile.ts); containers we do not know are host recovery's business.
    const { decisions } = reconcileHost(observed.map(storedView), containers, host.status, {
      now: this.deps.clock.now(),
      unknownGraceMs: this.deps.unknownGraceMs,
    });
    const byInstance = new Map(observed.map((i) => [i.id, i]));
    for (const { instanceId, decision } of decisions) {
      try {
        if (decision.action === 'none' || decision.action === 'await_command') this.keepWatching(byInstance.get(instanceId)!);
        else await this.apply(byInstance.get(instanceId)!, decision, host);
      } catch (err) {
        this.deps.logger.error({ instanceId, err }, 'supervising an instance failed');
      }
    }
  }

  /**
   * Records what Docker says of the instance's container (inspecting an exit the
   * inventory did not detail). Synchronous when neither is needed, the common case.
   */
  private observe(stored: Instance, entry: AgentInventoryEntry | null, host: Host): Observation | Promise<Observation | undefined> {
    if (entry && (entry.state === 'exited' || entry.state === 'dead') && entry.exitCode === undefined) {
      return this.deps.driver
        .inspect(host, stored.id)
        .catch(() => ({}))
        .then((details) => this.record(stored, { ...entry, ...details }));
    }
    return this.record(stored, entry);
  }

  /**
   * Writes a changed observation, version-checked against the stored read: undefined when the
   * row changed since (say a start was requested and entered `starting`). Judging that newer row
   * against this older inventory read a world whose start was just requested as crashed
   * (`starting`, container still exited → stopped, desired stopped), and its start then ran
   * into a drift stop.
   */
  private record(stored: Instance, entry: AgentInventoryEntry | null): Observation | Promise<Observation | undefined> {
    const now = this.deps.clock.now();
    const observed = observedOf(entry, now);
    if (sameObservation(stored.observed, observed)) return { instance: stored, container: containerOf(entry, stored) };
    return this.writeObservation(stored, observed, entry, now, true);
  }

  /**
   * The version-checked write. A row changed only by a probe or a player report since the read
   * (same state, intent and action) is written again on the fresh row: a busy prober must not
   * keep a crash from being judged pass after pass.
   */
  private async writeObservation(
    stored: Instance,
    observed: ObservedState,
    entry: AgentInventoryEntry | null,
    now: number,
    retry: boolean,
  ): Promise<Observation | undefined> {
    try {
      const instance = await this.deps.store.instances.update(stored.id, { observed }, { now, expectedVersion: stored.version });
      return { instance, container: containerOf(entry, instance) };
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'CONFLICT')) throw err;
      const fresh = retry ? await this.deps.store.instances.get(stored.id) : undefined;
      if (!fresh || !sameIntent(fresh, stored)) return undefined;
      return this.writeObservation(fresh, observed, entry, now, false);
    }
  }

  private async apply(instance: Instance, decision: ReconcileDecision, host: Host): Promise<void> {
    const now = this.deps.clock.now();
    if (!isAction(decision)) this.refusals.delete(instance.id);
    switch (decision.action) {
      case 'set_state':
        await moveInstance(this.deps.store, instance, decision.to, { now, reason: decision.reason });
        if (decision.to !== instance.state) this.forget(instance.id);
        return;
      case 'await_readiness': {
        const moved = decision.to ? await moveInstance(this.deps.store, instance, decision.to, { now, reason: decision.reason }) : instance;
        if (moved) this.ensureProbeLoop(instance.id, 0);
        return;
      }
      case 'handle_crash':
        this.forget(instance.id);
        await this.handleCrash(instance, { exitCode: decision.exitCode, oomKilled: decision.oomKilled }, decision.reason);
        return;
      case 'start':
      case 'stop':
      case 'pause':
      case 'resume':
        if (decision.drift) {
          this.startDriftCorrection(instance, { action: decision.action, reason: decision.reason }, host);
          return;
        }
        await this.deps.lifecycle
          .request(instance.id, decision.action, SYSTEM_ACTOR, {
            requestId: `reconcile-${now}`,
            reason: `reconciliation: ${decision.reason}`,
          })
          .then(() => this.refusals.delete(instance.id))
          .catch((err: unknown) => this.logRefusal(instance, decision.action, (err as Error).message));
        return;
      default:
        this.keepWatching(instance);
        void host;
    }
  }

  /** No action decided: a running probed instance keeps its probe loop. */
  private keepWatching(instance: Instance): void {
    this.refusals.delete(instance.id);
    if ((PROBED as readonly string[]).includes(instance.state) && instance.observed?.container === 'running')
      this.ensureProbeLoop(instance.id, 0);
  }

  /** A refused reconciliation is logged at info once per change of (state, action, message), then at debug. */
  private logRefusal(instance: Instance, action: string, message: string): void {
    const key = `${instance.state}|${action}|${message}`;
    const fields = { instanceId: instance.id, state: instance.state, action, err: message };
    if (this.refusals.get(instance.id) === key) {
      this.deps.logger.debug(fields, 'reconciliation action refused (unchanged)');
      return;
    }
    this.refusals.set(instance.id, key);
    this.deps.logger.info(fields, 'reconciliation action refused');
  }

  /** Drift (the stored state already claims the target): act on the container directly, in the background. */
  private startDriftCorrection(instance: Instance, decision: DriftDecision, host: Host): void {
    const run = correctDrift({ store: this.deps.store, driver: this.deps.driver, clock: this.deps.clock }, instance, decision, host)
      .then((outcome) => {
        this.refusals.delete(instance.id);
        this.deps.logger.info(
          { instanceId: instance.id, instance: instance.name, state: instance.state, action: decision.action, ...outcome },
          `drift corrected: ${decision.reason}`,
        );
      })
      .catch((err: unknown) => this.logRefusal(instance, `drift ${decision.action}`, (err as Error).message))
      .finally(() => this.correcting.delete(instance.id));
    this.correcting.set(instance.id, run);
  }

  /** Unexpected exit: record it in the breaker; trip → error, else restart per template policy after the backoff. */
  private async handleCrash(instance: Instance, exit: { exitCode: number | null; oomKilled: boolean }, reason: string): Promise<void> {
    const now = this.deps.clock.now();
    const template = await templateOf(this.deps.store, instance);
    const policy = crashLoopPolicy(this.deps.crashLoopDefaults, template?.crashLoop);
    const recorded = recordExit(fromStored(instance.crashLoop), { at: now, ...exit }, policy);
    const crashLoop = toStored(recorded.state, policy);
    const details = { exitCode: exit.exitCode, oomKilled: exit.oomKilled, exitsInWindow: recorded.state.exits.length };
    if (recorded.state.tripped) {
      await moveInstance(this.deps.store, instance, 'error', {
        now,
        details,
        patch: { crashLoop, desiredState: 'stopped' },
        reason: `${reason}; crash loop: ${recorded.state.exits.length} unexpected exits within ${Math.round(policy.windowMs / 1000)} s, automatic restart disabled until an admin resets it`,
      });
      return;
    }
    const restart = shouldAutoRestart(recorded.state, template?.restartPolicy ?? 'never', exit, now, policy);
    if (!restart.restart) {
      await moveInstance(this.deps.store, instance, 'stopped', {
        now,
        details,
        reason: `${reason}; not restarted: ${restart.reason}`,
        patch: { crashLoop, desiredState: 'stopped' },
      });
      return;
    }
    const moved = await moveInstance(this.deps.store, instance, 'stopped', {
      now,
      details: { ...details, restartInMs: restart.delayMs, attempt: restart.attempt },
      patch: { crashLoop },
      reason: `${reason}; automatic restart ${restart.attempt} in ${restart.delayMs} ms`,
    });
    if (!moved) return;
    await this.deps.lifecycle
      .request(instance.id, 'start', SYSTEM_ACTOR, {
        requestId: `crash-restart-${now}`,
        notBefore: restart.notBefore,
        deferEnter: true,
        reason: 'automatic restart after an unexpected exit',
      })
      .catch((err: unknown) =>
        this.deps.logger.warn({ instanceId: instance.id, err: (err as Error).message }, 'automatic restart refused'),
      );
  }

  // ---------------------------------------------------------------- probes

  private ensureProbeLoop(instanceId: string, delayMs: number, restart = false): void {
    if (!this.running) return;
    const existing = this.probeLoops.get(instanceId);
    if (existing !== undefined && !restart) return;
    if (existing) this.timers.clearTimeout(existing);
    const handle = this.timers.setTimeout(() => {
      this.probeLoops.set(instanceId, null);
      const run = this.probeOnce(instanceId)
        .catch((err: unknown) => {
          this.deps.logger.error({ instanceId, err }, 'readiness probe failed to run');
          return 1000;
        })
        .then((next) => {
          if (this.probeLoops.get(instanceId) !== null) return; // forgotten or restarted meanwhile
          this.probeLoops.delete(instanceId);
          if (next !== null) this.ensureProbeLoop(instanceId, next);
        })
        .finally(() => this.probing.delete(run));
      this.probing.add(run);
    }, delayMs);
    this.probeLoops.set(instanceId, handle);
  }

  /**
   * One probe of one instance and its consequence (online, degraded, or stay).
   * Returns the delay before the next probe, or null when the instance left
   * the probed states.
   */
  async probeOnce(instanceId: string): Promise<number | null> {
    const instance = await this.deps.store.instances.get(instanceId);
    if (!instance || instance.activeAction || !(PROBED as readonly string[]).includes(instance.state) || !instance.hostId) return null;
    const host = await this.deps.store.hosts.get(instance.hostId);
    if (!host) return null;
    const template = await templateOf(this.deps.store, instance);
    const spec = readinessOf(template);
    const outcome = await this.deps.prober.probe(instance, spec, host);
    const failures = outcome.ready ? 0 : (this.failures.get(instanceId) ?? 0) + 1;
    this.failures.set(instanceId, failures);
    const now = this.deps.clock.now();
    const decision = evaluateReadiness({
      state: instance.state,
      waitStartedAt: instance.stateChangedAt,
      now,
      timeoutMs: spec.startupTimeoutMs,
      failureThreshold: spec.failureThreshold,
      container: { status: readinessContainerStatus(instance.observed?.container) },
      probe: { ready: outcome.ready, consecutiveFailures: failures },
    });
    const players =
      outcome.players && shouldRecordPlayers(instance, outcome.players, now) ? { players: { ...outcome.players, at: now } } : {};
    if (decision.kind === 'transition') {
      await moveInstance(this.deps.store, instance, decision.to, { now, reason: `${decision.reason} (${outcome.detail})`, patch: players });
    } else if (Object.keys(players).length > 0) {
      await this.deps.store.instances.update(instance.id, players, { now });
    }
    // Reconciliation handles exits; a starting instance is probed at its interval until ready or timed out.
    if (decision.kind === 'exited') return null;
    const nextState = decision.kind === 'transition' ? decision.to : instance.state;
    return (PROBED as readonly string[]).includes(nextState) ? spec.intervalMs : null;
  }
}

interface Observation {
  instance: Instance;
  container: ObservedContainer | null;
}

function containerOf(entry: AgentInventoryEntry | null, instance: Instance): ObservedContainer | null {
  return entry
    ? {
        status: toReconcileStatus(entry.state),
        // The agent lists only our own (non-ownership) labels; ownership was checked by listing the container at all.
        labels: entry.labels ?? instance.containerConfig.labels,
        exitCode: entry.exitCode ?? null,
        oomKilled: entry.oomKilled ?? false,
        ...(entry.image ? { image: entry.image } : {}),
      }
    : null;
}

function isAction(d: ReconcileDecision): boolean {
  return d.action === 'start' || d.action === 'stop' || d.action === 'pause' || d.action === 'resume';
}

function toReconcileStatus(state: string): ObservedContainer['status'] {
  return (['created', 'running', 'paused', 'restarting', 'exited', 'dead'] as const).find((s) => s === state) ?? 'exited';
}

function observedOf(entry: AgentInventoryEntry | null, now: number): ObservedState {
  if (!entry) return { container: 'absent', observedAt: now };
  const container = (OBSERVABLE as readonly string[]).includes(entry.state) ? (entry.state as ObservedState['container']) : 'unknown';
  const out: ObservedState = { container, observedAt: now };
  if (typeof entry.exitCode === 'number') out.exitCode = entry.exitCode;
  if (entry.oomKilled) out.oomKilled = true;
  const started = entry.startedAt ? Date.parse(entry.startedAt) : NaN;
  const finished = entry.finishedAt ? Date.parse(entry.finishedAt) : NaN;
  if (Number.isFinite(started) && started > 0) out.startedAt = started;
  if (Number.isFinite(finished) && finished > 0) out.finishedAt = finished;
  return out;
}

/** Only a changed observation is written (not every tick's timestamp). */
/** Nothing an action or a transition changes differs between the two reads of a row. */
function sameIntent(a: Instance, b: Instance): boolean {
  return (
    a.state === b.state && a.desiredState === b.desiredState && (a.activeAction?.commandId ?? null) === (b.activeAction?.commandId ?? null)
  );
}

function sameObservation(a: ObservedState | null, b: ObservedState): boolean {
  return (
    a !== null && a.container === b.container && a.exitCode === b.exitCode && a.oomKilled === b.oomKilled && a.startedAt === b.startedAt
  );
}

function shouldRecordPlayers(instance: Instance, players: { online: number; max: number }, now: number): boolean {
  const last = instance.players;
  return !last || last.online !== players.online || last.max !== players.max || now - last.at >= PLAYER_RECORD_EVERY_MS;
}

function storedView(instance: Instance): StoredInstance {
  return {
    id: instance.id,
    state: instance.state,
    desiredState: instance.desiredState,
    stateChangedAt: instance.stateChangedAt,
    expectedLabels: instance.containerConfig.labels,
    expectedImage: instance.containerConfig.image,
    // The create records the endpoint once the host made the container; a failed create never does.
    containerCreated: instance.endpoint !== null || instance.hostPort !== null,
  };
}
