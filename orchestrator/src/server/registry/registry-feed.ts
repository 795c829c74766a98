// The registry's revisioned change feed: diffs the routing view read from the
// store; each change raises the revision by exactly 1. While a stream is open it
// refreshes on every change the change port announces (changes/) and polls
// as a safety net (every 1 s; 250 ms for a plain store without notifications).
// Our own writes (evacuations) call kick() as well.

import type { Group, Host, Instance, TemplateSpec } from '../../domain/index.js';
import type { RegistryBackend, RegistrySnapshot } from '../../protocol/registry-contract.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { ChangePort } from '../changes/change-port.js';
import { diffRegistry, fingerprint, lastStartDuration, registryBackend } from './registry-view.js';

export type FeedEvent = { kind: 'upsert'; revision: number; backend: RegistryBackend } | { kind: 'remove'; revision: number; instanceId: string };
export type FeedListener = (event: FeedEvent) => void;

export interface RegistryFeedOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Store change notifications: a refresh on each (coalesced), the poll only as a safety net. */
  changes?: ChangePort;
  /** How often the store is compared while someone listens (default 1 s with `changes`, else 250 ms). */
  pollIntervalMs?: number;
}

const POLL_WITH_CHANGES_MS = 1000;
const POLL_WITHOUT_CHANGES_MS = 250;

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
      this.timer = setInterval(() => this.kick(), this.deps.pollIntervalMs ?? (this.deps.changes ? POLL_WITH_CHANGES_MS : POLL_WITHOUT_CHANGES_MS));
      this.timer.unref();
      this.unsubscribeChanges = this.deps.changes?.subscribe(() => this.kick());
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
    const { store } = this.deps;
    const [instances, hosts, groups, routerPlayers, maintenance] = await Promise.all([
      store.instances.list(), store.hosts.list(), store.groups.list(), store.playerSessions.countActiveByInstance(), store.system.get(GLOBAL_MAINTENANCE_KEY),
    ]);
    const now = this.deps.clock.now();
    const hostById = new Map<string, Host>(hosts.map((h) => [h.id, h]));
    const globalMaintenance = (maintenance as { enabled?: boolean } | undefined)?.enabled === true;
    const next: RegistryBackend[] = [];
    for (const instance of instances.sort((a, b) => a.id.localeCompare(b.id))) {
      const drainUntil = this.draining.get(instance.id);
      if (drainUntil !== undefined && (drainUntil <= now || instance.state !== 'online')) this.draining.delete(instance.id);
      const backend = registryBackend({
        instance, host: instance.hostId ? hostById.get(instance.hostId) : undefined, template: await this.templateOf(instance, groups),
        routerPlayers: routerPlayers[instance.id] ?? 0, drained: this.draining.has(instance.id), globalMaintenance,
        lastStartMs: await this.startEstimate(instance), now,
      });
      if (backend) next.push(backend);
    }
    this.apply(next);
  }

  /** Synchronous: the map, the revision and the events move together. */
  private apply(next: RegistryBackend[]): void {
    const previous = new Map([...this.current].map(([id, c]) => [id, c.fp]));
    for (const change of diffRegistry(previous, next)) {
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
    if (!this.templates.has(key)) this.templates.set(key, (await this.deps.store.templates.get(variant.template.name, variant.template.version))?.spec ?? null);
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
