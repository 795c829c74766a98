// No double allocation, ever: 50 concurrent HTTP clients (real sockets on
// 127.0.0.1) make 500 allocations from a warm buffer, releasing in between,
// on SQLite and on PostgreSQL. The buffer is a STORE-LEVEL FIXTURE (online
// instances written straight into the store, no containers): allocation reads
// only the store. Checked from the answers (no instance held twice at once)
// and from the sessions table (no two overlapping allocations per instance).

import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/server/clock.js';
import type { Session } from '../../src/domain/index.js';
import { runAllocationLoad, seedOnlineBuffer } from '../support/fleet-buffer.js';
import { freshPostgres, testOrchestrator, type TestOrchestrator } from './support.js';

const CLIENTS = 50;
const TOTAL = 500;
/** Fewer instances than clients would make 409s the common answer; a few more than clients keeps the buffer from running dry. */
const BUFFER = 60;

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function listening(env: Record<string, string>): Promise<{ t: TestOrchestrator; url: string }> {
  // The real clock: session timestamps must order the allocations for the overlap check.
  const t = await testOrchestrator({ env, deps: { clock: systemClock, runProvisioner: false } });
  cleanups.push(() => t.close());
  await t.o.app.listen({ host: '127.0.0.1', port: 0 });
  return { t, url: `http://127.0.0.1:${(t.o.app.server.address() as AddressInfo).port}` };
}

/** Pairs of allocations of one instance whose [createdAt, releasedAt) intervals overlap. */
function overlapping(sessions: Session[]): string[] {
  const byInstance = new Map<string, Session[]>();
  for (const s of sessions) byInstance.set(s.instanceId, [...(byInstance.get(s.instanceId) ?? []), s]);
  const bad: string[] = [];
  for (const [instanceId, list] of byInstance) {
    const sorted = [...list].sort((a, b) => a.createdAt - b.createdAt);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!;
      if (prev.releasedAt === null || prev.releasedAt > sorted[i]!.createdAt) bad.push(`${instanceId}: ${prev.id} / ${sorted[i]!.id}`);
    }
  }
  return bad;
}

describe.each([
  ['sqlite', async () => ({})],
  [
    'postgres',
    async () => {
      const db = await freshPostgres('ec_alloc');
      cleanups.push(() => db.drop());
      return { ENDERCLOUD_DATABASE_URL: db.url };
    },
  ],
] as const)('allocation under concurrency (%s)', (_dialect, env) => {
  it(`${CLIENTS} clients make ${TOTAL} allocations from the buffer: every answer 201 or 409 CAPACITY_EXHAUSTED, never an instance allocated twice`, async () => {
    const { t, url } = await listening(await env());
    const store = t.o.store;
    const fixture = await seedOnlineBuffer(store, { groupId: 'arena', size: BUFFER, now: Date.now() });

    const load = await runAllocationLoad({
      baseUrl: url,
      token: t.adminToken,
      groupId: 'arena',
      clients: CLIENTS,
      total: TOTAL,
      holdMs: 3,
    });

    const unexpected = load.answers.filter((a) => a.status !== 201 && !(a.status === 409 && a.code === 'CAPACITY_EXHAUSTED'));
    expect(unexpected).toEqual([]);
    expect(load.answers.filter((a) => a.status === 201)).toHaveLength(TOTAL);
    expect(load.overlaps).toEqual([]);
    expect(new Set(load.answers.map((a) => a.allocationId).filter((id) => id !== null)).size).toBe(TOTAL);

    const sessions = await store.sessions.list({ groupId: 'arena' });
    expect(sessions).toHaveLength(TOTAL);
    expect(sessions.filter((s) => s.status !== 'released')).toEqual([]);
    expect(overlapping(sessions)).toEqual([]);
    // Every instance is back in the buffer, unallocated.
    const instances = await store.instances.list({ groupId: 'arena' });
    expect(instances.filter((i) => i.sessionId !== null).map((i) => i.id)).toEqual([]);
    expect(instances.map((i) => i.id).sort()).toEqual(fixture.instanceIds);
    // Each success audited exactly once (the entry commits with the claim or the release, the hook writes none then).
    const allocated = (await store.audit.list({ targetKind: 'group', targetId: 'arena', limit: 1000 })).filter((e) => e.result === 'ok');
    expect(allocated).toHaveLength(TOTAL);
    expect(new Set(allocated.map((e) => (e.params as { allocationId: string }).allocationId)).size).toBe(TOTAL);
    const one = sessions[0]!;
    expect(allocated.find((e) => (e.params as { allocationId: string }).allocationId === one.id)).toMatchObject({
      action: 'group.allocate',
      params: { allocationId: one.id, instanceId: one.instanceId },
    });
    expect((await store.audit.list({ targetKind: 'allocation', targetId: one.id })).map((e) => [e.action, e.result, e.params])).toEqual([
      ['allocation.release', 'ok', { instanceId: one.instanceId }],
    ]);
  }, 120_000);

  it('release: only a token that may allocate in the group releases (403 otherwise, nothing changes); unknown is 404; a second release answers the released allocation', async () => {
    const { t } = await listening(await env());
    const store = t.o.store;
    await seedOnlineBuffer(store, { groupId: 'solo', size: 1, now: Date.now() });
    const token = async (scopes: string[]) =>
      (
        (await t.call('POST', '/api/v1/tokens', { body: { name: `rel-${scopes.join('-').replace(/[^a-z0-9-]/gi, '')}`, scopes } }))
          .body as { secret: string }
      ).secret;
    const mine = await token(['allocate:solo']);
    const other = await token(['allocate:other']);
    const alloc = (await t.call('POST', '/api/v1/groups/solo/allocations', { token: mine, body: {} })).body as {
      allocationId: string;
      instanceId: string;
    };
    const refused = await t.call('DELETE', `/api/v1/allocations/${alloc.allocationId}`, { token: other });
    expect(refused).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN' } } });
    expect((await store.sessions.get(alloc.allocationId))?.status).toBe('allocated');
    expect((await store.instances.get(alloc.instanceId))?.sessionId).toBe(alloc.allocationId);
    expect((await t.call('DELETE', '/api/v1/allocations/alloc-unknown', { token: mine })).status).toBe(404);
    const released = await t.call('DELETE', `/api/v1/allocations/${alloc.allocationId}`, { token: mine });
    expect(released).toMatchObject({
      status: 200,
      body: { allocationId: alloc.allocationId, instanceId: alloc.instanceId, status: 'released' },
    });
    expect((await store.instances.get(alloc.instanceId))?.sessionId).toBeNull();
    expect((await t.call('DELETE', `/api/v1/allocations/${alloc.allocationId}`, { token: mine })).body).toMatchObject({
      status: 'released',
    });
    const audit = await store.audit.list({ targetKind: 'allocation', targetId: alloc.allocationId });
    expect(audit.map((e) => [e.result, e.params])).toContainEqual(['ok', { instanceId: alloc.instanceId }]);
  });

  it('an allocation sees a group change at once (the group it keeps for the hot path is dropped by the change)', async () => {
    const { t } = await listening(await env());
    const store = t.o.store;
    await seedOnlineBuffer(store, { groupId: 'vary', size: 1, now: Date.now() });
    const ask = () => t.call('POST', '/api/v1/groups/vary/allocations', { body: { variantId: 'hard' } });
    expect((await ask()).body).toMatchObject({ error: { code: 'VALIDATION_FAILED' } });
    const g = (await store.groups.get('vary'))!;
    await store.groups.put({ ...g, variants: [...g.variants, { ...g.variants[0]!, id: 'hard' }] });
    expect((await ask()).body).toMatchObject({ error: { code: 'CAPACITY_EXHAUSTED' } });
  });

  it('an allocation sees a host change at once (the hosts it keeps for the hot path are dropped by the change): maintenance and offline hosts are skipped, a recovered one is used again', async () => {
    const { t } = await listening(await env());
    const store = t.o.store;
    const fixture = await seedOnlineBuffer(store, { groupId: 'hosty', size: 2, hosts: 2, now: Date.now() });
    const [h1, h2] = fixture.hostIds as [string, string];
    const onHost = async (hostId: string) => (await store.instances.list({ groupId: 'hosty' })).find((i) => i.hostId === hostId)!.id;
    const allocate = async () =>
      (await t.call('POST', '/api/v1/groups/hosty/allocations', { body: {} })).body as {
        allocationId?: string;
        instanceId?: string;
        error?: { code: string };
      };
    const release = (a: { allocationId?: string }) => t.call('DELETE', `/api/v1/allocations/${a.allocationId}`);
    const first = await allocate(); // fills the kept host view
    await release(first);
    await store.hosts.setMaintenance(h1, { enabled: true, message: 'disk swap', since: Date.now() }, Date.now());
    await store.hosts.setStatus(h1, 'MAINTENANCE', { now: Date.now() });
    const away = await allocate();
    expect(away.instanceId).toBe(await onHost(h2));
    await release(away);
    await store.hosts.setStatus(h2, 'OFFLINE', { now: Date.now() });
    expect((await allocate()).error?.code).toBe('CAPACITY_EXHAUSTED');
    await store.hosts.setStatus(h1, 'ONLINE', { now: Date.now() });
    expect((await allocate()).instanceId).toBe(await onHost(h1));
  });

  it('allocations choose from the rows they keep: a run of allocate + release reads the group once, yet a row another writer changed is never taken and exhausted is only answered after a fresh read', async () => {
    const { t } = await listening(await env());
    const store = t.o.store;
    const [a, b] = (await seedOnlineBuffer(store, { groupId: 'kept', size: 2, hosts: 1, now: Date.now() })).instanceIds as [string, string];
    let reads = 0;
    const read = store.instances.allocationRows.bind(store.instances);
    store.instances.allocationRows = (groupId) => {
      reads++;
      return read(groupId);
    };
    const allocate = async () =>
      (await t.call('POST', '/api/v1/groups/kept/allocations', { body: {} })).body as {
        allocationId?: string;
        instanceId?: string;
        error?: { code: string };
      };
    const release = async (x: { allocationId?: string }) =>
      expect((await t.call('DELETE', `/api/v1/allocations/${x.allocationId}`)).status).toBe(200);
    for (let n = 0; n < 6; n++) {
      const got = await allocate();
      expect(got.instanceId).toBe(a); // the same best candidate each time: the kept row follows its own claims and releases
      await release(got);
    }
    expect(reads).toBe(1);
    // Another writer stops the best candidate: its kept row is stale by version, so the claim skips it.
    await store.instances.transition(a, 'stopping', { now: Date.now(), reason: 'test: another writer stops it' });
    const other = await allocate();
    expect(other.instanceId).toBe(b);
    await release(other);
    // Another replica claims the last one: nothing kept is free any more, so the allocation reads again before it says exhausted.
    const bNow = (await store.instances.get(b))!;
    expect(
      await store.instances.claimForSession([{ id: b, expectedVersion: bNow.version }], 'elsewhere', { now: Date.now() }),
    ).toBeDefined();
    const readsBefore = reads;
    expect((await allocate()).error?.code).toBe('CAPACITY_EXHAUSTED');
    expect(reads).toBeGreaterThan(readsBefore);
    // An instance that came back online meanwhile is found at once, though the kept rows are fresh and have nothing free.
    await store.instances.transition(a, 'online', { now: Date.now(), reason: 'test: back online' });
    expect((await allocate()).instanceId).toBe(a);
  });

  it('a buffer smaller than the crowd answers clean 409 CAPACITY_EXHAUSTED and still never doubles', async () => {
    const { t, url } = await listening(await env());
    const store = t.o.store;
    await seedOnlineBuffer(store, { groupId: 'duel', size: 5, now: Date.now() });
    const load = await runAllocationLoad({ baseUrl: url, token: t.adminToken, groupId: 'duel', clients: 20, total: 100, holdMs: 2 });
    expect(load.answers.filter((a) => a.status !== 201 && !(a.status === 409 && a.code === 'CAPACITY_EXHAUSTED'))).toEqual([]);
    expect(load.answers.some((a) => a.status === 409)).toBe(true);
    expect(load.overlaps).toEqual([]);
    expect(overlapping(await store.sessions.list({ groupId: 'duel' }))).toEqual([]);
  }, 120_000);
});
