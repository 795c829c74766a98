// The database's clock, read without a round trip: this process's clock plus
// the offset to the database's, measured every few seconds (and before every
// offline sweep) with one `select now` (error: half the round trip). Heartbeat
// times are stamped by it and the offline detector compares with it, so a
// replica whose own clock is off by a minute neither ages nor freshens hosts;
// the leader lease runs on the same clock (store/repos/leases.ts).

import type { Logger } from '../shared/logger.js';
import { systemClock, type Clock } from './clock.js';

/** How often the offset is measured again between sweeps (a stepped system clock is noticed within this). */
export const DATABASE_CLOCK_SYNC_MS = 5000;
/** An offset above this is logged: the replica's clock needs NTP, though nothing here depends on it. */
const OFFSET_WARN_MS = 1000;

export interface DatabaseClockOptions {
  /** The database's now (store.leases.now()). */
  read: () => Promise<number>;
  logger: Logger;
  /** This process's clock (tests skew one). */
  local?: Clock;
  syncIntervalMs?: number;
}

export class DatabaseClock implements Clock {
  private readonly local: Clock;
  private offset = 0;
  private warned = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: DatabaseClockOptions) {
    this.local = deps.local ?? systemClock;
  }

  now(): number {
    return this.local.now() + this.offset;
  }

  /** The database's clock minus this process's, as last measured (ms). */
  get offsetMs(): number {
    return this.offset;
  }

  /** Measures the offset now; throws when the database does not answer (the old offset stays). */
  async sync(): Promise<void> {
    const sent = this.local.now();
    const database = await this.deps.read();
    const received = this.local.now();
    this.offset = Math.round(database - (sent + received) / 2);
    const off = Math.abs(this.offset) > OFFSET_WARN_MS;
    if (off && !this.warned)
      this.deps.logger.warn(
        { offsetMs: this.offset },
        "this replica's clock differs from the database's: heartbeats and offline detection use the database's",
      );
    this.warned = off;
  }

  /** Re-measures every syncIntervalMs; a failed measurement keeps the last offset (the sweep reports the outage). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sync().catch(() => undefined), this.deps.syncIntervalMs ?? DATABASE_CLOCK_SYNC_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
