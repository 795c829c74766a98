// Guards the allocation choice (Ready, unallocated, not draining, matching
// variant and labels; packed: busiest host; distributed: fewest allocated of
// the group) and the self-release of an allocation that stays empty.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { explainNoMatch, rankAllocatable, shouldRelease } from '../../src/provisioning/allocation.js';
import { fleetClass, type FleetInstance } from '../../src/provisioning/buffer.js';
import type { FleetHost } from '../../src/provisioning/instance-choice.js';

const NOW = 1_700_000_000_000;
const inst = (id: string, hostId: string | null, over: Partial<FleetInstance> = {}): FleetInstance => ({
  id,
  hostId,
  state: 'online',
  allocated: false,
  playersOnline: 0,
  maxPlayers: 10,
  emptySince: NOW,
  variantId: 'default',
  ...over,
});
const hosts: FleetHost[] = [
  { id: 'big', instanceCount: 8 },
  { id: 'small', instanceCount: 2 },
  { id: 'mid', instanceCount: 5 },
];

describe('explainNoMatch', () => {
  const solo = (id: string, host = 'big') => inst(id, host, { labels: { mode: 'solo', map: 'a' } });
  const squads = (id: string, host = 'big') => inst(id, host, { labels: { mode: 'squads', map: 'b' } });
  it.each<[string, FleetInstance[], FleetHost[], { variantId?: string; labels?: Record<string, string> }, string]>([
    [
      'the reported case: a label no Ready instance has, with what the Ready have',
      [solo('a'), squads('b')],
      hosts,
      { labels: { mode: 'duels' } },
      'no Ready instance of group lobby has label mode=duels (2 Ready: mode=solo, mode=squads)',
    ],
    [
      'only the labels that matched nothing are named',
      [solo('a'), squads('b')],
      hosts,
      { labels: { mode: 'duels', map: 'a' } },
      'no Ready instance of group lobby has label mode=duels (2 Ready: mode=solo map=a, mode=squads map=b)',
    ],
    [
      'two labels that matched nothing',
      [solo('a'), squads('b')],
      hosts,
      { labels: { mode: 'duels', map: 'c' } },
      'no Ready instance of group lobby has labels mode=duels, map=c (2 Ready: mode=solo map=a, mode=squads map=b)',
    ],
    [
      'each label on some, all of them on none',
      [solo('a'), squads('b')],
      hosts,
      { labels: { mode: 'solo', map: 'b' } },
      'no Ready instance of group lobby has all of the labels mode=solo, map=b (2 Ready: mode=solo map=a, mode=squads map=b)',
    ],
    [
      'a key the Ready instances lack, and counted duplicates',
      [inst('a', 'big'), solo('b'), solo('c')],
      hosts,
      { labels: { mode: 'duels' } },
      'no Ready instance of group lobby has label mode=duels (3 Ready: mode unset, mode=solo ×2)',
    ],
    [
      'allocated, starting and closed-host instances are not Ready',
      [inst('a', 'big', { allocated: true }), inst('b', 'big', { state: 'starting' }), inst('c', 'off')],
      [...hosts, { id: 'off', instanceCount: 1, status: 'OFFLINE' }],
      { labels: { mode: 'solo' } },
      'group lobby has no Ready, unallocated instance in its buffer (1 allocated, 1 starting)',
    ],
    [
      'a variant no Ready instance is of',
      [solo('a'), inst('b', 'big', { variantId: 'hard' })],
      hosts,
      { variantId: 'easy' },
      'no Ready instance of group lobby is of variant easy (2 Ready: variant default, variant hard)',
    ],
    [
      'labels within the asked variant',
      [solo('a'), inst('b', 'big', { variantId: 'hard', labels: { mode: 'duels' } })],
      hosts,
      { variantId: 'default', labels: { mode: 'duels' } },
      'no Ready instance of variant default of group lobby has label mode=duels (1 Ready: mode=solo)',
    ],
    [
      'no filter, yet nothing taken: concurrent allocations',
      [solo('a')],
      hosts,
      {},
      'the 1 Ready instance of group lobby were taken by concurrent allocations; retry',
    ],
  ])('%s', (_name, instances, hs, filter, message) => {
    expect(rankAllocatable(instances, hs, 'packed', filter).length === 0 || Object.keys(filter).length === 0).toBe(true);
    expect(explainNoMatch('lobby', instances, hs, filter)).toBe(message);
  });

  it('lists at most five label sets', () => {
    const many = Array.from({ length: 8 }, (_, n) => inst(`i${n}`, 'big', { labels: { mode: `m${n}` } }));
    expect(explainNoMatch('lobby', many, hosts, { labels: { mode: 'x' } })).toBe(
      'no Ready instance of group lobby has label mode=x (8 Ready: mode=m0, mode=m1, mode=m2, mode=m3, mode=m4, and 3 more)',
    );
  });
});

describe('rankAllocatable', () => {
  const chooseAllocatable = (...args: Parameters<typeof rankAllocatable>) => rankAllocatable(...args)[0];
  it.each<[string, FleetInstance[], 'packed' | 'distributed', { variantId?: string; labels?: Record<string, string> }, string | undefined]>(
    [
      ['packed: the busiest host, so the others empty out', [inst('s', 'small'), inst('b', 'big'), inst('m', 'mid')], 'packed', {}, 'b'],
      [
        'distributed: the host with the fewest allocated of the group',
        [
          inst('b', 'big'),
          inst('s', 'small'),
          inst('s-alloc', 'small', { allocated: true }),
          inst('m', 'mid'),
          inst('m-alloc', 'mid', { allocated: true }),
        ],
        'distributed',
        {},
        'b',
      ],
      [
        'distributed tie on allocated: the least busy host',
        [inst('b', 'big'), inst('s', 'small'), inst('m', 'mid')],
        'distributed',
        {},
        's',
      ],
      ['never an allocated instance', [inst('b', 'big', { allocated: true }), inst('s', 'small')], 'packed', {}, 's'],
      ['never a draining one', [inst('b', 'big', { draining: true }), inst('s', 'small')], 'packed', {}, 's'],
      ['never a starting one (not Ready yet)', [inst('b', 'big', { state: 'starting' }), inst('s', 'small')], 'packed', {}, 's'],
      ['never a paused one', [inst('b', 'big', { state: 'paused' })], 'packed', {}, undefined],
      ['only the asked variant', [inst('b', 'big'), inst('s', 'small', { variantId: 'hard' })], 'packed', { variantId: 'hard' }, 's'],
      [
        'every asked label',
        [inst('b', 'big', { labels: { map: 'a' } }), inst('s', 'small', { labels: { map: 'b', mode: 'x' } })],
        'packed',
        { labels: { map: 'b' } },
        's',
      ],
      ['ties by host id, then instance id', [inst('z', 'h2'), inst('y', 'h1'), inst('x', 'h1')], 'packed', {}, 'x'],
      ['nothing Ready: undefined', [], 'packed', {}, undefined],
    ],
  )('%s', (_name, instances, placement, filter, expected) => {
    expect(chooseAllocatable(instances, hosts, placement, filter)).toBe(expected);
  });

  it('ranks every allocatable instance best first (packed: busiest host; ties by host id, then instance id)', () => {
    const instances = [
      inst('s2', 'small'),
      inst('m1', 'mid'),
      inst('b2', 'big'),
      inst('s1', 'small'),
      inst('b1', 'big'),
      inst('p', 'big', { state: 'paused' }),
      inst('a', 'big', { allocated: true }),
    ];
    expect(rankAllocatable(instances, hosts, 'packed')).toEqual(['b1', 'b2', 'm1', 's1', 's2']);
    expect(rankAllocatable(instances, hosts, 'distributed')).toEqual(['s1', 's2', 'm1', 'b1', 'b2']);
  });

  it('skips hosts that are not ONLINE (offline, recovering, in maintenance)', () => {
    const withStatus: FleetHost[] = [
      { id: 'big', instanceCount: 8, status: 'MAINTENANCE' },
      { id: 'mid', instanceCount: 5, status: 'OFFLINE' },
      { id: 'small', instanceCount: 2, status: 'ONLINE' },
    ];
    expect(chooseAllocatable([inst('b', 'big'), inst('m', 'mid'), inst('s', 'small')], withStatus, 'packed')).toBe('s');
  });

  it('only ever returns a Ready, unallocated instance (property)', () => {
    const arb = fc.array(
      fc.record({
        host: fc.constantFrom('big', 'small', 'mid', null),
        state: fc.constantFrom('online', 'starting', 'paused', 'degraded' as const),
        allocated: fc.boolean(),
        draining: fc.boolean(),
      }),
      { maxLength: 12 },
    );
    fc.assert(
      fc.property(arb, fc.constantFrom('packed', 'distributed' as const), (xs, placement) => {
        const instances = xs.map((x, n) => inst(`i${n}`, x.host, { state: x.state, allocated: x.allocated, draining: x.draining }));
        const id = chooseAllocatable(instances, hosts, placement);
        const ready = instances.filter((i) => fleetClass(i) === 'ready' && i.hostId !== null);
        if (ready.length === 0) expect(id).toBeUndefined();
        else expect(ready.map((i) => i.id)).toContain(id);
      }),
    );
  });
});

describe('shouldRelease', () => {
  const allocation = { sessionId: 's1', allocatedAt: NOW };
  it.each<[string, { playersOnline: number; emptySince: number | null }, number | undefined, number, unknown]>([
    ['no policy: never', { playersOnline: 0, emptySince: NOW }, undefined, NOW + 1e9, { release: false, dueAt: null }],
    ['with a player: never', { playersOnline: 1, emptySince: null }, 60_000, NOW + 1e9, { release: false, dueAt: null }],
    [
      'a fresh allocation gets the full delay for its first player',
      { playersOnline: 0, emptySince: NOW - 3_600_000 },
      60_000,
      NOW + 59_999,
      { release: false, dueAt: NOW + 60_000 },
    ],
    [
      'released once empty for the delay',
      { playersOnline: 0, emptySince: NOW + 10_000 },
      60_000,
      NOW + 70_000,
      { release: true, reason: expect.stringContaining('session s1: instance empty for 60s') },
    ],
  ])('%s', (_name, instance, delay, now, expected) => {
    expect(shouldRelease(allocation, instance, delay, now)).toEqual(expected);
  });
});
