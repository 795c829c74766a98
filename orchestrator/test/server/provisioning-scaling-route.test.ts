// PUT /groups validates `scaling` with the provisioning parser: the stored
// policy comes back from GET and can be sent again; refusals name the field,
// and the replaced fields name their replacement through the HTTP layer.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testOrchestrator, type TestOrchestrator } from './support.js';

let t: TestOrchestrator;
beforeAll(async () => {
  t = await testOrchestrator();
  const tpl = await t.call('PUT', '/api/v1/templates/fleet/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 256 } } });
  expect(tpl.status).toBe(201);
});
afterAll(async () => {
  await t?.close();
});

const group = (scaling: unknown, extra: Record<string, unknown> = {}) => ({
  kind: 'ephemeral',
  variants: [{ id: 'default', template: { name: 'fleet', version: '1' } }],
  scaling,
  ...extra,
});
const put = (id: string, scaling: unknown, extra: Record<string, unknown> = {}) =>
  t.call('PUT', `/api/v1/groups/${id}`, { body: group(scaling, extra) });

describe('PUT /groups scaling', () => {
  it('stores the parsed policy, which a GET answers and a PUT accepts unchanged', async () => {
    const scaling = {
      minInstances: 1,
      buffer: { count: 2, percent: 20 },
      idleTiers: [
        { after: '10m', action: 'pause' },
        { after: '7d', action: 'archive' },
      ],
      scaleUp: { whenFillAbove: 0.8, step: 2, cooldown: '30s' },
    };
    const created = await put('events', scaling);
    expect(created.status).toBe(201);
    // scaling.idleTiers (the older form) is the group's top-level idleTiers.
    expect(created.body.scaling).toMatchObject({ scaleUp: { cooldownMs: 30_000 }, savegame: { mode: 'archive' } });
    expect(created.body.scaling.idleTiers).toBeUndefined();
    expect(created.body.idleTiers).toEqual([
      { after: '10m', afterMs: 600_000, action: 'pause' },
      { after: '7d', afterMs: 604_800_000, action: 'archive' },
    ]);
    const read = await t.call('GET', '/api/v1/groups/events');
    const again = await put('events', read.body.scaling, { idleTiers: read.body.idleTiers });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, changed: false });
  });

  it.each([
    ['one tier', [{ after: '10m', action: 'pause' }]],
    ['no tiers (never sleeps)', []],
  ])('PUT /groups/:id/idle-tiers and /system/idle-tiers take %s', async (_what, idleTiers) => {
    expect((await put('tiers', null)).status).toBeLessThan(300);
    const g = await t.call('PUT', '/api/v1/groups/tiers/idle-tiers', { body: { idleTiers } });
    expect(g.status, JSON.stringify(g.body)).toBe(200);
    expect(g.body.idleTiers).toHaveLength(idleTiers.length);
    expect((await t.call('GET', '/api/v1/groups/tiers')).body.idleTiers).toHaveLength(idleTiers.length);
    const sys = await t.call('PUT', '/api/v1/system/idle-tiers', { body: { idleTiers } });
    expect(sys.status, JSON.stringify(sys.body)).toBe(200);
    expect(sys.body).toMatchObject({ source: 'stored', tiers: idleTiers.map((x) => expect.objectContaining(x)) });
    expect((await t.call('PUT', '/api/v1/system/idle-tiers', { body: { idleTiers: null } })).body).toMatchObject({
      source: 'configured',
      tiers: [
        { after: '10m', action: 'pause' },
        { after: '6h', action: 'stop' },
      ],
    });
    expect((await t.call('PUT', '/api/v1/groups/tiers/idle-tiers', { body: { idleTiers: null } })).body).toEqual({
      id: 'tiers',
      idleTiers: null,
    });
  });

  it('refuses a bad tier on the idle-tiers routes naming it', async () => {
    const res = await t.call('PUT', '/api/v1/system/idle-tiers', { body: { idleTiers: [{ after: '10m', action: 'explode' }] } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('body/idleTiers[0].action: must be one of pause, stop, archive');
  });

  it('accepts null: no fleet policy', async () => {
    const res = await put('plain', null);
    expect(res.status).toBe(201);
    expect(res.body.scaling).toBeNull();
  });

  it.each([
    ['warmBuffer', { warmBuffer: 2 }, 'scaling.warmBuffer: was replaced: use buffer'],
    ['action delete', { idleTiers: [{ after: '1h', action: 'delete' }] }, 'scaling.idleTiers[0].action: delete was replaced: use archive'],
    ['a tier with only afterMs', { idleTiers: [{ afterMs: 60_000, action: 'pause' }] }, 'after'],
    [
      'tiers out of order',
      {
        idleTiers: [
          { after: '10m', action: 'pause' },
          { after: '5m', action: 'stop' },
        ],
      },
      'scaling.idleTiers[1].after: must be longer than idleTiers[0] (10m)',
    ],
    ['a 100 % buffer (structure, checked by the schema)', { buffer: { percent: 100 } }, 'scaling/buffer/percent'],
    ['min above max', { minInstances: 5, maxInstances: 1 }, 'scaling.minInstances: must not exceed maxInstances'],
  ])('refuses %s with 400 naming the field', async (_what, scaling, message) => {
    const res = await put('bad', scaling);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.message).toContain(message);
    expect((await t.call('GET', '/api/v1/groups/bad')).status).toBe(404);
  });
});
