// Guards planFleet: min and buffer kept (starting counted as pending), fill
// scale-up with step and cooldown, wake before spawn, every cap, scale-down
// only of empty unallocated Ready instances in placement order, never below
// min or buffer, the fill guard, holds; and invariants over random snapshots.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { capsRemainingOf, planFleet, type FleetInput } from '../../src/provisioning/autoscaler.js';
import { limitRooms } from '../../src/placement/placement.js';
import { desiredBuffer, fleetClass, type FleetInstance } from '../../src/provisioning/buffer.js';
import { parseScalingPolicy } from '../../src/provisioning/scaling-policy.js';

const MIN = 60_000;
const NOW = 1_700_000_000_000;
const inst = (id: string, over: Partial<FleetInstance> = {}): FleetInstance => ({
  id,
  hostId: 'h1',
  state: 'online',
  allocated: false,
  playersOnline: 0,
  maxPlayers: 10,
  emptySince: NOW - 60 * MIN,
  ...over,
});
const ROOM = { group: 100, template: 100, global: 100 };

function input(scaling: unknown, instances: FleetInstance[], over: Partial<FleetInput> = {}): FleetInput {
  return {
    group: { id: 'g', placement: 'packed', scaling: parseScalingPolicy(scaling), caps: {} },
    instances,
    hosts: [],
    now: NOW,
    lastScaleUpAt: null,
    lastScaleDownAt: null,
    capsRemaining: ROOM,
    ...over,
  };
}
const despawned = (i: FleetInput) => planFleet(i).despawn.map((d) => d.instanceId);

describe('planFleet: keeping min and buffer', () => {
  it.each<[string, unknown, FleetInstance[], number]>([
    ['spawns up to minInstances', { minInstances: 2 }, [], 2],
    ['allocated instances count toward min', { minInstances: 2 }, [inst('a', { allocated: true }), inst('b')], 0],
    [
      'a starting instance is pending: no second spawn for the same gap',
      { buffer: { count: 2 } },
      [inst('a'), inst('b', { state: 'starting' })],
      0,
    ],
    [
      'the buffer counts only Ready + starting, not allocated',
      { buffer: { count: 2 } },
      [inst('a', { allocated: true }), inst('b', { allocated: true }), inst('c')],
      1,
    ],
    [
      'a percent buffer follows allocated',
      { buffer: { percent: 50 } },
      [inst('a', { allocated: true }), inst('b', { allocated: true }), inst('c', { allocated: true })],
      3,
    ],
    ['count and percent: the larger', { buffer: { count: 1, percent: 25 } }, [inst('a', { allocated: true })], 1],
    ['a paused instance is not Ready', { buffer: { count: 1 } }, [inst('p', { state: 'archived' })], 1],
    ['unhealthy instances do not count', { minInstances: 1 }, [inst('d', { state: 'degraded' })], 1],
    ['a backup keeps the world counted toward min', { minInstances: 1 }, [inst('b', { state: 'backup' })], 0],
  ])('%s', (_name, scaling, instances, spawn) => {
    expect(planFleet(input(scaling, instances)).spawn.count).toBe(spawn);
  });

  it('wakes paused, then stopped, unallocated instances before spawning', () => {
    const plan = planFleet(
      input({ minInstances: 4 }, [
        inst('s', { state: 'stopped' }),
        inst('p', { state: 'paused' }),
        inst('x', { state: 'paused', allocated: true }),
      ]),
    );
    expect(plan.wake.map((w) => w.instanceId)).toEqual(['p', 's']);
    expect(plan.spawn.count).toBe(1);
  });

  it('says why it spawns, with its inputs for the audit', () => {
    const plan = planFleet(input({ minInstances: 1, buffer: { count: 2 } }, []));
    expect(plan.spawn).toEqual({ count: 2, reason: 'minInstances 1 needs 1 more; buffer 2 needs 2 more (ready 0, starting 0)' });
    expect(plan.inputs).toMatchObject({
      groupId: 'g',
      now: NOW,
      bufferTarget: 2,
      need: { min: 1, buffer: 2, scaleUp: 0 },
      room: { effective: 100 },
    });
  });
});

describe('planFleet: caps', () => {
  it.each<[string, Partial<FleetInput>, unknown, number, string]>([
    ['the template cap', { capsRemaining: { group: 9, template: 2, global: 9 } }, { minInstances: 5 }, 2, 'template cap'],
    ['the global cap', { capsRemaining: { group: 9, template: 9, global: 0 } }, { minInstances: 5 }, 0, 'global cap'],
    ['the group cap', { capsRemaining: { group: 1, template: 9, global: 9 } }, { minInstances: 5 }, 1, 'group cap'],
    [
      'scaling.maxInstances over existing instances (any state but archived)',
      {},
      { minInstances: 2, maxInstances: 3, buffer: { count: 5 } },
      1,
      'scaling.maxInstances',
    ],
  ])('never above %s', (_name, over, scaling, count, named) => {
    const plan = planFleet(input(scaling, [inst('a', { allocated: true }), inst('z', { state: 'stopped', allocated: true })], over));
    expect(plan.spawn.count).toBe(count);
    expect(plan.spawn.reason).toContain(named);
  });

  it('never above caps.maxInstances of the group', () => {
    const i = input({ minInstances: 4 }, [inst('a')]);
    i.group.caps = { maxInstances: 2 };
    expect(planFleet(i).spawn).toMatchObject({ count: 1, reason: expect.stringContaining('capped at 1 by caps.maxInstances') });
  });
});

describe('planFleet: archived worlds and why a fleet stays short', () => {
  const archived = (id: string) => inst(id, { state: 'archived', hostId: 'h1', emptySince: null });
  it.each<[string, unknown, FleetInstance[], Partial<FleetInput>, number, string | null]>([
    // The reported stall: max 2, buffer 2, one scale-down archived a world; it must not hold a slot.
    [
      'an archived world takes no slot of scaling.maxInstances',
      { maxInstances: 2, buffer: { count: 2 } },
      [inst('a'), archived('z')],
      {},
      1,
      null,
    ],
    [
      'archived worlds only: the whole buffer is spawned',
      { maxInstances: 2, buffer: { count: 2 } },
      [archived('x'), archived('y'), archived('z')],
      {},
      2,
      null,
    ],
    ['archived worlds count toward no buffer', { buffer: { count: 1 } }, [archived('z')], {}, 1, null],
    [
      'at scaling.maxInstances: short, naming it',
      { maxInstances: 2, buffer: { count: 3 } },
      [inst('a'), inst('b'), archived('z')],
      {},
      0,
      "buffer 3 needs 1 more (ready 2, starting 0): spawns 0 of 1; group g's scaling.maxInstances (2) has no room (1 archived not counted)",
    ],
    [
      'room for fewer than needed',
      { minInstances: 3 },
      [],
      { capsRemaining: { group: 9, template: 9, global: 1, named: [{ name: 'ENDERCLOUD_MAX_INSTANCES (5)', room: 1 }] } },
      1,
      'minInstances 3 needs 3 more: spawns 1 of 3; ENDERCLOUD_MAX_INSTANCES (5) has room for 1',
    ],
    [
      'a limit without a name (a caller that gives none)',
      { minInstances: 1 },
      [],
      { capsRemaining: { group: 0, template: 9, global: 9 } },
      0,
      'minInstances 1 needs 1 more: spawns 0 of 1; a limit leaves no room',
    ],
    ['nothing missing: not short, even at a limit', { maxInstances: 1, buffer: { count: 1 } }, [inst('a')], {}, 0, null],
  ])('%s', (_name, scaling, instances, over, spawn, short) => {
    const plan = planFleet(input(scaling, instances, over));
    expect(plan.spawn.count).toBe(spawn);
    expect(plan.short?.reason ?? null).toBe(short);
  });

  it('names the binding limits (what the reported reason changes with)', () => {
    const i = input({ maxInstances: 1, buffer: { count: 2 } }, [inst('a')]);
    i.group.caps = { maxInstances: 1 };
    expect(planFleet(i).short?.limits).toEqual(["group g's scaling.maxInstances (1)", "group g's caps.maxInstances (1)"]);
  });

  it('capsRemainingOf: the least room per kind, every limit named', () => {
    const rooms = limitRooms(
      { scalingMaxInstances: 4, maxInstances: 6, maxTotalInstances: 20 },
      { group: 3, total: 19 },
      { name: 'lobby', maxInstances: 5, current: 5 },
    );
    expect(capsRemainingOf('g', rooms)).toEqual({
      group: 1,
      template: 0,
      global: 1,
      named: [
        { name: "group g's scaling.maxInstances (4)", room: 1 },
        { name: "group g's caps.maxInstances (6)", room: 3 },
        { name: "template lobby's caps.maxInstances (5)", room: 0 },
        { name: 'ENDERCLOUD_MAX_INSTANCES (20)', room: 1 },
      ],
    });
    expect(capsRemainingOf('g', [])).toMatchObject({
      group: Number.MAX_SAFE_INTEGER,
      template: Number.MAX_SAFE_INTEGER,
      global: Number.MAX_SAFE_INTEGER,
    });
  });
});

describe('planFleet: scale up on fill', () => {
  const up = { scaleUp: { whenFillAbove: 0.8, step: 2, cooldown: '2m' } };
  const full = [inst('a', { allocated: true, playersOnline: 9 }), inst('b', { allocated: true, playersOnline: 8 })];
  it.each<[string, FleetInstance[], Partial<FleetInput>, number]>([
    ['fill 0.85 > 0.8 spawns a step', full, {}, 2],
    ['fill exactly 0.8 does not (strictly above)', [inst('a', { allocated: true, playersOnline: 8 })], {}, 0],
    ['1 player of 10 is 0.1, not 0 (no integer division): below', [inst('a', { playersOnline: 1 })], {}, 0],
    ['inside the cooldown: no step', full, { lastScaleUpAt: NOW - MIN }, 0],
    ['the cooldown over: a step', full, { lastScaleUpAt: NOW - 2 * MIN }, 2],
    ['instances already starting count against the step', [...full, inst('c', { state: 'starting' })], {}, 1],
    ['capped by the smallest cap', full, { capsRemaining: { group: 5, template: 1, global: 5 } }, 1],
  ])('%s', (_name, instances, over, spawn) => {
    expect(planFleet(input(up, instances, over)).spawn.count).toBe(spawn);
  });
});

describe('planFleet: scale down', () => {
  const down = { minInstances: 1, scaleDown: { whenEmptyFor: '10m' } };

  it('removes empty Ready instances down to min, packed: the host with the fewest instances first', () => {
    const i = input(down, [inst('a', { hostId: 'big' }), inst('b', { hostId: 'small' }), inst('c', { hostId: 'mid' })], {
      hosts: [
        { id: 'big', instanceCount: 9 },
        { id: 'small', instanceCount: 1 },
        { id: 'mid', instanceCount: 4 },
      ],
    });
    expect(despawned(i)).toEqual(['b', 'c']);
  });

  it('distributed: the host with the most instances of the group first', () => {
    const instances = [
      inst('a1', { hostId: 'a' }),
      inst('a2', { hostId: 'a' }),
      inst('a3', { hostId: 'a' }),
      inst('b1', { hostId: 'b' }),
      inst('c1', { hostId: 'c' }),
    ];
    const i = input({ minInstances: 3, scaleDown: { whenEmptyFor: '10m' } }, instances);
    i.group.placement = 'distributed';
    expect(despawned(i)).toEqual(['a1', 'a2']);
  });

  it.each<[string, FleetInstance[], string[]]>([
    ['never an allocated instance', [inst('a', { allocated: true }), inst('b', { allocated: true })], []],
    ['never one with players', [inst('a', { playersOnline: 1 }), inst('b', { playersOnline: 2 }), inst('c')], ['c']],
    ['not before whenEmptyFor', [inst('a', { emptySince: NOW - 9 * MIN }), inst('b', { emptySince: NOW - 10 * MIN })], ['b']],
    ['not one already draining', [inst('a', { draining: true }), inst('b')], []],
    ["only Ready ones (a paused one is the idle tiers' business)", [inst('a', { state: 'paused' }), inst('b')], []],
    ['ties by id', [inst('b'), inst('c'), inst('a')], ['a', 'b']],
  ])('%s', (_name, instances, expected) => {
    expect(despawned(input(down, instances))).toEqual(expected);
  });

  it('never below the buffer', () => {
    expect(despawned(input({ buffer: { count: 2 }, scaleDown: { whenEmptyFor: '10m' } }, [inst('a'), inst('b'), inst('c')]))).toEqual([
      'a',
    ]);
  });

  it('not while the scale-up cooldown runs, after a scale-up or a scale-down', () => {
    const scaling = { ...down, scaleUp: { whenFillAbove: 0.9, cooldown: '5m' } };
    expect(despawned(input(scaling, [inst('a'), inst('b')], { lastScaleUpAt: NOW - MIN }))).toEqual([]);
    expect(despawned(input(scaling, [inst('a'), inst('b')], { lastScaleDownAt: NOW - MIN }))).toEqual([]);
    expect(despawned(input(scaling, [inst('a'), inst('b')], { lastScaleUpAt: NOW - 5 * MIN }))).toEqual(['a']);
  });

  it('stops before the fill would rise above the scale-up threshold', () => {
    const scaling = { scaleDown: { whenEmptyFor: '10m' }, scaleUp: { whenFillAbove: 0.5 } };
    // 8 players on 32 slots: without e1 8/22 ≈ 0.36, without e2 too 8/12 ≈ 0.67 > 0.5.
    const instances = [inst('busy', { allocated: true, playersOnline: 8, maxPlayers: 12 }), inst('e1'), inst('e2')];
    expect(despawned(input(scaling, instances))).toEqual(['e1']);
  });

  it('not in a plan that spawns', () => {
    const plan = planFleet(input({ minInstances: 3, scaleDown: { whenEmptyFor: '1m' } }, [inst('a', { state: 'paused' })]));
    expect(plan.despawn).toEqual([]);
  });
});

describe('planFleet: hold', () => {
  it('holds the Ready instances that make up the buffer, the ones scale-down removes last', () => {
    const i = input(
      { buffer: { count: 2 } },
      [inst('a', { hostId: 'small' }), inst('b', { hostId: 'big' }), inst('c', { hostId: 'big' })],
      {
        hosts: [
          { id: 'small', instanceCount: 1 },
          { id: 'big', instanceCount: 5 },
        ],
      },
    );
    expect(planFleet(i).hold).toEqual(['b', 'c']);
  });

  it('holds nothing without min or buffer', () => {
    expect(planFleet(input({}, [inst('a')])).hold).toEqual([]);
  });
});

describe('planFleet invariants (property)', () => {
  const state = fc.constantFrom(
    'online',
    'online',
    'online',
    'starting',
    'paused',
    'stopped',
    'archived',
    'degraded',
    'backup',
    'deleting' as const,
  );
  const instance = fc.record({
    host: fc.constantFrom('h1', 'h2', 'h3'),
    state,
    allocated: fc.boolean(),
    draining: fc.boolean(),
    players: fc.integer({ min: 0, max: 12 }),
    max: fc.option(fc.integer({ min: 1, max: 20 })),
    emptyFor: fc.option(fc.integer({ min: 0, max: 120 })),
  });
  const snapshot = fc.record({
    instances: fc.array(instance, { maxLength: 14 }),
    min: fc.integer({ min: 0, max: 6 }),
    max: fc.option(fc.integer({ min: 0, max: 16 })),
    count: fc.integer({ min: 0, max: 5 }),
    percent: fc.option(fc.integer({ min: 0, max: 99 })),
    fillAbove: fc.option(fc.double({ min: 0.05, max: 1, noNaN: true })),
    step: fc.integer({ min: 1, max: 4 }),
    down: fc.option(fc.integer({ min: 1, max: 60 })),
    caps: fc.record({
      group: fc.integer({ min: 0, max: 8 }),
      template: fc.integer({ min: 0, max: 8 }),
      global: fc.integer({ min: 0, max: 8 }),
    }),
    placement: fc.constantFrom('packed', 'distributed' as const),
    lastUp: fc.option(fc.integer({ min: 0, max: 10 })),
  });

  type Snapshot = typeof snapshot extends fc.Arbitrary<infer T> ? T : never;
  const build = (s: Snapshot): FleetInput => {
    const instances = s.instances.map((x, n) =>
      inst(`i${String(n).padStart(2, '0')}`, {
        hostId: x.host,
        state: x.state,
        allocated: x.allocated,
        draining: x.draining,
        playersOnline: x.players,
        maxPlayers: x.max,
        emptySince: x.players > 0 || x.emptyFor === null ? null : NOW - x.emptyFor * MIN,
      }),
    );
    const min = s.max === null ? s.min : Math.min(s.min, s.max);
    const scaling = {
      minInstances: min,
      ...(s.max === null ? {} : { maxInstances: s.max }),
      buffer: { count: s.count, ...(s.percent === null ? {} : { percent: s.percent }) },
      ...(s.fillAbove === null ? {} : { scaleUp: { whenFillAbove: s.fillAbove, step: s.step, cooldown: '5m' } }),
      ...(s.down === null ? {} : { scaleDown: { whenEmptyFor: `${s.down}m` } }),
    };
    const i = input(scaling, instances, {
      capsRemaining: s.caps,
      lastScaleUpAt: s.lastUp === null ? null : NOW - s.lastUp * MIN,
      hosts: [
        { id: 'h1', instanceCount: 7 },
        { id: 'h2', instanceCount: 2 },
      ],
    });
    i.group.placement = s.placement;
    return i;
  };

  it('never despawns an allocated, occupied or non-Ready instance, and never plans above the smallest cap', () => {
    fc.assert(
      fc.property(snapshot, (s) => {
        const i = build(s);
        const plan = planFleet(i);
        const byId = new Map(i.instances.map((x) => [x.id, x]));
        for (const d of plan.despawn) {
          const x = byId.get(d.instanceId)!;
          expect(x.allocated).toBe(false);
          expect(x.playersOnline).toBe(0);
          expect(fleetClass(x)).toBe('ready');
        }
        expect(plan.spawn.count).toBeGreaterThanOrEqual(0);
        expect(plan.spawn.count).toBeLessThanOrEqual(Math.max(0, Math.min(s.caps.group, s.caps.template, s.caps.global)));
        if (s.max !== null)
          expect(plan.spawn.count).toBeLessThanOrEqual(Math.max(0, s.max - i.instances.filter((x) => x.state !== 'archived').length));
        // Short exactly when what it wakes and spawns is less than what is missing.
        const wanted = Math.max(plan.inputs.need.min, plan.inputs.need.buffer, plan.inputs.need.scaleUp);
        expect(plan.short !== null).toBe(plan.wake.length + plan.spawn.count < wanted);
        for (const w of plan.wake) expect(byId.get(w.instanceId)!.allocated).toBe(false);
        if (plan.spawn.count > 0 || plan.wake.length > 0) expect(plan.despawn).toEqual([]);
      }),
    );
  });

  it('never despawns below min or buffer', () => {
    fc.assert(
      fc.property(snapshot, (s) => {
        const i = build(s);
        const plan = planFleet(i);
        const classes = i.instances.map(fleetClass);
        const ready = classes.filter((c) => c === 'ready').length;
        const allocated = classes.filter((c) => c === 'allocated').length;
        const busy = classes.filter((c) => c === 'busy').length;
        const left = ready - plan.despawn.length;
        if (plan.despawn.length > 0) {
          expect(left).toBeGreaterThanOrEqual(desiredBuffer(i.group.scaling.buffer, allocated));
          expect(left + allocated + busy).toBeGreaterThanOrEqual(i.group.scaling.minInstances);
        }
      }),
    );
  });

  it('is deterministic: the order of the snapshot does not matter', () => {
    fc.assert(
      fc.property(snapshot, fc.integer(), (s, seed) => {
        const i = build(s);
        const shuffled = [...i.instances].sort((a, b) => ((a.id.charCodeAt(2) * 31 + seed) % 7) - ((b.id.charCodeAt(2) * 31 + seed) % 7));
        expect(planFleet({ ...i, instances: shuffled })).toEqual(planFleet(i));
      }),
    );
  });
});
