// Marks hosts OFFLINE after N missed heartbeats of their own interval: a
// periodic sweep over the injected clock (one UPDATE per sweep).

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
    this.running = this.deps.store.hosts.markStaleOffline(this.deps.clock.now(), this.deps.missedBeats);
    try {
      const ids = await this.running;
      for (const id of ids) this.deps.logger.warn({ hostId: id, missedBeats: this.deps.missedBeats }, 'host is OFFLINE: heartbeats stopped');
      for (const id of ids) await this.deps.onOffline?.(id).catch((err: unknown) => this.deps.logger.error({ hostId: id, err }, 'handling a lost host failed'));
      return ids;
    } finally {
      this.running = undefined;
    }
  }
}
