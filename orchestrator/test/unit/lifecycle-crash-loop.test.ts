// Guards the crash-loop breaker: five unexpected exits inside ten minutes trip
// it, spread-out exits do not, reset clears it, and restarts back off.

import { describe, expect, it } from 'vitest';
import {
  DEFAULT_CRASH_LOOP_POLICY as P,
  EMPTY_CRASH_LOOP,
  backoffDelay,
  crashLoopView,
  recordExit,
  resetCrashLoop,
  shouldAutoRestart,
  type CrashLoopState,
} from '../../src/lifecycle/crash-loop.js';

const MIN = 60_000;
const crash = (at: number, exitCode: number | null = 1, oomKilled = false) => ({ at, exitCode, oomKilled });

function record(times: number[]): { state: CrashLoopState; trippedAt: number[] } {
  let state = EMPTY_CRASH_LOOP;
  const trippedAt: number[] = [];
  for (const t of times) {
    const r = recordExit(state, crash(t));
    state = r.state;
    if (r.justTripped) trippedAt.push(t);
  }
  return { state, trippedAt };
}

describe('crash-loop breaker', () => {
  it.each([
    ['5 exits within the window trip it', [0, 1 * MIN, 2 * MIN, 3 * MIN, 4 * MIN], true],
    ['5 exits 2 s apart trip it', [0, 2_000, 4_000, 6_000, 8_000], true],
    ['4 exits do not trip it', [0, MIN, 2 * MIN, 3 * MIN], false],
    ['5 exits spread beyond 10 minutes do not trip it', [0, 3 * MIN, 6 * MIN, 9 * MIN, 12 * MIN], false],
    ['exits 2.5 min apart for an hour never trip it', Array.from({ length: 24 }, (_, i) => i * 2.5 * MIN), false],
    ['the fifth exit exactly at the window edge does not count the first', [0, MIN, 2 * MIN, 3 * MIN, 10 * MIN], false],
  ])('%s', (_name, times, tripped) => {
    expect(record(times).state.tripped).toBe(tripped);
  });

  it('trips once, on the fifth exit, and records when', () => {
    const { state, trippedAt } = record([0, 10, 20, 30, 40, 50]);
    expect(trippedAt).toEqual([40]);
    expect(state.trippedAt).toBe(40);
    expect(state.exits.length).toBeLessThanOrEqual(P.maxExits);
  });

  it('refuses automatic restarts once tripped, naming the reset', () => {
    const { state } = record([0, 10, 20, 30, 40]);
    const decision = shouldAutoRestart(state, 'on-failure', { exitCode: 1, oomKilled: false }, 50);
    expect(decision).toMatchObject({ restart: false });
    if (!decision.restart) expect(decision.reason).toMatch(/admin must reset/);
  });

  it('reset clears the history and re-enables restarts', () => {
    const { state } = record([0, 10, 20, 30, 40]);
    expect(state.tripped).toBe(true);
    const cleared = resetCrashLoop();
    expect(cleared).toEqual({ exits: [], tripped: false, trippedAt: null });
    const next = recordExit(cleared, crash(100));
    expect(next.state.tripped).toBe(false);
    expect(shouldAutoRestart(next.state, 'on-failure', { exitCode: 1, oomKilled: false }, 100)).toMatchObject({ restart: true });
  });

  it.each([
    ['never', 1, false, false],
    ['on-failure', 1, false, true],
    ['on-failure', 0, true, true],
    ['on-failure', 0, false, false],
    ['on-failure', null, false, true],
    ['always', 0, false, true],
  ] as const)('policy %s, exit code %s, oom %s → restart %s', (policy, exitCode, oomKilled, restart) => {
    const state = recordExit(EMPTY_CRASH_LOOP, crash(0, exitCode, oomKilled)).state;
    expect(shouldAutoRestart(state, policy, { exitCode, oomKilled }, 0).restart).toBe(restart);
  });

  it('backs off 1 s, 2 s, 4 s, 8 s … capped at 60 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffDelay(n))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
    expect(backoffDelay(1000)).toBe(60_000);
  });

  it('spaces successive restarts by the backoff from the last exit', () => {
    let state = EMPTY_CRASH_LOOP;
    const delays: number[] = [];
    let t = 0;
    for (let i = 0; i < 4; i++) {
      state = recordExit(state, crash(t)).state;
      const d = shouldAutoRestart(state, 'on-failure', { exitCode: 1, oomKilled: false }, t);
      if (!d.restart) throw new Error('expected a restart');
      delays.push(d.delayMs);
      expect(d.notBefore).toBe(t + d.delayMs);
      t = d.notBefore + 5_000; // the restarted server crashes 5 s later
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000]);
  });

  it('counts only the window in the API view', () => {
    const { state } = record([0, MIN, 2 * MIN]);
    expect(crashLoopView(state, 2 * MIN)).toMatchObject({ count: 3, windowMs: 10 * MIN, tripped: false });
    expect(crashLoopView(state, 11 * MIN)).toMatchObject({ count: 1 });
  });
});
