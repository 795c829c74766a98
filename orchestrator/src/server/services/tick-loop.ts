// A periodic loop of one async tick at a time: the next tick is armed only
// after the last one settled, a failed tick is reported and the loop goes on,
// and stop() waits for a tick in flight. The backup scheduler and the stats
// collector run on it.

import type { Logger } from '../../shared/logger.js';
import { unrefTimers, type Timers } from '../../shared/timers.js';

export interface TickLoopOptions {
  timers: Timers;
  intervalMs: number;
  tick(): Promise<unknown>;
  /** A tick threw; the loop carries on at the next interval. */
  onError(err: unknown): void;
}

export class TickLoop {
  private timer: unknown;
  private running = false;
  private ticking: Promise<unknown> | undefined;

  constructor(private readonly o: TickLoopOptions) {}

  /** Arms the first tick after `firstDelayMs`, then one every interval; a second start does nothing. */
  start(firstDelayMs: number): void {
    if (this.running) return;
    this.running = true;
    this.schedule(firstDelayMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== undefined) this.o.timers.clearTimeout(this.timer);
    this.timer = undefined;
    await this.ticking;
  }

  private schedule(ms: number): void {
    this.timer = this.o.timers.setTimeout(() => {
      this.timer = undefined;
      this.ticking = this.o.tick()
        .catch((err: unknown) => this.o.onError(err))
        .finally(() => {
          this.ticking = undefined;
          if (this.running) this.schedule(this.o.intervalMs);
        });
    }, ms);
  }
}

/** The loop of a service configured with `timers` (unref'd by default), `intervalMs` and `logger`; a failed tick is logged as '<what> tick failed'. */
export function serviceLoop(o: { timers?: Timers; intervalMs: number; logger: Logger }, what: string, tick: () => Promise<unknown>): TickLoop {
  return new TickLoop({ timers: o.timers ?? unrefTimers, intervalMs: o.intervalMs, tick, onError: (err) => o.logger.error({ err }, `${what} tick failed`) });
}
