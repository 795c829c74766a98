// The router's group join (POST /api/v1/router/groups/:id/join) for a fleet
// scaled to zero: the answer is a spawn (one for a crowd arriving at once),
// a refusal by a cap names the limit for the player, an unknown group is
// GROUP_NOT_FOUND, maintenance stops the spawn, and a world on a down host is
// never the answer. Store-seeded groups on a real orchestrator (SQLite, inject).

import { afterEach, describe, expect, it } from 'vitest';
import { group } from '../store/fixtures.js';
import { seed, tokenWith } from './registry-support.js';
import { freshPostgres, testOrchestrator, type TestOrchestrator } from './support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const ZERO = { minInstances: 0, buffer: {}, idleTiers: [], savegame: { mode: 'discard' as const } };

async function setup(
  env: Record<string, string> = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<{ t: TestOrchestrator; router: string; join: (groupId: string, player?: string) => Promise<{ status: number; body: any }> }> {
  const t = await testOrchestrator({ env });
  cleanups.push(() => t.close());
  await seed(t);
  const router = await tokenWith(t, 'edge', ['router']);
  return {
    t,
    router,
    join: (groupId, player = 'Alice') => t.call('POST', `/api/v1/router/groups/${groupId}/join`, { token: router, body: { player } }),
  };
}

describe.each([
  ['sqlite', async () => ({})],
  [
    'postgres',
    async () => {
      const db = await freshPostgres('ec_join');
      cleanups.push(() => db.drop());
      return { ENDERCLOUD_DATABASE_URL: db.url };
    },
  ],
] as const)('a crowd joining an empty group (%s)', (_dialect, env) => {
  it('the answer is a spawn, and everyone arriving at once gets the one world', async () => {
    const { t, join } = await setup(await env());
    await t.o.store.groups.put(group('zero', { scaling: ZERO }));
    const answers = await Promise.all(['A', 'B', 'C', 'D', 'E', 'F'].map((p) => join('zero', p)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const spawned = answers.filter((a) => a.body.action === 'spawn');
    expect(spawned).toHaveLength(1);
    expect(spawned[0]!.body).toMatchObject({ instanceId: expect.any(String), commandId: expect.any(String) });
    const id = spawned[0]!.body.instanceId as string;
    // The later ones find it on its way (installing) and wait for it, as after any start.
    expect(new Set(answers.filter((a) => a !== spawned[0]).map((a) => `${a.body.instanceId} ${a.body.action}`))).toEqual(
      new Set([`${id} start`]),
    );
    const instances = await t.o.store.instances.list({ groupId: 'zero' });
    expect(instances.map((i) => [i.id, i.state])).toEqual([[id, 'installing']]);
  });
});

describe('group join of a fleet scaled to zero', () => {
  it('a spawn a cap refuses: 409 CAPACITY_EXHAUSTED whose playerMessage names the limit', async () => {
    const { t, join } = await setup();
    await t.o.store.groups.put(group('capped', { caps: { maxInstances: 0 }, scaling: ZERO }));
    const refused = await join('capped');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({
      code: 'CAPACITY_EXHAUSTED',
      message: expect.stringContaining('group capped is at its caps.maxInstances (0)'),
      details: { cause: 'CAP_REACHED', playerMessage: 'capped is full (0 of 0 worlds).', cap: 'maxInstances', limit: 0, current: 0 },
    });
    expect(await t.o.store.instances.list({ groupId: 'capped' })).toEqual([]);
  });

  it('a full fleet whose only world is being despawned: the cap still holds, and says so', async () => {
    const { t, join } = await setup();
    const s = await seed(t);
    await t.o.store.groups.put(group('one', { caps: { maxInstances: 1 }, scaling: ZERO }));
    await s.add('one-1', 'online', { groupId: 'one', fleet: { draining: { since: t.clock.now(), reason: 'despawn' } } });
    const refused = await join('one');
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.playerMessage).toBe('one is full (1 of 1 world).');
  });

  it('an unknown group is 404 GROUP_NOT_FOUND (the router says no server is configured)', async () => {
    const { join } = await setup();
    const res = await join('nope');
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ code: 'GROUP_NOT_FOUND', message: 'group nope does not exist' });
  });

  it('under global maintenance the router spawns nothing', async () => {
    const { t, join } = await setup();
    await t.o.store.groups.put(group('zero', { scaling: ZERO }));
    await t.o.ctx.lifecycle.setGlobalMaintenance(true, 'moving racks');
    const res = await join('zero');
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'MAINTENANCE', message: 'EnderCloud is in maintenance: moving racks' });
    expect(await t.o.store.instances.list({ groupId: 'zero' })).toEqual([]);
  });

  it('the login goes where the group placement says (the one chooser), not to the lowest id', async () => {
    const { t, join } = await setup();
    const h1 = await seed(t);
    const h2 = await seed(t, 'http://127.0.0.1:9/agent', 'h2');
    await t.o.store.groups.put(group('lobby', { placement: 'packed' }));
    await t.o.store.groups.put(group('spread', { placement: 'distributed' }));
    await h1.add('a-lobby', 'online', { groupId: 'lobby' });
    await h2.add('b-lobby', 'online', { groupId: 'lobby' });
    await h2.add('c-other', 'stopped', { groupId: 'g1' });
    // packed: the busiest host (h2, two instances), so h1 can empty out.
    expect((await join('lobby')).body).toMatchObject({ instanceId: 'b-lobby', action: 'route' });
    await h1.add('a-spread', 'online', { groupId: 'spread', players: { online: 3, max: 20, at: t.clock.now() } });
    await h2.add('b-spread', 'online', { groupId: 'spread', players: { online: 0, max: 20, at: t.clock.now() } });
    await h1.add('c-spread', 'online', { groupId: 'spread', players: { online: 0, max: 20, at: t.clock.now() } });
    // distributed: the host with the fewest of the group in use (h2: none with players), whatever the ids.
    expect((await join('spread')).body).toMatchObject({ instanceId: 'b-spread', action: 'route' });
  });

  it('a world on a host that is down is never the answer: one is spawned on a host that is up', async () => {
    const { t, join } = await setup();
    const down = await seed(t, 'http://127.0.0.1:9/agent', 'h2');
    await t.o.store.hosts.setStatus('h2', 'OFFLINE', { now: t.clock.now() });
    await t.o.store.groups.put(group('zero', { scaling: ZERO }));
    await down.add('zero-on-h2', 'online', { groupId: 'zero' });
    const res = await join('zero');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ action: 'spawn' });
    expect((await t.o.store.instances.get(res.body.instanceId as string))?.hostId).toBe('h1');
  });

  it('a join routed to an empty world restarts its empty run: the scale-down and the idle tiers wait for the login (sim seed 74)', async () => {
    // The provisioner passes by hand here (not in the background), so the first one is after the join.
    const t = await testOrchestrator({ deps: { runProvisioner: false } });
    cleanups.push(() => t.close());
    const s = await seed(t);
    const router = await tokenWith(t, 'edge', ['router']);
    const join = (groupId: string) => t.call('POST', `/api/v1/router/groups/${groupId}/join`, { token: router, body: { player: 'Alice' } });
    const scaling = {
      ...ZERO,
      scaleDown: { whenEmptyFor: '20s', whenEmptyForMs: 20_000 },
      idleTiers: [{ after: '20s', afterMs: 20_000, action: 'pause' as const }],
    };
    await t.o.store.groups.put(group('lobby', { scaling }));
    const emptyFor = 60_000;
    const idle = { emptySince: t.clock.now() - emptyFor, lastLoginAt: null, playersOnline: 0, router: null, probe: null };
    await s.add('lobby-1', 'online', { groupId: 'lobby', stateChangedAt: t.clock.now() - 2 * emptyFor, fleet: { idle } });
    expect((await join('lobby')).body).toMatchObject({ instanceId: 'lobby-1', action: 'route' });
    expect((await t.o.store.instances.get('lobby-1'))?.fleet?.idle?.emptySince).toBe(t.clock.now());
    // Before the router's batch reports the login, a provisioner pass leaves the world alone.
    t.clock.advance(1000);
    await t.o.provisioner.tick();
    const after = await t.o.store.instances.get('lobby-1');
    expect(after?.state).toBe('online');
    expect(after?.fleet?.draining).toBeUndefined();
    expect(await t.o.store.commands.list({ instanceId: 'lobby-1' })).toEqual([]);
  });
});
