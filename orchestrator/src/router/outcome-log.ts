// One info line per login outcome (player, client, handshake address, target,
// outcome, reason, duration), bounded by a token bucket so a login flood cannot
// fill the disk; suppressed lines are counted and the count is logged with the
// next line that gets through.

import type { Logger } from '../shared/logger.js';
import type { Clock } from './clock.js';

/** What happened to a login: routed at once, woke its world, held for a starting one, parked on the fallback, or refused. */
export type LoginOutcome = 'routed' | 'woke' | 'held' | 'fallback' | 'refused';

export interface OutcomeLine {
  player: string;
  client: string;
  address: string;
  target: string | null;
  outcome: LoginOutcome;
  reason?: string;
  durationMs: number;
}

/** Pure token bucket on an injected clock: `burst` lines at once, refilled at `perSecond`. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
    private readonly clock: Clock,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }

  take(): boolean {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export class OutcomeLog {
  private readonly bucket: TokenBucket;
  private suppressed = 0;

  constructor(
    private readonly logger: Logger,
    clock: Clock,
    limits: { burst: number; perSecond: number } = { burst: 100, perSecond: 20 },
  ) {
    this.bucket = new TokenBucket(limits.burst, limits.perSecond, clock);
  }

  get suppressedCount(): number {
    return this.suppressed;
  }

  log(line: OutcomeLine): void {
    if (!this.bucket.take()) {
      this.suppressed++;
      return;
    }
    if (this.suppressed > 0) {
      this.logger.warn({ suppressed: this.suppressed }, 'connection log lines suppressed by the rate bound');
      this.suppressed = 0;
    }
    this.logger.info(line, `login ${line.outcome}`);
  }
}
