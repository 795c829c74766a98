// Unclaimed containers are a durable classification (#3): once a recovery
// lists them, later recoveries never remove them — not after the operator
// adopted or deleted some of them, which makes the host "known" — until the
// operator adopts or deletes each one, or the host stops reporting it.

import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_TOKEN,
  freshPostgres,
  heartbeatBody,
  startFakeAgent,
  testOrchestrator,
  until,
  type FakeAgent,
  type TestOrchestrator,
} from './support.js';

let t: TestOrchestrator | undefined;
let agent: FakeAgent | undefined;
let dropDb: (() => Promise<void>) | undefined;
afterEach(async () => {
  await t?.close();
  await agent?.close();
  await dropDb?.();
  t = undefined;
  agent = undefined;
  dropDb = undefined;
});

async function setup(dialect: 'sqlite' | 'postgres') {
  let env: Record<string, string> = {};
  if (dialect === 'postgres') {
    const db = await freshPostgres('unclaimed');
    dropDb = db.drop;
    env = { ENDERCLOUD_DATABASE_URL: db.url };
  }
  agent = await startFakeAgent();
  t = await testOrchestrator({ env });
  await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 256 } } });
  for (const [id, kind] of [
    ['eph', 'ephemeral'],
    ['per', 'persistent'],
  ]) {
    expect(
      (await t.call('PUT', `/api/v1/groups/${id}`, { body: { kind, variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] } }))
        .status,
    ).toBe(201);
  }
  return { t, agent };
}

async function recoverHost(tt: TestOrchestrator, a: FakeAgent): Promise<void> {
  const res = await tt.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN });
  expect(res.body.status).toBe('RECOVERING');
  await tt.o.ctx.hosts.whenIdle();
  expect((await tt.call('GET', '/api/v1/hosts/host-a')).body.status).toBe('ONLINE');
}

/** Recovery runs for a new host and for an OFFLINE host returning (not on a bootId change alone). */
async function offlineAndBack(tt: TestOrchestrator, a: FakeAgent): Promise<void> {
  tt.clock.advance(10_000);
  expect(await tt.o.detector.sweep()).toEqual(['host-a']);
  await recoverHost(tt, a);
}

const listed = async (tt: TestOrchestrator): Promise<string[]> =>
  (await tt.call('GET', '/api/v1/hosts/host-a/unclaimed')).body.unclaimed.map((u: { instanceId: string }) => u.instanceId);
const persisted = async (tt: TestOrchestrator): Promise<string[]> =>
  (await tt.o.store.unclaimed.listForHost('host-a')).map((r) => r.instanceId);
const cleanups = async (tt: TestOrchestrator) => (await tt.o.store.commands.list({ hostId: 'host-a' })).filter((c) => c.kind === 'cleanup');

describe.each(['sqlite', 'postgres'] as const)('durable unclaimed containers (%s)', (dialect) => {
  it('adopting one of three leaves the other two unclaimed through a later recovery; delete and disappearance take them out of the set', async () => {
    const { t, agent } = await setup(dialect);
    agent.inventory.push(
      { instanceId: 'u-1', groupId: 'eph', variantId: 'v', hostPort: 31001 },
      { instanceId: 'u-2', groupId: 'eph', variantId: 'v', hostPort: 31002 },
      { instanceId: 'u-3', groupId: 'per', variantId: 'v', hostPort: 31003, state: 'exited' },
    );
    await recoverHost(t, agent);
    const first = (await t.call('GET', '/api/v1/hosts/host-a/unclaimed')).body;
    expect(first.unclaimed.map((u: { instanceId: string }) => u.instanceId)).toEqual(['u-1', 'u-2', 'u-3']);
    expect(first.unclaimed[2]).toMatchObject({
      groupId: 'per',
      variantId: 'v',
      hostPort: 31003,
      state: 'exited',
      firstSeenAt: new Date(t.clock.now()).toISOString(),
    });
    expect(await cleanups(t)).toEqual([]);

    expect((await t.call('POST', '/api/v1/hosts/host-a/unclaimed/u-1/adopt', { body: { groupId: 'eph', variantId: 'v' } })).status).toBe(
      201,
    );
    expect(await persisted(t)).toEqual(['u-2', 'u-3']);
    expect(await listed(t)).toEqual(['u-2', 'u-3']);

    // The store now knows host-a (it places u-1 there); u-2 and u-3 are still not guesses to act on.
    await offlineAndBack(t, agent);
    const outcome = t.o.ctx.hosts.lastRecovery.get('host-a')!;
    expect(outcome.remove).toEqual([]);
    expect(outcome.cleanupCommandId).toBeNull();
    expect(outcome.unclaimed.map((u) => u.instanceId)).toEqual(['u-2', 'u-3']);
    expect(await cleanups(t)).toEqual([]);
    expect(await listed(t)).toEqual(['u-2', 'u-3']);
    expect((await t.call('GET', '/api/v1/instances/u-1')).body).toMatchObject({ hostId: 'host-a', groupId: 'eph' });

    // An explicit delete queues the cleanup and takes u-2 out of the set in the same transaction.
    const del = await t.call('DELETE', '/api/v1/hosts/host-a/unclaimed/u-2');
    expect(del.status).toBe(202);
    expect(await cleanups(t)).toEqual([
      expect.objectContaining({ id: del.body.commandId, payload: { instanceIds: ['u-2'], keepDataFor: ['u-2'] } }),
    ]);
    expect((await t.o.store.commands.get(del.body.commandId))?.maxAttempts).toBe(t.o.ctx.config.commandMaxAttempts);
    expect(await persisted(t)).toEqual(['u-3']);
    expect(await listed(t)).toEqual(['u-3']);

    // u-3 vanishes from the host: no longer listed at once, out of the set at the next recovery.
    agent.inventory.splice(
      agent.inventory.findIndex((i) => i.instanceId === 'u-3'),
      1,
    );
    expect(await listed(t)).toEqual([]);
    expect(await persisted(t)).toEqual(['u-3']);
    await offlineAndBack(t, agent);
    expect(await persisted(t)).toEqual([]);
    // u-2 is still reported (the worker is not running): its queued delete decides, no second cleanup.
    expect(t.o.ctx.hosts.lastRecovery.get('host-a')).toMatchObject({ remove: [], unclaimed: [] });
    expect((await cleanups(t)).map((c) => c.id)).toEqual([del.body.commandId]);
    expect(agent.calls.filter((c) => c.path === '/cleanup')).toEqual([]);
  });
});

describe('durable unclaimed containers', () => {
  it('an explicit delete alone makes the host known; the remaining unclaimed container still survives the next recovery', async () => {
    const { t, agent } = await setup('sqlite');
    agent.inventory.push({ instanceId: 'u-1', groupId: 'eph', variantId: 'v' }, { instanceId: 'u-2', groupId: 'eph', variantId: 'v' });
    await recoverHost(t, agent);
    t.o.worker.start();
    const del = await t.call('DELETE', '/api/v1/hosts/host-a/unclaimed/u-1?deleteData=true');
    expect(del.status).toBe(202);
    await until(async () => (await t.o.store.commands.get(del.body.commandId))?.status === 'succeeded', 'the delete carried out');
    expect(agent.inventory.map((i) => i.instanceId)).toEqual(['u-2']);
    await offlineAndBack(t, agent);
    expect(t.o.ctx.hosts.lastRecovery.get('host-a')).toMatchObject({ remove: [], cleanupCommandId: null });
    expect(await listed(t)).toEqual(['u-2']);
    expect(agent.calls.filter((c) => c.path === '/cleanup').map((c) => c.body.instanceIds)).toEqual([['u-1']]);
  });

  it('a container that appears after the recovery is not listed until a recovery classifies it; an orphan of a known host is still removed', async () => {
    const { t, agent } = await setup('sqlite');
    agent.inventory.push({ instanceId: 'u-1', groupId: 'per', variantId: 'v' });
    await recoverHost(t, agent);
    expect((await t.call('POST', '/api/v1/hosts/host-a/unclaimed/u-1/adopt', { body: { groupId: 'per', variantId: 'v' } })).status).toBe(
      201,
    );
    agent.inventory.push({ instanceId: 'late', groupId: 'eph', variantId: 'v' });
    expect(await listed(t)).toEqual([]);
    await offlineAndBack(t, agent);
    expect(t.o.ctx.hosts.lastRecovery.get('host-a')).toMatchObject({ remove: ['late'], unclaimed: [] });
    expect(await persisted(t)).toEqual([]);
  });
});
