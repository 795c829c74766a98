// Guards the `scaling` parser: defaults, the stored form (text and ms), every
// refusal naming its field path, the replaced fields (warmBuffer, afterMs,
// delete) naming their replacement, idempotent re-parsing, and PUT /groups'
// cross-field rule against caps.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseIdleTiers, parseScalingPolicy } from '../../src/provisioning/scaling-policy.js';
import { normalizeGroup } from '../../src/contracts/catalog-rules.js';
import type { GroupBody } from '../../src/contracts/catalog.js';

function refusal(input: unknown): string {
  try {
    parseScalingPolicy(input);
  } catch (err) {
    expect(err).toMatchObject({ code: 'VALIDATION_FAILED' });
    return (err as Error).message;
  }
  throw new Error('expected a refusal');
}

describe('parseScalingPolicy', () => {
  it('fills the defaults of an empty policy', () => {
    // No idleTiers: the group then sleeps by its own top-level tiers or the system's.
    expect(parseScalingPolicy({})).toEqual({ minInstances: 0, buffer: {}, savegame: { mode: 'archive' } });
  });

  it('keeps the operator text and the milliseconds of every duration', () => {
    const p = parseScalingPolicy({
      minInstances: 1,
      maxInstances: 10,
      buffer: { count: 2, percent: 25 },
      idleTiers: [
        { after: '10m', action: 'pause' },
        { after: '6h', action: 'stop' },
        { after: '7d', action: 'archive' },
      ],
      savegame: { mode: 'archive', retention: '30d' },
      scaleUp: { whenFillAbove: 0.8, step: 2, cooldown: '30s' },
      scaleDown: { whenEmptyFor: '5m' },
      releaseWhenEmptyFor: '2m',
    });
    expect(p).toEqual({
      minInstances: 1,
      maxInstances: 10,
      buffer: { count: 2, percent: 25 },
      idleTiers: [
        { after: '10m', afterMs: 600_000, action: 'pause' },
        { after: '6h', afterMs: 21_600_000, action: 'stop' },
        { after: '7d', afterMs: 604_800_000, action: 'archive' },
      ],
      savegame: { mode: 'archive', retention: '30d', retentionMs: 2_592_000_000 },
      scaleUp: { whenFillAbove: 0.8, step: 2, cooldown: '30s', cooldownMs: 30_000 },
      scaleDown: { whenEmptyFor: '5m', whenEmptyForMs: 300_000 },
      releaseWhenEmptyFor: '2m',
      releaseWhenEmptyForMs: 120_000,
    });
    // The stored form is accepted again unchanged (GET → PUT round trip).
    expect(parseScalingPolicy(JSON.parse(JSON.stringify(p)))).toEqual(p);
  });

  it('scaleUp defaults: step 1, cooldown 1m', () => {
    expect(parseScalingPolicy({ scaleUp: { whenFillAbove: 1 } }).scaleUp).toEqual({
      whenFillAbove: 1,
      step: 1,
      cooldown: '1m',
      cooldownMs: 60_000,
    });
  });

  it.each([
    ['min above max', { minInstances: 3, maxInstances: 2 }, 'scaling.minInstances: must not exceed maxInstances (3 > 2)'],
    ['a fractional min', { minInstances: 1.5 }, 'scaling.minInstances: must be an integer'],
    ['a negative buffer count', { buffer: { count: -1 } }, 'scaling.buffer.count: must be between 0 and'],
    ['a 100 % buffer', { buffer: { percent: 100 } }, 'scaling.buffer.percent: must be between 0 and 99'],
    ['an unknown buffer key', { buffer: { size: 1 } }, 'scaling.buffer.size: is not a known field'],
    [
      'tiers out of time order',
      {
        idleTiers: [
          { after: '10m', action: 'pause' },
          { after: '5m', action: 'stop' },
        ],
      },
      'scaling.idleTiers[1].after: must be longer than idleTiers[0] (10m)',
    ],
    [
      'equal tier times',
      {
        idleTiers: [
          { after: '10m', action: 'pause' },
          { after: '600s', action: 'stop' },
        ],
      },
      'scaling.idleTiers[1].after: must be longer than idleTiers[0] (10m)',
    ],
    [
      'an action twice',
      {
        idleTiers: [
          { after: '10m', action: 'pause' },
          { after: '1h', action: 'pause' },
        ],
      },
      'scaling.idleTiers[1].action: pause is already',
    ],
    [
      'stop before pause',
      {
        idleTiers: [
          { after: '10m', action: 'stop' },
          { after: '1h', action: 'pause' },
        ],
      },
      'scaling.idleTiers[1].action: pause cannot follow stop',
    ],
    [
      'an unknown action',
      { idleTiers: [{ after: '10m', action: 'sleep' }] },
      'scaling.idleTiers[0].action: must be one of pause, stop, archive',
    ],
    ['a bare-number duration', { idleTiers: [{ after: '10', action: 'pause' }] }, 'scaling.idleTiers[0].after: "10" is not a duration'],
    ['a numeric duration', { idleTiers: [{ after: 600, action: 'pause' }] }, 'scaling.idleTiers[0].after: must be a duration string'],
    ['a zero duration', { idleTiers: [{ after: '0m', action: 'pause' }] }, 'scaling.idleTiers[0].after: must be longer than 0'],
    ['a missing after', { idleTiers: [{ action: 'pause' }] }, 'scaling.idleTiers[0].after: is required'],
    ['four tiers', { idleTiers: [1, 2, 3, 4] }, 'scaling.idleTiers: has 4 tiers'],
    [
      'an echo that disagrees',
      { idleTiers: [{ after: '10m', afterMs: 1, action: 'pause' }] },
      'scaling.idleTiers[0].afterMs: is 1 but after "10m" is 600000 ms',
    ],
    [
      'retention with discard',
      { savegame: { mode: 'discard', retention: '7d' } },
      'scaling.savegame.retention: only applies to mode archive',
    ],
    ['a savegame without mode', { savegame: {} }, 'scaling.savegame.mode: must be one of discard, archive'],
    ['a fill of 0', { scaleUp: { whenFillAbove: 0 } }, 'scaling.scaleUp.whenFillAbove: must be a ratio above 0 and at most 1'],
    ['a fill as percent', { scaleUp: { whenFillAbove: 80 } }, 'scaling.scaleUp.whenFillAbove: must be a ratio above 0 and at most 1'],
    ['a step of 0', { scaleUp: { whenFillAbove: 0.5, step: 0 } }, 'scaling.scaleUp.step: must be between 1 and 1000'],
    [
      'a cooldown only in ms',
      { scaleUp: { whenFillAbove: 0.5, cooldownMs: 1000 } },
      'scaling.scaleUp.cooldownMs: give cooldown as a duration string',
    ],
    ['a scaleDown without time', { scaleDown: {} }, 'scaling.scaleDown.whenEmptyFor: is required'],
    ['an unknown field', { maxPlayers: 3 }, 'scaling.maxPlayers: is not a known field'],
    ['a non-object', [], 'scaling: must be an object'],
  ])('refuses %s, naming the field', (_what, input, message) => {
    expect(refusal(input)).toContain(message);
  });

  it.each([
    ['warmBuffer', { warmBuffer: 2 }, 'scaling.warmBuffer: was replaced: use buffer: {count: N}'],
    [
      'afterMs',
      { idleTiers: [{ afterMs: 60_000, action: 'pause' }] },
      'scaling.idleTiers[0].afterMs: was replaced: use after, a duration such as "10m"',
    ],
    ['action delete', { idleTiers: [{ after: '1h', action: 'delete' }] }, 'scaling.idleTiers[0].action: delete was replaced: use archive'],
  ])('refuses the replaced %s with a message naming the new field', (_what, input, message) => {
    expect(refusal(input)).toContain(message);
  });

  it('a re-parse of any accepted policy is the identity (property)', () => {
    const duration = fc.tuple(fc.integer({ min: 1, max: 999 }), fc.constantFrom('s', 'm', 'h', 'd')).map(([n, u]) => `${n}${u}`);
    fc.assert(
      fc.property(
        fc.record(
          {
            minInstances: fc.integer({ min: 0, max: 5 }),
            buffer: fc.record({ count: fc.integer({ min: 0, max: 9 }), percent: fc.integer({ min: 0, max: 99 }) }, { requiredKeys: [] }),
            scaleUp: fc.record({
              whenFillAbove: fc.double({ min: 0.01, max: 1, noNaN: true }),
              step: fc.integer({ min: 1, max: 5 }),
              cooldown: duration,
            }),
            scaleDown: fc.record({ whenEmptyFor: duration }),
            releaseWhenEmptyFor: duration,
          },
          { requiredKeys: ['minInstances'] },
        ),
        (input) => {
          const once = parseScalingPolicy(input);
          expect(parseScalingPolicy(JSON.parse(JSON.stringify(once)))).toEqual(once);
        },
      ),
    );
  });
});

describe('parseIdleTiers (per-instance override)', () => {
  it('names the override path it was given', () => {
    expect(() =>
      parseIdleTiers(
        [
          { after: '1h', action: 'stop' },
          { after: '30m', action: 'archive' },
        ],
        'idleTiers',
      ),
    ).toThrow('idleTiers[1].after: must be longer than idleTiers[0] (1h)');
  });

  it('accepts an empty list (no idle actions for this instance)', () => {
    expect(parseIdleTiers([])).toEqual([]);
  });

  it('skipping a tier is fine: stop then archive', () => {
    expect(
      parseIdleTiers([
        { after: '1h', action: 'stop' },
        { after: '2d', action: 'archive' },
      ]).map((t) => t.action),
    ).toEqual(['stop', 'archive']);
  });
});

describe('normalizeGroup with scaling', () => {
  const body = (scaling: unknown, caps?: { maxInstances: number }): GroupBody => ({
    kind: 'ephemeral',
    variants: [{ id: 'default', template: { name: 't', version: '1' } }],
    scaling: scaling as GroupBody['scaling'],
    ...(caps ? { caps } : {}),
  });

  it('stores the parsed policy', () => {
    expect(normalizeGroup(body({ buffer: { count: 1 } })).scaling).toEqual({
      minInstances: 0,
      buffer: { count: 1 },
      savegame: { mode: 'archive' },
    });
    expect(normalizeGroup(body(null)).scaling).toBeNull();
  });

  it("moves scaling.idleTiers (the older form) to the group's top-level idleTiers", () => {
    const g = normalizeGroup(body({ idleTiers: [{ after: '30s', action: 'pause' }] }));
    expect(g.scaling).toEqual({ minInstances: 0, buffer: {}, savegame: { mode: 'archive' } });
    expect(g.idleTiers).toEqual([{ after: '30s', afterMs: 30_000, action: 'pause' }]);
  });

  it('takes top-level idleTiers with or without a scaling policy; [] is kept (never sleeps)', () => {
    expect(normalizeGroup({ ...body(null), idleTiers: [{ after: '10m', action: 'pause' }] }).idleTiers).toEqual([
      { after: '10m', afterMs: 600_000, action: 'pause' },
    ]);
    expect(normalizeGroup({ ...body(null), idleTiers: [] }).idleTiers).toEqual([]);
    expect(normalizeGroup(body(null)).idleTiers).toBeUndefined();
  });

  it('refuses idle tiers set twice (top level and inside scaling)', () => {
    expect(() => normalizeGroup({ ...body({ idleTiers: [] }), idleTiers: [] })).toThrow(
      'body/scaling/idleTiers must not be set beside the top-level idleTiers',
    );
  });

  it('refuses a minimum the group cap could never hold', () => {
    expect(() => normalizeGroup(body({ minInstances: 4 }, { maxInstances: 3 }))).toThrow(
      'scaling.minInstances: must not exceed caps.maxInstances (4 > 3)',
    );
  });
});
