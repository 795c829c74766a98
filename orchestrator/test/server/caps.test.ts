// Group and global caps under concurrency, on SQLite and on PostgreSQL: 20
// parallel POST /instances against a group cap of 5 place exactly 5, and the
// operator-wide cap (ENDERCLOUD_MAX_INSTANCES) holds across groups.

import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, freshPostgres, heartbeatBody, startFakeAgent, testOrchestrator, type TestOrchestrator } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(dialect: 'sqlite' | 'postgres'): Promise<TestOrchestrator> {
  const env: Record<string, string> = { ENDERCLOUD_MAX_INSTANCES: '7' };
  if (dialect === 'postgres') {
    const db = await freshPostgres('ec_caps');
    cleanups.push(() => db.drop());
    env.ENDERCLOUD_DATABASE_URL = db.url;
  }
  const t = await testOrchestrator({ env });
  cleanups.push(() => t.close());
  for (const id of ['cap-a', 'cap-b']) {
    const a = await startFakeAgent();
    cleanups.push(() => a.close());
    const hb = await t.call('POST', `/api/v1/agents/${id}/heartbeat`, {
      body: heartbeatBody(a.url, { resources: { cpuCount: 4, memoryTotalBytes: 64 * 1024 ** 3 } }),
      token: AGENT_TOKEN,
    });
    expect(hb.status).toBe(200);
  }
  await t.o.ctx.hosts.whenIdle();
  expect(
    (await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 64 } } })).status,
  ).toBe(201);
  const variants = [{ id: 'v', template: { name: 'tpl', version: '1' } }];
  expect((await t.call('PUT', '/api/v1/groups/capped', { body: { kind: 'ephemeral', caps: { maxInstances: 5 }, variants } })).status).toBe(
    201,
  );
  expect((await t.call('PUT', '/api/v1/groups/open', { body: { kind: 'ephemeral', variants } })).status).toBe(201);
  return t;
}

async function burst(t: TestOrchestrator, groupId: string, n: number) {
  return Promise.all(Array.from({ length: n }, () => t.call('POST', '/api/v1/instances', { body: { groupId, variantId: 'v' } })));
}

describe.each(['sqlite', 'postgres'] as const)('caps under concurrency (%s)', (dialect) => {
  it('20 concurrent creates against a group cap of 5 place exactly 5; the global cap holds across groups', async () => {
    const t = await setup(dialect);
    const capped = await burst(t, 'capped', 20);
    expect(capped.filter((r) => r.status === 202)).toHaveLength(5);
    for (const r of capped.filter((x) => x.status !== 202)) expect(r.body.error.code).toBe('CAP_REACHED');
    expect((await t.call('GET', '/api/v1/instances?groupId=capped')).body.instances).toHaveLength(5);

    // 5 exist; the operator-wide cap of 7 leaves room for exactly 2 more in another group.
    const open = await burst(t, 'open', 20);
    expect(open.filter((r) => r.status === 202)).toHaveLength(2);
    for (const r of open.filter((x) => x.status !== 202)) expect(r.body.error.code).toBe('CAP_REACHED');
    expect((await t.call('GET', '/api/v1/instances')).body.instances).toHaveLength(7);
    const reserved = (await t.call('GET', '/api/v1/hosts')).body.hosts.reduce(
      (s: number, h: { memoryReservedMb: number }) => s + h.memoryReservedMb,
      0,
    );
    expect(reserved).toBe(7 * 64);
  });
});
