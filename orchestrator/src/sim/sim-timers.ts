// SIMULATION: the Timers (src/shared/timers.ts) of the simulated orchestrator's
// loops (the supervisor's pass and its readiness probes), driven by the manual
// clock: nothing fires until the harness calls fireDue, and then in due order
// (ties in the order they were set), so a seed always sees the same sequence.

import type { ManualClock } from '../server/clock.js';
import type { Timers } from '../shared/timers.js';

interface Pending {
  due: number;
  seq: number;
  fn: () => void;
}

export class SimTimers implements Timers {
  private readonly pending = new Map<number, Pending>();
  private seq = 0;

  constructor(private readonly clock: ManualClock) {}

  setTimeout(fn: () => void, ms: number): unknown {
    const handle = ++this.seq;
    this.pending.set(handle, { due: this.clock.now() + Math.max(0, ms), seq: handle, fn });
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Runs every timer due by now (also those the ones it runs set for now), each followed by a settle; time a slow call takes waits for the next round. */
  async fireDue(settle: () => Promise<void>): Promise<void> {
    const now = this.clock.now();
    for (let n = 0; n < 1000; n++) {
      const next = [...this.pending.values()].filter((p) => p.due <= now).sort((a, b) => a.due - b.due || a.seq - b.seq)[0];
      if (!next) return;
      this.pending.delete(next.seq);
      next.fn();
      await settle();
    }
  }
}
