// Hosts: heartbeat → RECOVERING → recovery run against an in-test agent → ONLINE;
// OFFLINE after missed beats (injected clock); recovery rules (known host orphan
// removed, fresh DB removes nothing, missing instance → unknown); maintenance.

import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { OfflineDetector } from '../../src/server/services/offline-detector.js';
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
  for (const [id, kind] of [
    ['eph', 'ephemeral'],
    ['per', 'persistent'],
  ]) {
    const res = await tt.call('PUT', `/api/v1/groups/${id}`, {
      body: { kind, variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
    });
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
    expect(host).toMatchObject({
      controlUrl: agent.url,
      gameAddress: '127.0.0.1',
      resources: { memoryMb: 4096, cpus: 4 },
      instances: { total: 0 },
    });
    expect(typeof host.lastHeartbeatAt).toBe('string');
  });

  it('refuses heartbeats without the agent token when one is configured, and bad bodies', async () => {
    const { t, agent } = await setup();
    expect((await beat(t, 'host-a', agent, null)).status).toBe(401);
    const bad = await t.call('POST', '/api/v1/agents/Bad_Id/heartbeat', { body: heartbeatBody(agent.url), token: AGENT_TOKEN });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('agentId');
    const noMem = await t.call('POST', '/api/v1/agents/h/heartbeat', {
      body: heartbeatBody(agent.url, { resources: {} }),
      token: AGENT_TOKEN,
    });
    expect(noMem.status).toBe(400);
  });

  it('refuses the store-shaped heartbeat (memoryMb/cpus/diskBytes) by name: one shape, the raw machine facts', async () => {
    const { t, agent } = await setup();
    const raw = heartbeatBody(agent.url).resources;
    for (const [field, extra] of [
      ['memoryMb', { memoryMb: 4096 }],
      ['cpus', { cpus: 4 }],
      ['diskBytes', { diskBytes: 1 }],
    ] as const) {
      const res = await t.call('POST', '/api/v1/agents/h-store/heartbeat', {
        body: heartbeatBody(agent.url, { resources: { ...raw, ...extra } }),
        token: AGENT_TOKEN,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
      expect(res.body.error.message).toContain(`body/resources/${field}`);
    }
    const storeOnly = await t.call('POST', '/api/v1/agents/h-store/heartbeat', {
      body: heartbeatBody(agent.url, { resources: { memoryMb: 4096, cpus: 4 } }),
      token: AGENT_TOKEN,
    });
    expect(storeOnly.status).toBe(400);
    expect(await t.o.store.hosts.get('h-store')).toBeUndefined();
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

  it('a restarted orchestrator marks no host OFFLINE until its agents had N intervals to beat to it', async () => {
    const { t, agent } = await setup({ ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '3' });
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    // The orchestrator was down for a minute: the last beat is far older than 3 intervals.
    t.clock.advance(60_000);
    const restarted = new OfflineDetector({
      store: t.o.store,
      clock: t.clock,
      logger: pino({ level: 'silent' }),
      missedBeats: 3,
      sweepIntervalMs: 1000,
    });
    expect(await restarted.sweep()).toEqual([]);
    t.clock.advance(2999);
    expect(await restarted.sweep()).toEqual([]);
    t.clock.advance(2);
    expect(await restarted.sweep()).toEqual(['host-a']);
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

  it("known host: orphans are removed through cleanup (a persistent one keeps its data), an unknown group's is unclaimed, a missing instance → unknown", async () => {
    const { t, agent } = await setup({ ENDERCLOUD_COMMAND_MAX_ATTEMPTS: '3' });
    await catalog(t);
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    // Two instances, created through the worker so the agent has their containers.
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await t.call('POST', '/api/v1/instances', { body: { groupId: 'per', variantId: 'v' } })).body.id);
    t.o.worker.start();
    await until(async () => (await t.o.store.instances.list({ states: ['starting'] })).length === 2, 'instances starting');
    // The host goes away; meanwhile one container vanishes and two orphans appear.
    t.clock.advance(10_000);
    await t.o.detector.sweep();
    agent.inventory.splice(
      agent.inventory.findIndex((i) => i.instanceId === ids[1]),
      1,
    );
    agent.inventory.push(
      { instanceId: 'orphan-eph', groupId: 'eph', variantId: 'v' },
      { instanceId: 'orphan-per', groupId: 'per', variantId: 'v' },
      { instanceId: 'orphan-unk', groupId: 'gone', variantId: 'v' },
    );
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    expect(await hostStatus(t, 'host-a')).toBe('ONLINE');
    const outcome = t.o.ctx.hosts.lastRecovery.get('host-a')!;
    expect(outcome.remove).toEqual(['orphan-eph', 'orphan-per']);
    // Only the ephemeral orphan's runtime directory may be deleted.
    expect(outcome.keepDataFor).toEqual(['orphan-per']);
    expect(outcome.unclaimed.map((u) => u.instanceId)).toEqual(['orphan-unk']);
    expect(outcome.missing).toEqual([ids[1]]);
    await until(() => agent.calls.find((c) => c.path === '/cleanup'), 'cleanup call');
    const cleanup = agent.calls.find((c) => c.path === '/cleanup')!;
    expect(cleanup.body).toEqual({ instanceIds: ['orphan-eph', 'orphan-per'], keepDataFor: ['orphan-per'] });
    expect(cleanup.headers['x-command-id']).toBe(outcome.cleanupCommandId);
    // The cleanup retries as often as every command: ENDERCLOUD_COMMAND_MAX_ATTEMPTS, not the store's default.
    expect((await t.o.store.commands.get(outcome.cleanupCommandId!))?.maxAttempts).toBe(3);
    // Both became unknown when the host went OFFLINE (host-moves.ts); the one whose container came back is
    // re-verified by the supervisor once the host is ONLINE, the missing one stays unknown.
    const missing = (await t.call('GET', `/api/v1/instances/${ids[1]}`)).body;
    expect(missing.state).toBe('unknown');
    expect(missing.stateReason).toContain('is OFFLINE');
    expect((await t.call('GET', `/api/v1/instances/${ids[0]}`)).body.state).toBe('unknown');
    const history = await t.o.store.history.list(ids[1]!);
    expect(history[0]).toMatchObject({ to: 'unknown' });
    await until(
      async () => !agent!.inventory.some((i) => i.instanceId === 'orphan-eph' || i.instanceId === 'orphan-per'),
      'orphans removed',
    );
    expect((await t.call('GET', '/api/v1/hosts/host-a/unclaimed')).body.unclaimed.map((u: { instanceId: string }) => u.instanceId)).toEqual(
      ['orphan-unk'],
    );
  });
});

describe('logging', () => {
  it('heartbeats are logged at debug, refusals and host status changes at info with the host id', async () => {
    const lines: { level: number; msg: string; hostId?: string; res?: { statusCode: number }; req?: { url: string } }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    agent = await startFakeAgent();
    t = await testOrchestrator({ deps: { logger: pino({ level: 'info' }, sink) }, env: { ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '3' } });
    for (let i = 0; i < 3; i++) {
      expect((await beat(t, 'host-log', agent)).status).toBe(200);
      await t.o.ctx.hosts.whenIdle();
      t.clock.advance(1000);
    }
    t.clock.advance(2001);
    await t.o.detector.sweep();
    await beat(t, 'host-log', agent);
    await t.o.ctx.hosts.whenIdle();
    expect((await beat(t, 'host-log', agent, null)).status).toBe(401);
    const heartbeatLines = lines.filter(
      (l) => l.req?.url?.includes('/heartbeat') || (l.msg === 'request completed' && l.res?.statusCode === 200),
    );
    expect(heartbeatLines).toEqual([]);
    const refused = lines.filter((l) => l.msg === 'request completed' && l.res?.statusCode === 401);
    expect(refused).toHaveLength(1);
    const byHost = lines.filter((l) => l.hostId === 'host-log' && l.level >= 30).map((l) => l.msg);
    expect(byHost[0]).toBe('new host registered: RECOVERING');
    expect(byHost[1]).toMatch(/^recovery finished/);
    expect(byHost).toContain('host is OFFLINE: heartbeats stopped');
    expect(byHost).toContain('host returned: RECOVERING');
    expect(byHost.filter((m) => m.startsWith('recovery finished'))).toHaveLength(2);
  });
});

describe('unclaimed containers', () => {
  it('an operator deletes one explicitly: its data stays unless deleteData=true; stored instances and unknown ids are refused', async () => {
    const { t, agent } = await setup();
    await catalog(t);
    agent.inventory.push({ instanceId: 'old-1', groupId: 'per', variantId: 'v' }, { instanceId: 'old-2', groupId: 'eph', variantId: 'v' });
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    t.o.worker.start();
    const keep = await t.call('DELETE', '/api/v1/hosts/host-a/unclaimed/old-1');
    expect(keep.status).toBe(202);
    expect(keep.body).toMatchObject({ hostId: 'host-a', instanceId: 'old-1', deleteData: false, commandId: expect.any(String) });
    const first = await until(() => agent.calls.find((c) => c.path === '/cleanup'), 'first cleanup');
    expect(first.body).toEqual({ instanceIds: ['old-1'], keepDataFor: ['old-1'] });
    expect(first.headers['x-command-id']).toBe(keep.body.commandId);
    const drop = await t.call('DELETE', '/api/v1/hosts/host-a/unclaimed/old-2?deleteData=true');
    expect(drop.status).toBe(202);
    const second = await until(() => agent.calls.filter((c) => c.path === '/cleanup')[1], 'second cleanup');
    expect(second.body).toEqual({ instanceIds: ['old-2'], keepDataFor: [] });
    expect((await t.call('DELETE', '/api/v1/hosts/host-a/unclaimed/nope')).status).toBe(404);
    const placed = (await t.call('POST', '/api/v1/instances', { body: { groupId: 'eph', variantId: 'v' } })).body.id;
    await until(() => agent.inventory.some((i) => i.instanceId === placed), 'instance created');
    const managed = await t.call('DELETE', `/api/v1/hosts/host-a/unclaimed/${placed}`);
    expect(managed.status).toBe(409);
    expect(managed.body.error.message).toContain(`/instances/${placed}`);
    expect((await t.call('DELETE', '/api/v1/hosts/host-a/unclaimed/old-1', { token: null })).status).toBe(401);
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

describe('adopting unclaimed containers', () => {
  /** A fresh database facing a host that already runs managed containers: all of them are unclaimed. */
  async function freshHostWith(...items: Parameters<FakeAgent['inventory']['push']>) {
    const s = await setup();
    await catalog(s.t);
    s.agent.inventory.push(...items);
    await beat(s.t, 'host-a', s.agent);
    await s.t.o.ctx.hosts.whenIdle();
    return s;
  }
  const unclaimedIds = async (tt: TestOrchestrator) =>
    (await tt.call('GET', '/api/v1/hosts/host-a/unclaimed')).body.unclaimed.map((u: { instanceId: string }) => u.instanceId).sort();
  const adopt = (tt: TestOrchestrator, id: string, body: Record<string, unknown>, token?: string | null) =>
    tt.call('POST', `/api/v1/hosts/host-a/unclaimed/${id}/adopt`, { body, ...(token !== undefined ? { token } : {}) });

  it('adopts a running and a stopped container as instances bound to them, without changing either; they leave the unclaimed list', async () => {
    const { t, agent } = await freshHostWith(
      { instanceId: 'i-0123456789ab', groupId: 'per', variantId: 'v', hostPort: 31005, state: 'running', labels: { team: 'build' } },
      { instanceId: 'old-2', groupId: 'per', variantId: 'v', hostPort: 31006, state: 'exited', exitCode: 0 },
    );
    const callsBefore = agent.calls.length;
    const running = await adopt(t, 'i-0123456789ab', { groupId: 'per', variantId: 'v' });
    expect(running.status).toBe(201);
    expect(running.body).toMatchObject({
      id: 'i-0123456789ab',
      name: 'per-0123456789ab',
      groupId: 'per',
      variantId: 'v',
      hostId: 'host-a',
      state: 'starting',
      desiredState: 'running',
      endpoint: { host: '127.0.0.1', port: 31005 },
      observedState: 'running',
      image: 'busybox:1',
      labels: { team: 'build' },
      memoryMb: 256,
      revision: 1,
      secretSettings: [],
    });
    // The old database's secrets are unknown: the fresh bridge token waits for the next replacement.
    expect(running.body.pendingChanges).toEqual([
      expect.objectContaining({ key: 'settings.ENDERCLOUD_INSTANCE_TOKEN', secret: true, value: '[redacted]' }),
    ]);
    const stopped = await adopt(t, 'old-2', { groupId: 'per', variantId: 'v', name: 'lobby-old' });
    expect(stopped.status).toBe(201);
    expect(stopped.body).toMatchObject({
      id: 'old-2',
      name: 'lobby-old',
      state: 'stopped',
      desiredState: 'stopped',
      endpoint: { host: '127.0.0.1', port: 31006 },
    });

    // Only inventories were asked for: nothing was created, started, stopped or removed.
    expect(agent.calls.slice(callsBefore).map((c) => `${c.method} ${c.path}`)).toEqual(['GET /instances', 'GET /instances']);
    expect(agent.inventory.map((i) => [i.instanceId, i.state])).toEqual([
      ['i-0123456789ab', 'running'],
      ['old-2', 'exited'],
    ]);
    expect(await unclaimedIds(t)).toEqual([]);
    expect((await t.call('GET', '/api/v1/hosts/host-a')).body).toMatchObject({ memoryReservedMb: 512, instances: { total: 2 } });

    const history = (await t.call('GET', '/api/v1/instances/i-0123456789ab/history')).body;
    expect(JSON.stringify(history)).toMatch(/adopted: existing container/);
    const revisions = (await t.call('GET', '/api/v1/instances/i-0123456789ab/revisions')).body.revisions;
    expect(revisions).toHaveLength(1);
    expect(revisions[0]).toMatchObject({ revision: 1, reason: 'adopted' });
    const audit = (await t.call('GET', '/api/v1/audit?targetId=i-0123456789ab')).body.entries;
    expect(audit).toEqual([
      expect.objectContaining({
        action: 'host.unclaimed.adopt',
        result: 'ok',
        params: { hostId: 'host-a', groupId: 'per', variantId: 'v' },
      }),
    ]);
  });

  it('adopting an adopted instance again is a 409 naming it; unknown ids are 404', async () => {
    const { t } = await freshHostWith({ instanceId: 'old-1', groupId: 'per', variantId: 'v', hostPort: 31005 });
    expect((await adopt(t, 'old-1', { groupId: 'per', variantId: 'v' })).status).toBe(201);
    const again = await adopt(t, 'old-1', { groupId: 'per', variantId: 'v' });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('instance old-1 is already managed') });
    const missing = await adopt(t, 'nope', { groupId: 'per', variantId: 'v' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toContain('no unclaimed container for instance nope');
    expect(
      (await t.call('POST', '/api/v1/hosts/no-host/unclaimed/old-1/adopt', { body: { groupId: 'per', variantId: 'v' } })).body.error.code,
    ).toBe('HOST_NOT_FOUND');
  });

  it('refuses with 409 when the container was made for another group or variant, and writes nothing', async () => {
    const { t } = await freshHostWith(
      { instanceId: 'old-1', groupId: 'eph', variantId: 'v', hostPort: 31005 },
      { instanceId: 'bare', groupId: null, variantId: null },
    );
    const wrong = await adopt(t, 'old-1', { groupId: 'per', variantId: 'v' });
    expect(wrong.status).toBe(409);
    expect(wrong.body.error.message).toContain('was made for group eph variant v');
    expect(wrong.body.error.message).toContain('unsafe');
    const wrongVariant = await adopt(t, 'old-1', { groupId: 'eph', variantId: 'other' });
    expect(wrongVariant.status).toBe(409);
    const unlabelled = await adopt(t, 'bare', { groupId: 'per', variantId: 'v' });
    expect(unlabelled.status).toBe(409);
    expect(unlabelled.body.error.message).toContain('carries no orchestrator.group');
    expect((await t.call('GET', '/api/v1/instances/old-1')).status).toBe(404);
    expect((await t.call('GET', '/api/v1/hosts/host-a')).body.memoryReservedMb).toBe(0);
    expect(await unclaimedIds(t)).toEqual(['bare', 'old-1']);
    const audit = (await t.call('GET', '/api/v1/audit?targetId=old-1')).body.entries;
    expect(audit[0]).toMatchObject({ action: 'host.unclaimed.adopt', result: 'error', errorCode: 'CONFLICT' });
  });

  it('an unknown group is 404; a missing variant of the group is 400, as for a create', async () => {
    const { t } = await freshHostWith(
      { instanceId: 'old-1', groupId: 'gone', variantId: 'v' },
      { instanceId: 'old-2', groupId: 'per', variantId: 'w' },
    );
    const gone = await adopt(t, 'old-1', { groupId: 'gone', variantId: 'v' });
    expect(gone.status).toBe(404);
    expect(gone.body.error).toMatchObject({ code: 'GROUP_NOT_FOUND', message: expect.stringContaining('group gone does not exist') });
    const noVariant = await adopt(t, 'old-2', { groupId: 'per', variantId: 'w' });
    expect(noVariant.status).toBe(400);
    expect(noVariant.body.error).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringContaining('has no variant w') });
    expect(await unclaimedIds(t)).toEqual(['old-1', 'old-2']);
  });

  it('respects the group cap and the host memory, reserving nothing on refusal', async () => {
    const { t } = await freshHostWith(
      { instanceId: 'c-1', groupId: 'capped', variantId: 'v' },
      { instanceId: 'c-2', groupId: 'capped', variantId: 'v' },
      { instanceId: 'big', groupId: 'huge', variantId: 'v' },
    );
    const put = (id: string, body: Record<string, unknown>) =>
      t.call('PUT', `/api/v1/groups/${id}`, {
        body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }], ...body },
      });
    expect((await put('capped', { caps: { maxInstances: 1 } })).status).toBe(201);
    expect(
      (await put('huge', { variants: [{ id: 'v', template: { name: 'tpl', version: '1' }, resources: { memoryMb: 8192 } }] })).status,
    ).toBe(201);
    expect((await adopt(t, 'c-1', { groupId: 'capped', variantId: 'v' })).status).toBe(201);
    const capped = await adopt(t, 'c-2', { groupId: 'capped', variantId: 'v' });
    expect(capped.status).toBe(409);
    expect(capped.body.error).toMatchObject({ code: 'CAP_REACHED', message: expect.stringContaining('caps.maxInstances (1)') });
    const big = await adopt(t, 'big', { groupId: 'huge', variantId: 'v' });
    expect(big.status).toBe(503);
    expect(big.body.error).toMatchObject({ code: 'NO_CAPACITY', message: expect.stringContaining('8192 MiB') });
    expect((await t.call('GET', '/api/v1/hosts/host-a')).body.memoryReservedMb).toBe(256);
    expect(await unclaimedIds(t)).toEqual(['big', 'c-2']);
  });

  it('an adopted instance stops by signal (its old RCON password is unknown) and gets fresh secrets at its first replacement', async () => {
    const { t, agent } = await freshHostWith({ instanceId: 'old-1', groupId: 'mc', variantId: 'v', hostPort: 31005, state: 'running' });
    await t.call('PUT', '/api/v1/templates/mc/versions/1', {
      body: {
        image: 'busybox:1',
        resources: { memoryMb: 256 },
        variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true }],
        stop: { signal: 'SIGTERM', timeoutMs: 2000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
      },
    });
    expect(
      (
        await t.call('PUT', '/api/v1/groups/mc', {
          body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] },
        })
      ).status,
    ).toBe(201);
    expect((await adopt(t, 'old-1', { groupId: 'mc', variantId: 'v' })).status).toBe(201);
    t.o.worker.start();
    expect((await t.call('POST', '/api/v1/instances/old-1/stop')).status).toBe(202);
    const stop = await until(() => agent.calls.find((c) => c.path === '/instances/old-1/stop'), 'stop call');
    expect(stop.body).toEqual({ timeoutSeconds: 2, signal: 'SIGTERM' });
    await until(async () => (await t.call('GET', '/api/v1/instances/old-1')).body.state === 'stopped', 'stopped');
    expect((await t.call('POST', '/api/v1/instances/old-1/start')).status).toBe(202);
    const replace = await until(() => agent.calls.find((c) => c.path === '/instances/old-1/replace'), 'replace call');
    expect(Object.keys(replace.body.env)).toEqual(expect.arrayContaining(['RCON_PASSWORD', 'ENDERCLOUD_INSTANCE_TOKEN']));
    const after = await until(async () => {
      const view = (await t.call('GET', '/api/v1/instances/old-1')).body;
      return view.pendingChanges.length === 0 && view;
    }, 'pending secrets applied');
    expect(after.secretSettings.sort()).toEqual(['ENDERCLOUD_INSTANCE_TOKEN', 'RCON_PASSWORD']);
    // The container's new bridge token is the one the store now accepts.
    const bridge = await t.call('POST', '/api/v1/instances/old-1/events', {
      body: { type: 'SERVER_READY' },
      token: replace.body.env.ENDERCLOUD_INSTANCE_TOKEN,
    });
    expect(bridge.status).toBe(202);
  });

  it('on PostgreSQL, concurrent adoptions under a cap of one admit exactly one, and the same id twice at once is written once', async () => {
    const db = await freshPostgres('adopt');
    const pgAgent = await startFakeAgent();
    const pg = await testOrchestrator({ env: { ENDERCLOUD_DATABASE_URL: db.url } });
    try {
      pgAgent.inventory.push(
        { instanceId: 'c-1', groupId: 'capped', variantId: 'v' },
        { instanceId: 'c-2', groupId: 'capped', variantId: 'v' },
        { instanceId: 'twin', groupId: 'per', variantId: 'v' },
      );
      await catalog(pg);
      await pg.call('PUT', '/api/v1/groups/capped', {
        body: { kind: 'persistent', caps: { maxInstances: 1 }, variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
      });
      await beat(pg, 'host-a', pgAgent);
      await pg.o.ctx.hosts.whenIdle();
      const capped = await Promise.all(['c-1', 'c-2'].map((id) => adopt(pg, id, { groupId: 'capped', variantId: 'v' })));
      expect(capped.map((r) => r.status).sort()).toEqual([201, 409]);
      const twins = await Promise.all([1, 2].map(() => adopt(pg, 'twin', { groupId: 'per', variantId: 'v' })));
      expect(twins.map((r) => r.status).sort()).toEqual([201, 409]);
      expect(twins.find((r) => r.status === 409)!.body.error.message).toContain('twin');
      expect((await pg.call('GET', '/api/v1/hosts/host-a')).body.memoryReservedMb).toBe(512);
    } finally {
      await pg.close();
      await pgAgent.close();
      await db.drop();
    }
  });

  it('needs host write access, a well-formed body, and a host that finished recovery', async () => {
    const { t, agent } = await freshHostWith({ instanceId: 'old-1', groupId: 'per', variantId: 'v' });
    const reader = (await t.call('POST', '/api/v1/tokens', { body: { name: 'reader', scopes: ['read'] } })).body.secret as string;
    const refused = await adopt(t, 'old-1', { groupId: 'per', variantId: 'v' }, reader);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('hosts:write');
    expect((await adopt(t, 'old-1', { groupId: 'per' })).status).toBe(400);
    expect((await adopt(t, 'old-1', { groupId: 'per', variantId: 'v', extra: 1 })).status).toBe(400);
    t.clock.advance(10_000);
    await t.o.detector.sweep();
    agent.failNext('GET /instances', 1, 503);
    await beat(t, 'host-a', agent);
    await t.o.ctx.hosts.whenIdle();
    const recovering = await adopt(t, 'old-1', { groupId: 'per', variantId: 'v' });
    expect(recovering.status).toBe(503);
    expect(recovering.body.error).toMatchObject({ code: 'HOST_UNAVAILABLE', message: expect.stringContaining('RECOVERING') });
  });
});
