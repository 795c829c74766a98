// Guards the buffer maths (Agones' percent formula in integers, 0/1/99 %,
// count and percent → the larger, monotone in allocated), the fleet classes
// and the fill ratio (a real ratio: SimpleCloud's integer division read 0 %
// until full).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { desiredBuffer, fillOf, fleetClass, fleetCounts, percentBuffer, type FleetInstance } from '../../src/provisioning/buffer.js';

const inst = (id: string, over: Partial<FleetInstance> = {}): FleetInstance => ({
  id,
  hostId: 'h1',
  state: 'online',
  allocated: false,
  playersOnline: 0,
  maxPlayers: 20,
  emptySince: 0,
  ...over,
});

describe('percentBuffer (Agones: total = ceil(allocated*100/(100-pct)))', () => {
  it.each([
    [0, 0, 0],
    [0, 10, 0],
    [1, 0, 0],
    [1, 1, 1],
    [1, 99, 1],
    [1, 100, 2],
    [1, 198, 2],
    [1, 199, 3],
    [10, 9, 1],
    [10, 10, 2],
    [25, 3, 1],
    [25, 4, 2],
    [50, 7, 7],
    [99, 0, 0],
    [99, 1, 99],
    [99, 3, 297],
    [33, 1_000_000, 492_538],
  ])('%i %% of %i allocated keeps %i ready', (pct, allocated, expected) => {
    expect(percentBuffer(pct, allocated)).toBe(expected);
  });

  it('matches the exact rational ceil computed with BigInt (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 10_000_000 }), (pct, a) => {
        const n = BigInt(a) * 100n;
        const d = BigInt(100 - pct);
        const total = (n + d - 1n) / d;
        expect(percentBuffer(pct, a)).toBe(Number(total) - a);
      }),
    );
  });

  it.each([
    [100, 1],
    [-1, 1],
    [1.5, 1],
    [10, -1],
    [10, 0.5],
  ])('refuses percent %s with allocated %s', (pct, a) => {
    expect(() => percentBuffer(pct, a)).toThrow(RangeError);
  });
});

describe('desiredBuffer', () => {
  it.each<[string, { count?: number; percent?: number }, number, number]>([
    ['no buffer', {}, 5, 0],
    ['an absolute count', { count: 3 }, 100, 3],
    ['a percent', { percent: 20 }, 8, 2],
    ['both: the count wins when larger', { count: 5, percent: 20 }, 8, 5],
    ['both: the percent wins when larger', { count: 1, percent: 20 }, 40, 10],
    ['the count keeps a buffer with nothing allocated', { count: 2, percent: 50 }, 0, 2],
  ])('%s', (_name, buffer, allocated, expected) => {
    expect(desiredBuffer(buffer, allocated)).toBe(expected);
  });

  it('is monotone in allocated (property)', () => {
    fc.assert(
      fc.property(
        fc.record({ count: fc.integer({ min: 0, max: 50 }), percent: fc.integer({ min: 0, max: 99 }) }, { requiredKeys: [] }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 1000 }),
        (buffer, a, more) => {
          expect(desiredBuffer(buffer, a + more)).toBeGreaterThanOrEqual(desiredBuffer(buffer, a));
        },
      ),
    );
  });
});

describe('fleetClass and fleetCounts', () => {
  it.each<[string, Partial<FleetInstance>, string]>([
    ['online and unallocated is Ready', {}, 'ready'],
    ['allocated wins over the state', { allocated: true, state: 'paused' }, 'allocated'],
    ['draining is not Ready', { draining: true }, 'draining'],
    ['starting counts toward the buffer, not allocatable', { state: 'starting' }, 'starting'],
    ['installing is starting', { state: 'installing' }, 'starting'],
    ['a backup is busy', { state: 'backup' }, 'busy'],
    ['pausing is paused', { state: 'pausing' }, 'paused'],
    ['stopping is stopped', { state: 'stopping' }, 'stopped'],
    ['archived', { state: 'archived' }, 'archived'],
    ['degraded is unhealthy', { state: 'degraded' }, 'unhealthy'],
    ['deleting is other even when allocated', { state: 'deleting', allocated: true }, 'other'],
  ])('%s', (_name, over, expected) => {
    expect(fleetClass(inst('i', over))).toBe(expected);
  });

  it('counts each class', () => {
    const counts = fleetCounts([
      inst('a'),
      inst('b'),
      inst('c', { allocated: true }),
      inst('d', { state: 'starting' }),
      inst('e', { state: 'paused' }),
    ]);
    expect(counts).toMatchObject({ ready: 2, allocated: 1, starting: 1, paused: 1, stopped: 0 });
  });
});

describe('fillOf', () => {
  it('is a real ratio over Ready and allocated instances (1 of 20 is 0.05, not 0)', () => {
    expect(fillOf([inst('a', { playersOnline: 1 })])).toEqual({ players: 1, capacity: 20, ratio: 0.05 });
  });

  it('ignores starting, paused and unknown-capacity instances', () => {
    const f = fillOf([
      inst('a', { allocated: true, playersOnline: 15 }),
      inst('b'),
      inst('c', { state: 'starting', playersOnline: 3 }),
      inst('d', { maxPlayers: null, playersOnline: 9 }),
    ]);
    expect(f).toEqual({ players: 15, capacity: 40, ratio: 0.375 });
  });

  it('is null with no known capacity', () => {
    expect(fillOf([]).ratio).toBeNull();
  });
});
