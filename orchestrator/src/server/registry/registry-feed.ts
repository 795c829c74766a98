// The registry's revisioned change feed: diffs the routing view read from the
// store; each change raises the revision by exactly 1. While a stream is open it
// follows the change port (changes/): a change to an instance re-reads that
// instance only, a host or player-count change re-reads the hosts or the counts
// and recomputes the backends they touch, and anything else (a group, a system
// setting, a resync after a lost connection) re-reads everything. So a change
// costs the same at 10,000 instances as at 10. A full re-read still runs as a
// safety net every 30 s (every 250 ms without a change port, the whole view
// each time). Our own writes (evacuations) call kick() as well.

import type { Group, Host, Instance, TemplateSpec } from '../../domain/index.js';
import type { RegistryBackend, RegistrySnapshot } from '../../protocol/registry-contract.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { Change, ChangePort } from '../changes/change-port.js';
import { diffRegistry, fingerprint, lastStartDuration, registryBackend } from './registry-view.js';

export type FeedEvent =
  { kind: 'upsert'; revision: number; backend: RegistryBackend } | { kind: 'remove'; revision: number; instanceId: string };
export type FeedListener = (event: FeedEvent) => void;

export interface RegistryFeedOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Store change notifications: a refresh on each (coalesced), the poll only as a safety net. */
  changes?: ChangePort;
  /**
   * How often the view is looked at while someone listens (default 1 s with
   * `changes`: the time-bound fields only, a full re-read every
   * FULL_READ_WITH_CHANGES_MS; without `changes`, 250 ms, a full re-read each time).
   */
  pollIntervalMs?: number;
}

const POLL_WITH_CHANGES_MS = 1000;
const POLL_WITHOUT_CHANGES_MS = 250;
/** The safety net behind the change port (a write that bypassed it): everything read again. */
const FULL_READ_WITH_CHANGES_MS = 30_000;
/** More changed instances than this in one refresh: one full read is cheaper (and stays under any bind-parameter limit). */
const MAX_PARTIAL_IDS = 500;

/** What changed since the last refresh. */
interface Dirty {
  /** Read everything again. */
  all: boolean;
  instances: Set<string>;
  hosts: boolean;
  players: boolean;
}

const nothing = (): Dirty => ({ all: false, instances: new Set(), hosts: false, players: false });
const everything = (): Dirty => ({ ...nothing(), all: true });

const GLOBAL_MAINTENANCE_KEY = 'maintenance';
const HISTORY_LOOKBACK = 20;

export class RegistryFeed {
  private revision = 0;
  private readonly current = new Map<string, { backend: RegistryBackend; fp: string }>();
  private readonly listeners = new Set<FeedListener>();
  private readonly templates = new Map<string, TemplateSpec | null>();
  /** instanceId → { stateChangedAt the estimate was read at, duration of the last start }. */
  private readonly startEstimates = new Map<string, { at: number; ms: number | undefined }>();
  /** Instances being evacuated → until when they take no initial joins. */
  private readonly draining = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribeChanges: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private rerun = false;
  private closed = false;
  // What the last reads saw: a partial refresh recomputes from these.
  private readonly instances = new Map<string, Instance>();
  private readonly hosts = new Map<string, Host>();
  private groups: readonly Group[] = [];
  private routerPlayers: Readonly<Record<string, number>> = {};
  private globalMaintenance = false;
  private dirty: Dirty = everything();
  private lastFullReadAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: RegistryFeedOptions) {}

  /** The current view at its revision, refreshed from the store first. */
  async snapshot(): Promise<RegistrySnapshot> {
    await this.refresh();
    return this.snapshotNow();
  }

  /** The last computed view, without touching the store (consistent at any synchronous point). */
  snapshotNow(): RegistrySnapshot {
    return { revision: this.revision, backends: [...this.current.values()].map((c) => c.backend) };
  }

  get(instanceId: string): RegistryBackend | undefined {
    return this.current.get(instanceId)?.backend;
  }

  backends(): RegistryBackend[] {
    return [...this.current.values()].map((c) => c.backend);
  }

  /** Events are delivered synchronously in revision order; polling runs while anyone listens. */
  subscribe(listener: FeedListener): () => void {
    this.listeners.add(listener);
    if (!this.timer && !this.closed) {
      this.timer = setInterval(
        () => this.kick(),
        this.deps.pollIntervalMs ?? (this.deps.changes ? POLL_WITH_CHANGES_MS : POLL_WITHOUT_CHANGES_MS),
      );
      this.timer.unref();
      if (this.deps.changes) {
        // Changes went unheard while nobody listened: the first refresh reads everything.
        this.dirty = everything();
        this.unsubscribeChanges = this.deps.changes.subscribe((c) => this.changed(c));
      }
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopTimer();
    };
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  /** Refresh soon (errors are logged; the next poll retries). */
  kick(): void {
    this.refresh().catch((err: unknown) => this.deps.logger.warn({ err: (err as Error).message }, 'registry refresh failed'));
  }

  /** Marks an instance as draining (registry `maintenance: true`) until `until`. */
  drain(instanceId: string, until: number): void {
    this.draining.set(instanceId, until);
    this.dirty.instances.add(instanceId);
    this.kick();
  }

  /** A committed change the port announced: what to read again, then a refresh. */
  private changed(change: Change): void {
    if (change.kind === 'instance' && change.id !== undefined) this.dirty.instances.add(change.id);
    else if (change.kind === 'host') this.dirty.hosts = true;
    else if (change.kind === 'players') this.dirty.players = true;
    else this.dirty.all = true; // a group, a system setting, a resync, an instance change without an id
    this.kick();
  }

  /** Single flight: a call during a refresh gets one more refresh after it, so no write is missed. */
  refresh(): Promise<void> {
    if (this.running) {
      this.rerun = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.rerun = false;
          await this.refreshOnce();
        } while (this.rerun && !this.closed);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  close(): void {
    this.closed = true;
    this.stopTimer();
    this.listeners.clear();
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.unsubscribeChanges?.();
    this.unsubscribeChanges = undefined;
  }

  private async refreshOnce(): Promise<void> {
    const now = this.deps.clock.now();
    const dirty = this.dirty;
    this.dirty = nothing();
    // Without a change port followed (nobody listens, no port, or its connection to the other replicas is down), nothing says what changed.
    const followed = this.unsubscribeChanges !== undefined && this.deps.changes?.connected !== false;
    const full = dirty.all || !followed || dirty.instances.size > MAX_PARTIAL_IDS || now - this.lastFullReadAt >= FULL_READ_WITH_CHANGES_MS;
    try {
      const touched = full ? await this.readAll(now) : await this.readChanged(dirty);
      // Time-bound fields: a Starting backend's remaining time, an evacuation's end.
      for (const i of this.instances.values()) if (i.state === 'starting' || this.draining.has(i.id)) touched.add(i.id);
      const backends = new Map<string, RegistryBackend | undefined>();
      for (const id of [...touched].sort()) backends.set(id, await this.backendOf(id, now));
      this.apply(backends);
    } catch (err) {
      // Nothing of this refresh was applied: the next one reads everything.
      this.dirty.all = true;
      throw err;
    }
  }

  /** Every instance, host, group and count again; the touched ids are all of them and all we showed. */
  private async readAll(now: number): Promise<Set<string>> {
    const { store } = this.deps;
    const [instances, hosts, groups, routerPlayers, maintenance] = await Promise.all([
      store.instances.list(),
      store.hosts.list(),
      store.groups.list(),
      store.playerSessions.countActiveByInstance(),
      store.system.get(GLOBAL_MAINTENANCE_KEY),
    ]);
    this.lastFullReadAt = now;
    const touched = new Set(this.current.keys());
    this.instances.clear();
    for (const i of instances) {
      this.instances.set(i.id, i);
      touched.add(i.id);
    }
    this.hosts.clear();
    for (const h of hosts) this.hosts.set(h.id, h);
    this.groups = groups;
    this.routerPlayers = routerPlayers;
    this.globalMaintenance = (maintenance as { enabled?: boolean } | undefined)?.enabled === true;
    return touched;
  }

  /** Only what the change port named: those instances, and the backends a host or player-count change touches. */
  private async readChanged(dirty: Dirty): Promise<Set<string>> {
    const { store } = this.deps;
    const ids = [...dirty.instances];
    const [instances, hosts, routerPlayers] = await Promise.all([
      ids.length > 0 ? store.instances.list({ ids }) : Promise.resolve([]),
      dirty.hosts ? store.hosts.list() : Promise.resolve(undefined),
      dirty.players ? store.playerSessions.countActiveByInstance() : Promise.resolve(undefined),
    ]);
    const touched = new Set(ids);
    for (const id of ids) this.instances.delete(id); // deleted unless read back
    for (const i of instances) this.instances.set(i.id, i);
    if (hosts) {
      // A backend sees only its host's status.
      const moved = new Set<string>();
      const next = new Map(hosts.map((h) => [h.id, h]));
      for (const id of new Set([...this.hosts.keys(), ...next.keys()]))
        if (this.hosts.get(id)?.status !== next.get(id)?.status) moved.add(id);
      this.hosts.clear();
      for (const [id, h] of next) this.hosts.set(id, h);
      if (moved.size > 0) for (const i of this.instances.values()) if (i.hostId !== null && moved.has(i.hostId)) touched.add(i.id);
    }
    if (routerPlayers) {
      for (const id of new Set([...Object.keys(this.routerPlayers), ...Object.keys(routerPlayers)])) {
        if ((this.routerPlayers[id] ?? 0) !== (routerPlayers[id] ?? 0)) touched.add(id);
      }
      this.routerPlayers = routerPlayers;
    }
    return touched;
  }

  /** The backend of one instance from what the reads saw (undefined: not shown, or gone). */
  private async backendOf(id: string, now: number): Promise<RegistryBackend | undefined> {
    const instance = this.instances.get(id);
    if (!instance) {
      this.draining.delete(id);
      return undefined;
    }
    const drainUntil = this.draining.get(id);
    if (drainUntil !== undefined && (drainUntil <= now || instance.state !== 'online')) this.draining.delete(id);
    return registryBackend({
      instance,
      host: instance.hostId ? this.hosts.get(instance.hostId) : undefined,
      template: await this.templateOf(instance, this.groups),
      routerPlayers: this.routerPlayers[id] ?? 0,
      drained: this.draining.has(id),
      globalMaintenance: this.globalMaintenance,
      lastStartMs: await this.startEstimate(instance),
      now,
    });
  }

  /** Synchronous: the map, the revision and the events move together. Only the given ids are compared. */
  private apply(next: ReadonlyMap<string, RegistryBackend | undefined>): void {
    const previous = new Map<string, string>();
    for (const id of next.keys()) {
      const c = this.current.get(id);
      if (c) previous.set(id, c.fp);
    }
    const shown = [...next.values()].filter((b): b is RegistryBackend => b !== undefined);
    for (const change of diffRegistry(previous, shown)) {
      this.revision += 1;
      let event: FeedEvent;
      if (change.kind === 'upsert') {
        this.current.set(change.backend.instanceId, { backend: change.backend, fp: fingerprint(change.backend) });
        event = { kind: 'upsert', revision: this.revision, backend: change.backend };
      } else {
        this.current.delete(change.instanceId);
        this.startEstimates.delete(change.instanceId);
        event = { kind: 'remove', revision: this.revision, instanceId: change.instanceId };
      }
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (err) {
          this.deps.logger.warn({ err: (err as Error).message }, 'registry listener failed');
        }
      }
    }
  }

  /** Template versions are immutable: cached for the process lifetime. */
  private async templateOf(instance: Instance, groups: readonly Group[]): Promise<TemplateSpec | undefined> {
    const variant = groups.find((g) => g.id === instance.groupId)?.variants.find((v) => v.id === instance.variantId);
    if (!variant) return undefined;
    const key = `${variant.template.name}@${variant.template.version}`;
    if (!this.templates.has(key))
      this.templates.set(key, (await this.deps.store.templates.get(variant.template.name, variant.template.version))?.spec ?? null);
    return this.templates.get(key) ?? undefined;
  }

  /** Read from the history only when the state changed since the last read. */
  private async startEstimate(instance: Instance): Promise<number | undefined> {
    if (instance.state !== 'stopped' && instance.state !== 'starting') return undefined;
    const cached = this.startEstimates.get(instance.id);
    if (cached && cached.at === instance.stateChangedAt) return cached.ms;
    const ms = lastStartDuration(await this.deps.store.history.list(instance.id, { limit: HISTORY_LOOKBACK }));
    this.startEstimates.set(instance.id, { at: instance.stateChangedAt, ms });
    return ms;
  }
}
