// The reconciler lease (docs/production.md): one row in the store, timed by the
// DATABASE clock, taken or renewed every ttl/3 (so failover takes at most
// ttl + ttl/3), with a fencing epoch that rises on every new holder. Locally a
// held lease counts only until `sentAt + ttl` on the monotonic clock, measured
// from before the renewal was sent: a process paused past its lease stops
// acting the moment it resumes, before any renewal could tell it so.

import { performance } from 'node:perf_hooks';
import type { Logger } from '../../shared/logger.js';
import type { LeaseRepository } from '../../store/store.js';
import type { ChangePort } from '../changes/change-port.js';
import type { LeaderView, Leadership } from './leadership.js';
import { unrefTimers, type Timers } from '../../shared/timers.js';

export const RECONCILER_LEASE = 'reconciler';
/** Announced on the change port when a holder resigns: standbys try at once instead of at their next round. */
export const RESIGNED_CHANGE_ID = 'leader-resigned';

export interface LeaderLeaseOptions {
  leases: LeaseRepository;
  /** The candidate's stable node id (a restarted node takes its own lease back at once). */
  holder: string;
  ttlMs: number;
  logger: Logger;
  name?: string;
  /** Monotonic milliseconds (tests inject one). */
  now?: () => number;
  /**
   * True when no other process can hold the lease (SQLite: one orchestrator per
   * file): it runs through the same acquisition, but never lapses locally.
   */
  sole?: boolean;
  /** Cross-replica announcements (the change port): a resignation is published, and heard ones trigger an attempt. */
  changes?: ChangePort;
  /** The rounds' timers (default real, unref'd ones; the simulation's fire on its manual clock). */
  timers?: Timers;
}

export class LeaderLease implements Leadership {
  private readonly name: string;
  private readonly now: () => number;
  private held = false;
  private validUntil = 0;
  private heldEpoch: number | null = null;
  private lastReported = false;
  /** Another replica's lease as read after a failed attempt; undefined when none was read. */
  private observed: { node: string; epoch: number } | undefined;
  private timer: unknown;
  private readonly timers: Timers;
  private attempting: Promise<void> | undefined;
  private readonly listeners = new Set<(leader: boolean) => void>();
  private unsubscribeChanges: (() => void) | undefined;

  constructor(private readonly deps: LeaderLeaseOptions) {
    this.name = deps.name ?? RECONCILER_LEASE;
    this.now = deps.now ?? (() => performance.now());
    this.timers = deps.timers ?? unrefTimers;
  }

  isLeader(): boolean {
    return this.held && (this.deps.sole === true || this.now() < this.validUntil);
  }

  epoch(): number | null {
    return this.heldEpoch;
  }

  leader(): LeaderView | null {
    if (this.isLeader()) return { node: this.deps.holder, epoch: this.heldEpoch!, self: true };
    return this.observed ? { ...this.observed, self: false } : null;
  }

  onChange(fn: (leader: boolean) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** First attempt awaited (a sole or free lease is held on return), then one every ttl/3. */
  async start(): Promise<void> {
    await this.attempt();
    if (this.timer) return;
    this.unsubscribeChanges = this.deps.changes?.subscribe((c) => {
      if (c.kind === 'system' && c.id === RESIGNED_CHANGE_ID && this.timer) void this.attempt();
    });
    const round = () => {
      this.timer = this.timers.setTimeout(
        () => {
          void this.attempt().finally(() => {
            if (this.timer !== undefined) round();
          });
        },
        Math.max(50, Math.floor(this.deps.ttlMs / 3)),
      );
    };
    round();
  }

  /** Stops renewing and resigns, so a standby takes over at its next attempt instead of after the TTL. */
  async stop(): Promise<void> {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.unsubscribeChanges?.();
    await this.attempting;
    const wasHeld = this.held;
    this.held = false;
    this.report();
    if (wasHeld && (await this.deps.leases.release(this.name, this.deps.holder).catch(() => false))) {
      this.deps.changes?.publish({ kind: 'system', id: RESIGNED_CHANGE_ID });
    }
  }

  /** One acquisition or renewal (single flight). */
  attempt(): Promise<void> {
    this.attempting ??= this.attemptOnce().finally(() => {
      this.attempting = undefined;
    });
    return this.attempting;
  }

  private async attemptOnce(): Promise<void> {
    const sentAt = this.now();
    try {
      const lease = await this.deps.leases.acquire(this.name, this.deps.holder, this.deps.ttlMs);
      if (lease) {
        if (lease.epoch !== this.heldEpoch)
          this.deps.logger.info({ lease: this.name, epoch: lease.epoch, holder: this.deps.holder }, 'leader lease acquired');
        this.held = true;
        this.heldEpoch = lease.epoch;
        this.validUntil = sentAt + this.deps.ttlMs;
        this.observed = undefined;
      } else {
        if (this.held) this.deps.logger.warn({ lease: this.name, epoch: this.heldEpoch }, 'leader lease lost to another replica');
        this.held = false;
        // Who holds it instead (shown by /health, /metrics and `ectl system`): one read per round on a standby.
        const current = await this.deps.leases.get(this.name);
        this.observed = current && current.holder !== this.deps.holder ? { node: current.holder, epoch: current.epoch } : undefined;
      }
    } catch (err) {
      // Keep what we have until it lapses locally; the next attempt retries. Who else leads is unknown now.
      this.observed = undefined;
      this.deps.logger.warn({ err: (err as Error).message, lease: this.name }, 'leader lease renewal failed');
    }
    this.report();
  }

  private report(): void {
    const leader = this.isLeader();
    if (leader === this.lastReported) return;
    this.lastReported = leader;
    for (const fn of [...this.listeners]) {
      try {
        fn(leader);
      } catch (err) {
        this.deps.logger.warn({ err: (err as Error).message }, 'leadership listener failed');
      }
    }
  }
}
