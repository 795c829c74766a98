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

const group = (scaling: unknown) => ({ kind: 'ephemeral', variants: [{ id: 'default', template: { name: 'fleet', version: '1' } }], scaling });
const put = (id: string, scaling: unknown) => t.call('PUT', `/api/v1/groups/${id}`, { body: group(scaling) });

describe('PUT /groups scaling', () => {
  it('stores the parsed policy, which a GET answers and a PUT accepts unchanged', async () => {
    const scaling = { minInstances: 1, buffer: { count: 2, percent: 20 }, idleTiers: [{ after: '10m', action: 'pause' }, { after: '7d', action: 'archive' }], scaleUp: { whenFillAbove: 0.8, step: 2, cooldown: '30s' } };
    const created = await put('events', scaling);
    expect(created.status).toBe(201);
    expect(created.body.scaling).toMatchObject({ idleTiers: [{ after: '10m', afterMs: 600_000, action: 'pause' }, { after: '7d', afterMs: 604_800_000, action: 'archive' }], scaleUp: { cooldownMs: 30_000 }, savegame: { mode: 'archive' } });
    const read = await t.call('GET', '/api/v1/groups/events');
    const again = await put('events', read.body.scaling);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, changed: false });
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
    ['tiers out of order', { idleTiers: [{ after: '10m', action: 'pause' }, { after: '5m', action: 'stop' }] }, 'scaling.idleTiers[1].after: must be longer than idleTiers[0] (10m)'],
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
