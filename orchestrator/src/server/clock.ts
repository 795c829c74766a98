// The orchestrator's injected time source: tests pass a manual clock so long
// windows (missed heartbeats, leases, backoff) run in milliseconds.

export interface Clock {
  now(): number;
  /** Re-reads the source before a decision that must be current (the database clock: database-clock.ts); throws when it is unreachable. */
  sync?(): Promise<void>;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private current = 1_700_000_000_000) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
