// Marks hosts OFFLINE after N missed heartbeats of their own interval: a
// periodic sweep over the injected clock (one UPDATE per sweep). While the
// store was unreachable, or this orchestrator was not running, no heartbeat
// could be recorded: so after a failed sweep, and after this process started,
// no host is marked until every host had N of its intervals to beat again (a
// PostgreSQL restart or an orchestrator upgrade never looks like the loss of
// every host, which would make every instance `unknown` and replace fleets).
// The clock is the database's (database-clock.ts), re-read before each sweep:
// beat times are stamped on it too, so a replica's own skew marks nobody.

import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';

export interface OfflineDetectorOptions {
  store: Store;
  /** The database's clock in production (beat times are stamped on it); tests may pass a manual one. */
  clock: Clock;
  logger: Logger;
  missedBeats: number;
  sweepIntervalMs: number;
  /** Called once per host this sweep moved to OFFLINE (host-moves.ts); its failure is logged, not retried. */
  onOffline?: (hostId: string) => Promise<void>;
}

export class OfflineDetector {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<string[]> | undefined;
  /**
   * Since when agents could reach a working orchestrator again: this process's
   * start, or `'now'` after a failed sweep (the store is back at the next good
   * one). The grace (N × the longest heartbeat interval from then) is computed
   * at the next good sweep.
   */
  private reachableSince: number | 'now' | undefined;
  private graceUntil = 0;

  constructor(private readonly deps: OfflineDetectorOptions) {
    this.reachableSince = deps.clock.now();
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(
      () => void this.sweep().catch((err: unknown) => this.deps.logger.error({ err }, 'offline sweep failed')),
      this.deps.sweepIntervalMs,
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** One sweep; returns the ids that went OFFLINE. Sweeps never overlap. */
  async sweep(): Promise<string[]> {
    if (this.running) return this.running;
    this.running = this.markStale();
    try {
      const ids = await this.running;
      for (const id of ids)
        this.deps.logger.warn({ hostId: id, missedBeats: this.deps.missedBeats }, 'host is OFFLINE: heartbeats stopped');
      for (const id of ids)
        await this.deps.onOffline?.(id).catch((err: unknown) => this.deps.logger.error({ hostId: id, err }, 'handling a lost host failed'));
      return ids;
    } finally {
      this.running = undefined;
    }
  }

  private async markStale(): Promise<string[]> {
    try {
      await this.deps.clock.sync?.();
      const now = this.deps.clock.now();
      if (this.reachableSince !== undefined) {
        const afterOutage = this.reachableSince === 'now';
        const since = this.reachableSince === 'now' ? now : this.reachableSince;
        const longest = (await this.deps.store.hosts.list()).reduce((max, h) => Math.max(max, h.heartbeatIntervalMs), 0);
        this.reachableSince = undefined;
        this.graceUntil = since + longest * this.deps.missedBeats;
        if (this.graceUntil > now) {
          const why = afterOutage ? 'store reachable again' : 'orchestrator started';
          this.deps.logger.warn({ graceMs: this.graceUntil - now }, `${why}: no host is marked OFFLINE until its agents could beat again`);
        }
      }
      if (now < this.graceUntil) return [];
      return await this.deps.store.hosts.markStaleOffline(now, this.deps.missedBeats);
    } catch (err) {
      this.reachableSince = 'now';
      throw err;
    }
  }
}
