// One periodic background task (a supervisor pass, a provisioner tick): runs
// at start, then `intervalMs` after each run ends, never two runs at once; a
// failed run is logged and the next one still comes; stop waits for the run
// in flight. Timers are injected, so tests drive it without waiting.

import type { Logger } from './logger.js';
import { unrefTimers, type Timers } from './timers.js';

export class PeriodicTask {
  private readonly timers: Timers;
  private timer: unknown;
  private running = false;
  private ticking: Promise<unknown> | undefined;

  constructor(private readonly deps: { name: string; intervalMs: number; run: () => Promise<unknown>; logger: Logger; timers?: Timers }) {
    this.timers = deps.timers ?? unrefTimers;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Runs first after `firstDelayMs` (at once by default), then one interval after each run. */
  start(firstDelayMs = 0): void {
    if (this.running) return;
    this.running = true;
    this.schedule(firstDelayMs);
  }

  /** Runs soon (after something changed); a run in flight is followed by another one interval later. */
  kick(): void {
    if (this.running) this.schedule(0);
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    await this.ticking;
  }

  private schedule(ms: number): void {
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      if (this.ticking) return this.schedule(this.deps.intervalMs);
      this.ticking = this.deps
        .run()
        .then(
          () => undefined,
          (err: unknown) => this.deps.logger.error({ err }, `${this.deps.name} failed`),
        )
        .finally(() => {
          this.ticking = undefined;
          if (this.running) this.schedule(this.deps.intervalMs);
        });
    }, ms);
  }
}
