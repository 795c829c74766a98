// Guards placement: ONLINE hosts only, memory must fit, packed fills the
// busiest fitting host, distributed spreads a group; NO_CAPACITY explains why;
// caps; and invariants over 1,000 random host sets.

import { describe, expect, it } from 'vitest';
import {
  checkCaps,
  compareHosts,
  limitRooms,
  placeInstance,
  type PlacementHost,
  type PlacementStrategy,
} from '../../src/placement/placement.js';
import { measurePlacementLatency, seededRandom, simulatedHosts } from '../../src/placement/placement-bench.js';

const host = (
  id: string,
  memoryMb: number,
  memoryReservedMb: number,
  status: PlacementHost['status'] = 'ONLINE',
  groupCounts: Record<string, number> = {},
): PlacementHost => ({
  id,
  status,
  memoryMb,
  memoryReservedMb,
  groupCounts,
});

describe('placeInstance', () => {
  const cases: [string, PlacementHost[], number, PlacementStrategy, string][] = [
    ['packed picks the busiest host that fits', [host('a', 8192, 1024), host('b', 8192, 6144), host('c', 8192, 4096)], 1024, 'packed', 'b'],
    [
      'packed skips a busier host that does not fit',
      [host('a', 8192, 1024), host('b', 8192, 7680), host('c', 8192, 4096)],
      1024,
      'packed',
      'c',
    ],
    ['packed tie → lowest id', [host('z', 8192, 2048), host('m', 8192, 2048)], 1024, 'packed', 'm'],
    ['exact fit is accepted', [host('a', 4096, 2048)], 2048, 'packed', 'a'],
    [
      'never RECOVERING, OFFLINE or MAINTENANCE',
      [host('r', 65536, 9000, 'RECOVERING'), host('o', 65536, 9000, 'OFFLINE'), host('m', 65536, 9000, 'MAINTENANCE'), host('ok', 4096, 0)],
      1024,
      'packed',
      'ok',
    ],
    [
      'distributed picks the fewest instances of the group',
      [host('a', 8192, 0, 'ONLINE', { lobby: 3 }), host('b', 8192, 6000, 'ONLINE', { lobby: 1, bedwars: 9 })],
      1024,
      'distributed',
      'b',
    ],
    [
      'distributed then least reserved',
      [host('a', 8192, 4000, 'ONLINE', { lobby: 1 }), host('b', 8192, 1000, 'ONLINE', { lobby: 1 })],
      1024,
      'distributed',
      'b',
    ],
    ['distributed tie → lowest id', [host('b', 8192, 1000), host('a', 8192, 1000)], 1024, 'distributed', 'a'],
    [
      'distributed still needs the memory',
      [host('a', 8192, 8000, 'ONLINE', { lobby: 0 }), host('b', 8192, 0, 'ONLINE', { lobby: 5 })],
      1024,
      'distributed',
      'b',
    ],
  ];
  it.each(cases)('%s', (_name, hosts, memoryMb, strategy, expected) => {
    const result = placeInstance(hosts, { groupId: 'lobby', memoryMb }, strategy);
    expect(result.ok && result.value).toBe(expected);
  });

  it.each([
    ['no host fits', [host('a', 4096, 3072), host('b', 4096, 4096)], /no ONLINE host has 2048 MiB free; best has 1024 MiB \(a\)/],
    [
      'no ONLINE host',
      [host('a', 65536, 0, 'OFFLINE'), host('b', 65536, 0, 'MAINTENANCE'), host('c', 65536, 0, 'OFFLINE')],
      /no ONLINE host to place 2048 MiB on \(3 host\(s\): 2 OFFLINE, 1 MAINTENANCE\)/,
    ],
    ['no host at all', [], /no hosts are registered/],
  ])('NO_CAPACITY when %s', (_name, hosts, message) => {
    const result = placeInstance(hosts, { groupId: 'g', memoryMb: 2048 }, 'packed');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe('NO_CAPACITY');
      expect(result.error.message).toMatch(message);
      expect(result.error.retryable).toBe(true);
    }
  });

  it.each([0, -5, 1.5, Number.NaN])('refuses a memory request of %s', (memoryMb) => {
    const result = placeInstance([host('a', 4096, 0)], { groupId: 'g', memoryMb }, 'packed');
    expect(result.ok || result.error.code).toBe('VALIDATION_FAILED');
  });

  it('holds its invariants over 1,000 random host sets', () => {
    const random = seededRandom(20240607);
    let placed = 0;
    for (let i = 0; i < 1000; i++) {
      const hosts = simulatedHosts(1 + Math.floor(random() * 20), random, ['lobby', 'bedwars']);
      const memoryMb = 256 * (1 + Math.floor(random() * 64));
      const strategy: PlacementStrategy = random() < 0.5 ? 'packed' : 'distributed';
      const result = placeInstance(hosts, { groupId: 'lobby', memoryMb }, strategy);
      const fitting = hosts.filter((h) => h.status === 'ONLINE' && h.memoryMb - h.memoryReservedMb >= memoryMb);
      if (!result.ok) {
        expect(fitting, `set ${i}`).toEqual([]);
        expect(result.error.code).toBe('NO_CAPACITY');
        continue;
      }
      placed += 1;
      const chosen = hosts.find((h) => h.id === result.value);
      expect(chosen?.status).toBe('ONLINE');
      expect(chosen && chosen.memoryMb - chosen.memoryReservedMb).toBeGreaterThanOrEqual(memoryMb);
      const better = compareHosts(strategy, 'lobby');
      for (const other of fitting) expect(better(other, chosen as PlacementHost)).toBeGreaterThanOrEqual(0);
    }
    expect(placed).toBeGreaterThan(100); // the generator exercises both outcomes
    expect(placed).toBeLessThan(1000);
  });
});

describe('checkCaps', () => {
  it.each([
    [{}, { group: 1000, total: 100000 }, null],
    [{ maxInstances: 3 }, { group: 2, total: 50 }, null],
    [
      { maxInstances: 3 },
      { group: 3, total: 50 },
      /^group lobby is at its caps\.maxInstances \(3\): 3 instances count toward it \(archived worlds do not\)$/,
    ],
    [{ maxTotalInstances: 50 }, { group: 0, total: 50 }, /^EnderCloud is at its ENDERCLOUD_MAX_INSTANCES \(50\): 50 instances/],
    [{ scalingMaxInstances: 4 }, { group: 4, total: 9 }, /^group lobby is at its scaling\.maxInstances \(4\)/],
    [{ scalingMaxInstances: 4 }, { group: 3, total: 9 }, null],
    // Both group limits full: the fleet's own is named first.
    [{ scalingMaxInstances: 4, maxInstances: 4 }, { group: 4, total: 9 }, /scaling\.maxInstances \(4\)/],
    [
      { scalingMaxInstances: 2, maxInstances: 9 },
      { group: 5, total: 9 },
      /^group lobby is at its scaling\.maxInstances \(2\): 5 instances/,
    ],
  ])('caps %j with counts %j', (caps, counts, refusal) => {
    const result = checkCaps('lobby', caps, counts);
    if (refusal === null) expect(result.ok).toBe(true);
    else {
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.error.code).toBe('CAP_REACHED');
        expect(result.error.message).toMatch(refusal);
      }
    }
  });
});

describe('limitRooms', () => {
  it('lists every limit with its room, most specific first; a template cap names its template', () => {
    const rooms = limitRooms(
      { scalingMaxInstances: 4, maxInstances: 6, maxTotalInstances: 20 },
      { group: 3, total: 19 },
      { name: 'lobby', maxInstances: 5, current: 5 },
    );
    expect(rooms).toEqual([
      { limit: 'scaling.maxInstances', max: 4, current: 3, room: 1 },
      { limit: 'caps.maxInstances', max: 6, current: 3, room: 3 },
      { limit: 'caps.maxInstances', template: 'lobby', max: 5, current: 5, room: 0 },
      { limit: 'ENDERCLOUD_MAX_INSTANCES', max: 20, current: 19, room: 1 },
    ]);
    const refusal = checkCaps('g', { scalingMaxInstances: 4 }, { group: 3, total: 3 }, { name: 'lobby', maxInstances: 5, current: 5 });
    expect(!refusal.ok && refusal.error.message).toBe(
      'template lobby is at its caps.maxInstances (5) across all groups: 5 instances count toward it (archived worlds do not)',
    );
    expect(!refusal.ok && refusal.error.details).toMatchObject({ cap: 'template.maxInstances', template: 'lobby', limit: 5 });
  });

  it('a limit lowered below the count has no room (never negative)', () => {
    expect(limitRooms({ scalingMaxInstances: 2 }, { group: 5, total: 5 })).toEqual([
      { limit: 'scaling.maxInstances', max: 2, current: 5, room: 0 },
    ]);
  });
});

describe('measurePlacementLatency', () => {
  it('reports a labelled simulation over 1,000 hosts with the injected clock', () => {
    let t = 0;
    const result = measurePlacementLatency({ clock: () => (t += 5), iterations: 20 });
    expect(result).toMatchObject({ simulation: true, hostCount: 1000, iterations: 20, strategy: 'packed', totalMs: 5 });
    expect(result.perPlacementUs).toBe(250);
    expect(result.placed).toBeGreaterThan(0);
  });
});
