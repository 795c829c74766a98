// Hosts: heartbeat → RECOVERING → recovery run against an in-test agent → ONLINE;
// OFFLINE after missed beats (injected clock); recovery rules (known host orphan
// removed, fresh DB removes nothing, missing instance → unknown); maintenance.

import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator, until, type FakeAgent, type TestOrchestrator } from './support.js';

let t: TestOrchestrator | undefined;
let agent: FakeAgent | undefined;
afterEach(async () => {
  await t?.close();
  await agent?.close();
  t = undefined;
  agent = undefined;
});

async function setup(env: Record<string, string> = {}) {
  agent = await startFakeAgent();
  t = await testOrchestrator({ env });
  return { t, agent };
}

const beat = (tt: TestOrchestrator, id: string, a: FakeAgent, token: string | null = AGENT_TOKEN) =>
  tt.call('POST', `/api/v1/agents/${id}/heartbeat`, { body: heartbeatBody(a.url), token });

async function hostStatus(tt: TestOrchestrator, id: string): Promise<string> {
  return (await tt.call('GET', `/api/v1/hosts/${id}`)).body.status;
}

/** A catalog with one ephemeral and one persistent group on template `tpl@1`. */
async function catalog(tt: TestOrchestrator) {
  await tt.call('PUT', '/api/v1/templates/tpl/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 256 } } });
  for (const [id, kind] of [['eph', 'ephemeral'], ['per', 'persistent']]) {
    const res = await tt.call('PUT', `/api/v1/groups/${id}`, { body: { kind, variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] } });
    expect(res.status).toBe(201);
  }
}

describe('heartbeat and recovery', () => {
  it('a new host is RECOVERING, inventoried, then ONLINE; never placeable before', async () => {
    const { t, agent } = await setup();
    await catalog(t);
    const first = await beat(t, 'host-a', agent);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ hostId: 'host-a', status: 'RECOVERING' });
    // While RECOVERING, a placement finds no ONLINE host.
    const early = await t.call('POST', '/api/v1/instances', { body: { groupId: 'eph', variantId: 'v' } });
    if (early.status !== 202) expect(early.body.error.code).toBe('NO_CAPACITY');
    await t.o.ctx.hosts.whenIdle();
    expect(agent.calls.some((c) => c.method === 'GET' && c.path === '/instances')).toBe(true);
    expect(agent.calls[0]!.headers.authorization).toBe(`Bearer ${AGENT_TOKEN}`);
    expect(await hostStatus(t, 'host-a')).toBe('ONLINE');
    const host = (await t.call('GET', '/api/v1/hosts/host-a')).body;
    expect(host).toMatchObject({ controlUrl: agent.url, gameAddress: '127.0.0.1', resources: { memoryMb: 4096, cpus: 4 }, instances: { total: 0 } });
    expect(typeof host.lastHeartbeatAt).toBe('string');
  });

  it('refuses heartbeats without the agent token when one is configured, and bad bodies', async () => {
    const { t, agent } = await setup();
    expect((await beat(t, 'host-a', agent, null)).status).toBe(401);
    const bad = await t.call('POST', '/api/v1/agents/Bad_Id/heartbeat', { body: heartbeatBody(agent.url), token: AGENT_TOKEN });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('agentId');
    const noMem = await t.call('POST', '/api/v1/agents/h/heartbeat', { body: heartbeatBody(agent.url, { resources: {} }), token: AGENT_TOKEN });
    expect(noMem.status).toBe(400);
  });

  it('without a configured agent token, heartbeats are accepted unauthenticated but layer archives are not', async () => {
    agent = await startFakeAgent();
    t = await testOrchestrator({ env: { ENDERCLOUD_AGENT_TOKEN: '' } });
    expect((await beat(t, 'host-b', agent, null)).status).toBe(200);
    expect((await t.call('GET', `/api/v1/template-layers/x/archive?checksum=${'a'.repeat(64)}`, { token: null })).status).toBe(401);
  });

  it('missed heartbeats make a host OFFLINE after N intervals; a returning host recovers', async () => {
    const { t, agent } = await setup({ ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '3' });
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    t.clock.advance(2999);
    expect(await t.o.detector.sweep()).toEqual([]);
    t.clock.advance(2);
    expect(await t.o.detector.sweep()).toEqual(['host-a']);
    expect(await hostStatus(t, 'host-a')).toBe('OFFLINE');
    const back = await beat(t, 'host-a', agent);
    expect(back.body.status).toBe('RECOVERING');
    await t.o.ctx.hosts.whenIdle();
    expect(await hostStatus(t, 'host-a')).toBe('ONLINE');
  });

  it('an unreachable agent keeps the host RECOVERING; the next heartbeat retries', async () => {
    const { t, agent } = await setup();
    agent.failNext('GET /instances', 1, 503);
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    expect(await hostStatus(t, 'host-a')).toBe('RECOVERING');
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    expect(await hostStatus(t, 'host-a')).toBe('ONLINE');
  });

  it('fresh database: managed containers are listed as unclaimed and nothing is removed', async () => {
    const { t, agent } = await setup();
    await catalog(t);
    agent.inventory.push({ instanceId: 'old-1', groupId: 'eph', variantId: 'v' }, { instanceId: 'old-2', groupId: 'per', variantId: 'v' });
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    expect(await hostStatus(t, 'host-a')).toBe('ONLINE');
    expect(agent.calls.filter((c) => c.path === '/cleanup')).toEqual([]);
    const unclaimed = await t.call('GET', '/api/v1/hosts/host-a/unclaimed');
    expect(unclaimed.status).toBe(200);
    expect(unclaimed.body.unclaimed.map((u: { instanceId: string }) => u.instanceId).sort()).toEqual(['old-1', 'old-2']);
  });

  it('known host: an ephemeral orphan is removed through cleanup, a persistent one kept as unclaimed, a missing instance → unknown', async () => {
    const { t, agent } = await setup();
    await catalog(t);
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    // Two instances, created through the worker so the agent has their containers.
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await t.call('POST', '/api/v1/instances', { body: { groupId: 'per', variantId: 'v' } })).body.id);
    t.o.worker.start();
    await until(async () => (await t.o.ctx.store.instances.list({ states: ['starting'] })).length === 2, 'instances starting');
    // The host goes away; meanwhile one container vanishes and two orphans appear.
    t.clock.advance(10_000);
    await t.o.detector.sweep();
    agent.inventory.splice(agent.inventory.findIndex((i) => i.instanceId === ids[1]), 1);
    agent.inventory.push({ instanceId: 'orphan-eph', groupId: 'eph', variantId: 'v' }, { instanceId: 'orphan-per', groupId: 'per', variantId: 'v' });
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    expect(await hostStatus(t, 'host-a')).toBe('ONLINE');
    const outcome = t.o.ctx.hosts.lastRecovery.get('host-a')!;
    expect(outcome.remove).toEqual(['orphan-eph']);
    expect(outcome.unclaimed.map((u) => u.instanceId)).toEqual(['orphan-per']);
    expect(outcome.missing).toEqual([ids[1]]);
    await until(() => agent.calls.find((c) => c.path === '/cleanup'), 'cleanup call');
    const cleanup = agent.calls.find((c) => c.path === '/cleanup')!;
    expect(cleanup.body).toEqual({ instanceIds: ['orphan-eph'] });
    expect(cleanup.headers['x-command-id']).toBe(outcome.cleanupCommandId);
    const missing = (await t.call('GET', `/api/v1/instances/${ids[1]}`)).body;
    expect(missing.state).toBe('unknown');
    expect(missing.stateReason).toContain('missing');
    expect((await t.call('GET', `/api/v1/instances/${ids[0]}`)).body.state).toBe('starting');
    const history = await t.o.ctx.store.history.list(ids[1]!);
    expect(history[0]).toMatchObject({ to: 'unknown' });
    await until(async () => !agent!.inventory.some((i) => i.instanceId === 'orphan-eph'), 'orphan removed');
    expect((await t.call('GET', '/api/v1/hosts/host-a/unclaimed')).body.unclaimed.map((u: { instanceId: string }) => u.instanceId)).toEqual(['orphan-per']);
  });
});

describe('maintenance', () => {
  it('MAINTENANCE takes no placements; ending it makes the host ONLINE again', async () => {
    const { t, agent } = await setup();
    await catalog(t);
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    const on = await t.call('POST', '/api/v1/hosts/host-a/maintenance', { body: { enabled: true, message: 'kernel update' } });
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ status: 'MAINTENANCE', maintenance: { enabled: true, message: 'kernel update' } });
    const refused = await t.call('POST', '/api/v1/instances', { body: { groupId: 'eph', variantId: 'v' } });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('NO_CAPACITY');
    // Heartbeats keep it in maintenance.
    await beat(t, 'host-a', agent);
    expect(await hostStatus(t, 'host-a')).toBe('MAINTENANCE');
    const off = await t.call('POST', '/api/v1/hosts/host-a/maintenance', { body: { enabled: false } });
    expect(off.body).toMatchObject({ status: 'ONLINE', maintenance: null });
    expect((await t.call('POST', '/api/v1/hosts/nope/maintenance', { body: { enabled: true } })).body.error.code).toBe('HOST_NOT_FOUND');
  });
});
