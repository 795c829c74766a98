// Guards the idle clock (consecutive zero-player time only, restart on every
// login, the probe's count as presence, stale reports ignored) and the
// idle-tier decision (never with players, allocated or held; the deepest due
// tier; "due at" for the panel).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  idleSince,
  loginExpected,
  nextIdleAction,
  startIdleClock,
  type IdleActionInput,
  type IdleClock,
  type PresenceObservation,
} from '../../src/provisioning/idle.js';
import { parseIdleTiers } from '../../src/provisioning/scaling-policy.js';

const MIN = 60_000;
const T0 = 1_700_000_000_000;
const router = (at: number, playersOnline: number, logins: number[] = [], logouts: number[] = []): PresenceObservation => ({
  router: { at, playersOnline, logins, logouts },
});
const probe = (at: number, playersOnline: number): PresenceObservation => ({ probe: { at, playersOnline } });

function run(steps: [PresenceObservation, number][], start = startIdleClock(T0)): IdleClock {
  return steps.reduce((clock, [obs, now]) => idleSince(clock, obs, now), start);
}

describe('idleSince', () => {
  it.each<[string, [PresenceObservation, number][], number | null]>([
    ['an instance nobody joined is empty since it came online', [[router(T0 + MIN, 0), T0 + MIN]], T0],
    ['a logged-in player stops the clock', [[router(T0 + MIN, 1, [T0 + 30_000]), T0 + MIN]], null],
    [
      'the run starts at the last logout',
      [
        [router(T0 + MIN, 1, [T0 + 30_000]), T0 + MIN],
        [router(T0 + 2 * MIN, 0, [], [T0 + 90_000]), T0 + 2 * MIN],
      ],
      T0 + 90_000,
    ],
    [
      'without a logout time, at the report that saw zero',
      [
        [router(T0 + MIN, 1, [T0 + 30_000]), T0 + MIN],
        [router(T0 + 2 * MIN, 0), T0 + 2 * MIN],
      ],
      T0 + 2 * MIN,
    ],
    [
      'a login and logout between two reports restarts the run',
      [
        [router(T0 + 10 * MIN, 0), T0 + 10 * MIN],
        [router(T0 + 11 * MIN, 0, [T0 + 10.5 * MIN], [T0 + 10.7 * MIN]), T0 + 11 * MIN],
      ],
      T0 + 10.7 * MIN,
    ],
    ['a login alone also restarts it', [[router(T0 + 11 * MIN, 0, [T0 + 10.5 * MIN]), T0 + 11 * MIN]], T0 + 10.5 * MIN],
    [
      'empty reports keep the run going (consecutive time)',
      [
        [router(T0 + MIN, 0), T0 + MIN],
        [router(T0 + 2 * MIN, 0), T0 + 2 * MIN],
        [probe(T0 + 3 * MIN, 0), T0 + 3 * MIN],
      ],
      T0,
    ],
    [
      'a probe count > 0 is presence though the router saw none',
      [
        [router(T0 + MIN, 0), T0 + MIN],
        [probe(T0 + 2 * MIN, 2), T0 + 2 * MIN],
      ],
      null,
    ],
    [
      'after the probe sees zero again, the run starts then',
      [
        [probe(T0 + 2 * MIN, 2), T0 + 2 * MIN],
        [{ ...router(T0 + 3 * MIN, 0), ...probe(T0 + 3 * MIN, 0) }, T0 + 3 * MIN],
      ],
      T0 + 3 * MIN,
    ],
    [
      'the router saying zero is not enough while the probe still sees players',
      [
        [probe(T0 + 2 * MIN, 1), T0 + 2 * MIN],
        [router(T0 + 3 * MIN, 0), T0 + 3 * MIN],
      ],
      null,
    ],
    [
      'a report older than the last one is ignored',
      [
        [router(T0 + 2 * MIN, 1, [T0 + MIN]), T0 + 2 * MIN],
        [router(T0 + MIN, 0), T0 + 3 * MIN],
      ],
      null,
    ],
    [
      'a login in the future (router clock skew) restarts at now, not later',
      [[router(T0 + MIN, 0, [T0 + 5 * MIN], [T0 + 6 * MIN]), T0 + MIN]],
      T0 + MIN,
    ],
  ])('%s', (_name, steps, emptySince) => {
    expect(run(steps).emptySince).toBe(emptySince);
  });

  it('tracks the last login and the cross-checked count', () => {
    const c = run([
      [router(T0 + MIN, 1, [T0 + 10_000]), T0 + MIN],
      [probe(T0 + MIN + 1, 3), T0 + MIN + 1],
    ]);
    expect(c).toMatchObject({ lastLoginAt: T0 + 10_000, playersOnline: 3, emptySince: null });
  });

  it('idle time never exceeds the time since the last login or logout (property)', () => {
    const step = fc.record({
      dt: fc.integer({ min: 1, max: 10 * MIN }),
      routerCount: fc.option(fc.integer({ min: 0, max: 3 })),
      probeCount: fc.option(fc.integer({ min: 0, max: 3 })),
      login: fc.boolean(),
      logout: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        let now = T0;
        let clock = startIdleClock(T0);
        let lastEvent = T0;
        let lastNonZero = T0;
        for (const s of steps) {
          const prevNow = now;
          now += s.dt;
          const at = prevNow + Math.floor(s.dt / 2);
          const obs: PresenceObservation = {};
          if (s.routerCount !== null || s.login || s.logout)
            obs.router = {
              at: now,
              playersOnline: s.routerCount ?? clock.router?.playersOnline ?? 0,
              logins: s.login ? [at] : [],
              logouts: s.logout ? [at] : [],
            };
          if (s.probeCount !== null) obs.probe = { at: now, playersOnline: s.probeCount };
          if (s.login || s.logout) lastEvent = at;
          clock = idleSince(clock, obs, now);
          if (clock.playersOnline > 0) lastNonZero = now;
          if (clock.emptySince === null) {
            expect(clock.playersOnline).toBeGreaterThan(0);
          } else {
            expect(clock.emptySince).toBeGreaterThanOrEqual(lastEvent);
            expect(clock.emptySince).toBeGreaterThanOrEqual(lastNonZero === T0 ? T0 : lastNonZero);
            expect(clock.emptySince).toBeLessThanOrEqual(now);
          }
        }
      }),
    );
  });
});

describe('nextIdleAction', () => {
  const tiers = parseIdleTiers([
    { after: '10m', action: 'pause' },
    { after: '6h', action: 'stop' },
    { after: '7d', action: 'archive' },
  ]);
  const base = (over: Partial<IdleActionInput> = {}): IdleActionInput => ({
    tiers,
    clock: startIdleClock(T0),
    state: 'online',
    allocated: false,
    playersOnline: 0,
    lastTierApplied: null,
    ...over,
  });

  it('waits with the due time for the panel ("pauses in 4 min")', () => {
    expect(nextIdleAction(base(), T0 + 6 * MIN)).toEqual({ wait: { action: 'pause', dueAt: T0 + 10 * MIN } });
  });

  it.each<[string, Partial<IdleActionInput>, number, unknown]>([
    ['pauses at exactly 10 min', {}, T0 + 10 * MIN, { action: 'pause', tier: tiers[0], idleForMs: 10 * MIN }],
    [
      'a paused instance waits for the stop tier',
      { state: 'paused' },
      T0 + 20 * MIN,
      { wait: { action: 'stop', dueAt: T0 + 6 * 60 * MIN } },
    ],
    [
      'stops a paused instance after 6 h',
      { state: 'paused' },
      T0 + 6 * 60 * MIN,
      { action: 'stop', tier: tiers[1], idleForMs: 6 * 60 * MIN },
    ],
    [
      'the deepest due tier when several are due',
      {},
      T0 + 8 * 24 * 60 * MIN,
      { action: 'archive', tier: tiers[2], idleForMs: 8 * 24 * 60 * MIN },
    ],
    ['an archived instance has nothing left', { state: 'archived' }, T0 + 30 * 24 * 60 * MIN, null],
    ['never with a player on', { playersOnline: 1 }, T0 + 60 * MIN, null],
    ['never when the clock counts a player', { clock: { ...startIdleClock(T0), playersOnline: 1 } }, T0 + 60 * MIN, null],
    ['never when allocated', { allocated: true }, T0 + 60 * MIN, null],
    ['never when the fleet holds it for min or buffer', { heldByFleet: true }, T0 + 60 * MIN, null],
    ['never during a transition', { state: 'backup' }, T0 + 60 * MIN, null],
    [
      'not again in the same run when no wake is known',
      { lastTierApplied: { action: 'pause', at: T0 + 10 * MIN } },
      T0 + 60 * MIN,
      { wait: { action: 'stop', dueAt: T0 + 6 * 60 * MIN } },
    ],
    [
      'a wake restarts the run: a world woken after 7 h is not stopped on the spell before it',
      { awakeSince: T0 + 7 * 60 * MIN, lastTierApplied: { action: 'pause', at: T0 + 10 * MIN } },
      T0 + 7 * 60 * MIN + 1000,
      { wait: { action: 'pause', dueAt: T0 + 7 * 60 * MIN + 10 * MIN } },
    ],
    [
      'after a wake the tiers count from it again',
      { awakeSince: T0 + 60 * MIN, lastTierApplied: { action: 'pause', at: T0 + 10 * MIN } },
      T0 + 70 * MIN,
      { action: 'pause', tier: tiers[0], idleForMs: 10 * MIN },
    ],
    [
      'a wake before the empty run changes nothing',
      { awakeSince: T0 - MIN },
      T0 + 10 * MIN,
      { action: 'pause', tier: tiers[0], idleForMs: 10 * MIN },
    ],
    [
      'a paused world counts from its empty run, not from when it came up',
      { state: 'paused', awakeSince: T0 + 5 * MIN },
      T0 + 6 * 60 * MIN,
      { action: 'stop', tier: tiers[1], idleForMs: 6 * 60 * MIN },
    ],
    [
      'a tier applied in an earlier run does not count',
      { lastTierApplied: { action: 'pause', at: T0 - MIN } },
      T0 + 60 * MIN,
      { action: 'pause', tier: tiers[0], idleForMs: 60 * MIN },
    ],
    ['no tiers, nothing to do', { tiers: [] }, T0 + 60 * MIN, null],
  ])('%s', (_name, over, now, expected) => {
    expect(nextIdleAction(base(over), now)).toEqual(expected);
  });

  it('a login restarts the count: 9 min idle, login, 9 min idle → still no pause', () => {
    let clock = startIdleClock(T0);
    clock = idleSince(clock, router(T0 + 9 * MIN, 0, [T0 + 9 * MIN], [T0 + 9 * MIN + 1000]), T0 + 9 * MIN + 1000);
    expect(nextIdleAction(base({ clock }), T0 + 18 * MIN)).toEqual({ wait: { action: 'pause', dueAt: T0 + 19 * MIN + 1000 } });
  });

  it('never returns an action with players, allocated or held (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3 }),
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom('online', 'paused', 'stopped', 'archived', 'starting' as const),
        fc.integer({ min: 0, max: 30 * 24 * 60 * MIN }),
        (players, allocated, held, state, idle) => {
          const d = nextIdleAction(base({ playersOnline: players, allocated, heldByFleet: held, state }), T0 + idle);
          if (players > 0 || allocated || held) expect(d).toBeNull();
          if (d && 'action' in d) expect(idle).toBeGreaterThanOrEqual(d.tier.afterMs);
        },
      ),
    );
  });
});

describe('loginExpected', () => {
  it('a routed join restarts an empty run now; a clock with players on is left as it is', () => {
    const empty = startIdleClock(T0);
    expect(loginExpected(empty, T0 + 5 * MIN)).toEqual({ ...empty, emptySince: T0 + 5 * MIN });
    const on = idleSince(empty, router(T0 + MIN, 2, [T0 + MIN]), T0 + MIN);
    expect(loginExpected(on, T0 + 5 * MIN)).toBe(on);
    // never moves the run backwards (a join answered with a stale clock)
    expect(loginExpected(startIdleClock(T0 + 9 * MIN), T0 + 5 * MIN).emptySince).toBe(T0 + 9 * MIN);
  });
});
