// Marks hosts OFFLINE after N missed heartbeats of their own interval: a
// periodic sweep over the injected clock (one UPDATE per sweep). While the
// store was unreachable no heartbeat could be recorded, so after a failed
// sweep no host is marked until every host had N of its intervals to beat
// again (a PostgreSQL restart never looks like the loss of every host).

import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';

export interface OfflineDetectorOptions {
  store: Store;
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
  /** Set by a failed sweep: the store was unreachable. */
  private storeFailed = false;
  private graceUntil = 0;

  constructor(private readonly deps: OfflineDetectorOptions) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweep().catch((err: unknown) => this.deps.logger.error({ err }, 'offline sweep failed')), this.deps.sweepIntervalMs);
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
      for (const id of ids) this.deps.logger.warn({ hostId: id, missedBeats: this.deps.missedBeats }, 'host is OFFLINE: heartbeats stopped');
      for (const id of ids) await this.deps.onOffline?.(id).catch((err: unknown) => this.deps.logger.error({ hostId: id, err }, 'handling a lost host failed'));
      return ids;
    } finally {
      this.running = undefined;
    }
  }

  private async markStale(): Promise<string[]> {
    const now = this.deps.clock.now();
    try {
      if (this.storeFailed) {
        const longest = (await this.deps.store.hosts.list()).reduce((max, h) => Math.max(max, h.heartbeatIntervalMs), 0);
        this.storeFailed = false;
        this.graceUntil = now + longest * this.deps.missedBeats;
        this.deps.logger.warn({ graceMs: this.graceUntil - now }, 'store reachable again: no host is marked OFFLINE until its agents could beat again');
      }
      if (now < this.graceUntil) return [];
      return await this.deps.store.hosts.markStaleOffline(now, this.deps.missedBeats);
    } catch (err) {
      this.storeFailed = true;
      throw err;
    }
  }
}
