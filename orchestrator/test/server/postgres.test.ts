// The key route behaviours once more on PostgreSQL (a fresh database for this
// file, dropped after): heartbeat → ONLINE, template immutability, 20
// concurrent placements never oversubscribing, and crash-resume of a command.

import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AGENT_TOKEN,
  freshPostgres,
  heartbeatBody,
  startFakeAgent,
  testOrchestrator,
  type FakeAgent,
  type TestOrchestrator,
} from './support.js';

let db: { url: string; drop(): Promise<void> };
let t: TestOrchestrator;
let a: FakeAgent;
let b: FakeAgent;
beforeAll(async () => {
  db = await freshPostgres('ec_server');
  t = await testOrchestrator({ env: { ENDERCLOUD_DATABASE_URL: db.url }, keepDataDir: true });
  a = await startFakeAgent();
  b = await startFakeAgent();
});
afterAll(async () => {
  await t?.close();
  if (t) await rm(t.dataDir, { recursive: true, force: true });
  await a?.close();
  await b?.close();
  await db?.drop();
});

describe('on PostgreSQL', () => {
  it('runs on the postgres store', async () => {
    expect((await t.call('GET', '/api/v1/health', { token: null })).body).toMatchObject({ status: 'ok', database: 'postgres' });
  });

  it('heartbeat → RECOVERING → ONLINE', async () => {
    for (const [id, agent, mb] of [
      ['pg-a', a, 1024],
      ['pg-b', b, 1280],
    ] as const) {
      const res = await t.call('POST', `/api/v1/agents/${id}/heartbeat`, {
        body: heartbeatBody(agent.url, { resources: { cpuCount: 2, memoryTotalBytes: mb * 1024 * 1024 } }),
        token: AGENT_TOKEN,
      });
      expect(res.body.status).toBe('RECOVERING');
    }
    await t.o.ctx.hosts.whenIdle();
    expect((await t.call('GET', '/api/v1/hosts')).body.hosts.map((h: { status: string }) => h.status)).toEqual(['ONLINE', 'ONLINE']);
  });

  it('template versions are immutable', async () => {
    const body = { image: 'busybox:1', resources: { memoryMb: 256 } };
    expect((await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body })).status).toBe(201);
    expect((await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body })).status).toBe(200);
    expect((await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body: { ...body, image: 'x:2' } })).status).toBe(409);
    expect(
      (
        await t.call('PUT', '/api/v1/groups/g', {
          body: { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
        })
      ).status,
    ).toBe(201);
  });

  it('20 concurrent creates never oversubscribe', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, () => t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v' } })),
    );
    expect(results.filter((r) => r.status === 202)).toHaveLength(9);
    for (const r of results.filter((x) => x.status !== 202)) expect(r.body.error.code).toBe('NO_CAPACITY');
    const hosts = (await t.call('GET', '/api/v1/hosts')).body.hosts;
    expect(hosts.map((h: { memoryReservedMb: number }) => h.memoryReservedMb)).toEqual([1024, 1280]);
  });

  it('a command persisted by a crashed orchestrator is dispatched once after restart', async () => {
    const claimed = await t.o.store.commands.claimDue(t.clock.now(), 100, { claimer: 'dead-worker', leaseMs: 30_000 });
    expect(claimed).toHaveLength(9);
    await t.o.stop();
    const second = await testOrchestrator({
      dataDir: t.dataDir,
      clock: t.clock,
      env: { ENDERCLOUD_DATABASE_URL: db.url },
      keepDataDir: true,
    });
    t = second;
    second.clock.advance(30_001);
    for (let i = 0; i < 5 && (await second.o.store.commands.list({ statuses: ['pending', 'dispatched'] })).length > 0; i++) {
      await second.o.worker.tick();
      await second.o.worker.whenIdle();
    }
    const puts = [...a.calls, ...b.calls].filter((c) => c.method === 'PUT');
    expect(puts).toHaveLength(9);
    expect(a.inventory.length + b.inventory.length).toBe(9);
    expect((await second.o.store.instances.list({ states: ['starting'] })).length).toBe(9);
  });
});
