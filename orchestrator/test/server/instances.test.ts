// Instances and durable commands: placement with memory reserved in the same
// transaction as the instance and its command (20 concurrent POSTs never
// oversubscribe), caps, dispatch with x-command-id, retry with backoff,
// permanent failure, and crash-resume without a duplicate container.

import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator, until, type FakeAgent, type TestOrchestrator } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function agentUp(): Promise<FakeAgent> {
  const a = await startFakeAgent();
  cleanups.push(() => a.close());
  return a;
}

async function orchestrator(opts: Parameters<typeof testOrchestrator>[0] = {}): Promise<TestOrchestrator> {
  const t = await testOrchestrator(opts);
  cleanups.push(() => t.close());
  return t;
}

async function onlineHost(t: TestOrchestrator, id: string, a: FakeAgent, memoryMb: number): Promise<void> {
  const res = await t.call('POST', `/api/v1/agents/${id}/heartbeat`, {
    body: heartbeatBody(a.url, { resources: { cpuCount: 2, memoryTotalBytes: memoryMb * 1024 * 1024 } }),
    token: AGENT_TOKEN,
  });
  expect(res.status).toBe(200);
  await t.o.ctx.hosts.whenIdle();
}

async function catalog(t: TestOrchestrator, group: Record<string, unknown> = {}): Promise<void> {
  await t.call('PUT', '/api/v1/templates/tpl/versions/1', {
    body: {
      image: 'busybox:1',
      resources: { memoryMb: 256 },
      env: { A: '1' },
      variables: [
        { name: 'RCON_PASSWORD', type: 'string', secret: true, required: true },
        { name: 'MOTD', type: 'string', default: 'hi' },
      ],
    },
  });
  const res = await t.call('PUT', '/api/v1/groups/g', {
    body: { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'tpl', version: '1' }, env: { B: '2' } }], ...group },
  });
  expect(res.status).toBe(201);
}

describe('placement', () => {
  it('20 concurrent creates never oversubscribe host memory', async () => {
    const t = await orchestrator();
    const a = await agentUp();
    const b = await agentUp();
    await catalog(t);
    await onlineHost(t, 'host-a', a, 1024); // 4 × 256 MiB
    await onlineHost(t, 'host-b', b, 1280); // 5 × 256 MiB
    const results = await Promise.all(
      Array.from({ length: 20 }, () => t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v' } })),
    );
    const accepted = results.filter((r) => r.status === 202);
    expect(accepted).toHaveLength(9);
    for (const r of results.filter((x) => x.status !== 202)) expect(r.body.error.code).toBe('NO_CAPACITY');
    const hosts = (await t.call('GET', '/api/v1/hosts')).body.hosts;
    const byId = Object.fromEntries(hosts.map((h: { id: string }) => [h.id, h]));
    expect(byId['host-a'].memoryReservedMb).toBe(1024);
    expect(byId['host-b'].memoryReservedMb).toBe(1280);
    expect(byId['host-a'].instances.total + byId['host-b'].instances.total).toBe(9);
    const instances = (await t.call('GET', '/api/v1/instances')).body.instances;
    expect(instances).toHaveLength(9);
    expect(new Set(instances.map((i: { id: string }) => i.id)).size).toBe(9);
  });

  it('packs onto the busiest host that fits, and distributes when the group asks', async () => {
    const t = await orchestrator();
    const a = await agentUp();
    const b = await agentUp();
    await catalog(t);
    await onlineHost(t, 'host-a', a, 4096);
    await onlineHost(t, 'host-b', b, 4096);
    const hostsOf = async (n: number) => {
      const out: string[] = [];
      for (let i = 0; i < n; i++)
        out.push((await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v' } })).body.hostId);
      return out;
    };
    expect(await hostsOf(3)).toEqual(['host-a', 'host-a', 'host-a']);
    await t.call('PUT', '/api/v1/groups/g', {
      body: { kind: 'ephemeral', placement: 'distributed', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
    });
    expect(await hostsOf(3)).toEqual(['host-b', 'host-b', 'host-b']);
    expect(await hostsOf(2)).toEqual(['host-a', 'host-b']);
  });

  it('enforces the group cap and the global cap with CAP_REACHED', async () => {
    const t = await orchestrator({ env: { ENDERCLOUD_MAX_INSTANCES: '3' } });
    const a = await agentUp();
    await catalog(t, { caps: { maxInstances: 2 } });
    await onlineHost(t, 'host-a', a, 8192);
    const post = () => t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v' } });
    expect((await post()).status).toBe(202);
    expect((await post()).status).toBe(202);
    const capped = await post();
    expect(capped.status).toBe(409);
    expect(capped.body.error.code).toBe('CAP_REACHED');
    await t.call('PUT', '/api/v1/groups/g', {
      body: { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
    });
    expect((await post()).status).toBe(202);
    expect((await post()).body.error.code).toBe('CAP_REACHED');
  });

  it('names unknown groups and variants, and duplicate names', async () => {
    const t = await orchestrator();
    const a = await agentUp();
    await catalog(t);
    await onlineHost(t, 'host-a', a, 4096);
    expect((await t.call('POST', '/api/v1/instances', { body: { groupId: 'nope', variantId: 'v' } })).body.error.code).toBe(
      'GROUP_NOT_FOUND',
    );
    const badVariant = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'x' } });
    expect(badVariant.status).toBe(400);
    expect(badVariant.body.error.message).toContain('variantId');
    expect((await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', name: 'lobby-1' } })).status).toBe(202);
    expect((await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', name: 'lobby-1' } })).status).toBe(409);
    expect((await t.call('GET', '/api/v1/instances/lobby-1')).body.name).toBe('lobby-1');
  });
});

describe('commands', () => {
  it('dispatches the create with x-command-id and x-request-id, records the endpoint and moves to starting', async () => {
    const started: string[] = [];
    const t = await orchestrator({ deps: { hooks: { onContainerStarted: (id) => void started.push(id) } } });
    const a = await agentUp();
    await catalog(t);
    await onlineHost(t, 'host-a', a, 4096);
    const res = await t.call('POST', '/api/v1/instances', {
      body: { groupId: 'g', variantId: 'v' },
      headers: { 'x-request-id': 'req-create-1' },
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ state: 'installing', commandId: expect.any(String) });
    t.o.worker.start();
    const cmd = await until(async () => {
      const c = (await t.call('GET', `/api/v1/commands/${res.body.commandId}`)).body;
      return c.status === 'succeeded' ? c : undefined;
    }, 'create command');
    expect(cmd).toMatchObject({ kind: 'create', instanceId: res.body.id, hostId: 'host-a', attempts: 1, result: { hostPort: 31000 } });
    const put = a.calls.find((c) => c.method === 'PUT')!;
    expect(put.path).toBe(`/instances/${res.body.id}`);
    expect(put.headers['x-command-id']).toBe(res.body.commandId);
    expect(put.headers['x-request-id']).toBe('req-create-1');
    expect(put.body).toMatchObject({
      groupId: 'g',
      variantId: 'v',
      image: 'busybox:1',
      resources: { memoryMb: 256 },
      env: { A: '1', B: '2', MOTD: 'hi', RCON_PASSWORD: expect.any(String) },
    });
    const instance = (await t.call('GET', `/api/v1/instances/${res.body.id}`)).body;
    expect(instance).toMatchObject({
      state: 'starting',
      desiredState: 'running',
      hostId: 'host-a',
      endpoint: { host: '127.0.0.1', port: 31000 },
      secretSettings: ['RCON_PASSWORD', 'ENDERCLOUD_INSTANCE_TOKEN'],
    });
    expect(JSON.stringify(instance)).not.toContain(put.body.env.RCON_PASSWORD);
    expect(JSON.stringify(instance)).not.toContain(put.body.env.ENDERCLOUD_INSTANCE_TOKEN);
    expect(JSON.stringify(cmd)).not.toContain(put.body.env.RCON_PASSWORD);
    expect(started).toEqual([res.body.id]);
    const history = (await t.o.store.history.list(res.body.id)).map((h) => h.to).reverse();
    expect(history).toEqual(['installing', 'stopped', 'starting']);
    expect((await t.call('GET', '/metrics')).body).toContain('endercloud_command_outcomes_total{kind="create",outcome="succeeded"} 1');
  });

  it('retries retryable agent failures with backoff, then succeeds once', async () => {
    const t = await orchestrator();
    const a = await agentUp();
    await catalog(t);
    await onlineHost(t, 'host-a', a, 4096);
    a.failNext('PUT /instances', 2, 503, 'DOCKER_ERROR');
    const { body } = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v' } });
    // Drive the worker by hand with the manual clock: each retry waits for its backoff.
    const w = t.o.worker;
    expect(await w.tick()).toHaveLength(1);
    await w.whenIdle();
    let cmd = (await t.call('GET', `/api/v1/commands/${body.commandId}`)).body;
    expect(cmd).toMatchObject({ status: 'pending', attempts: 1, lastError: expect.stringContaining('DOCKER_ERROR') });
    expect(await w.tick()).toHaveLength(0); // not due yet
    t.clock.advance(10); // initial 10 ms · (1 − 0.5 + 0.5 · 0.5)
    expect(await w.tick()).toHaveLength(1);
    await w.whenIdle();
    t.clock.advance(15);
    expect(await w.tick()).toHaveLength(1);
    await w.whenIdle();
    cmd = (await t.call('GET', `/api/v1/commands/${body.commandId}`)).body;
    expect(cmd).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(a.calls.filter((c) => c.method === 'PUT')).toHaveLength(3);
    expect(a.inventory).toHaveLength(1);
  });

  it('fails for good on a non-retryable error and leaves the instance in error', async () => {
    const t = await orchestrator();
    const a = await agentUp();
    await catalog(t);
    await onlineHost(t, 'host-a', a, 4096);
    a.failNext('PUT /instances', 1, 409, 'INSTANCE_CONFLICT');
    const { body } = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v' } });
    await t.o.worker.tick();
    await t.o.worker.whenIdle();
    expect((await t.call('GET', `/api/v1/commands/${body.commandId}`)).body).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastError: expect.stringContaining('INSTANCE_CONFLICT'),
    });
    expect((await t.call('GET', `/api/v1/instances/${body.id}`)).body).toMatchObject({
      state: 'error',
      stateReason: expect.stringContaining('create failed'),
    });
  });

  it('a crash between persisting and dispatching resumes on restart, with exactly one container', async () => {
    const a = await agentUp();
    const first = await testOrchestrator({ keepDataDir: true });
    await catalog(first);
    await onlineHost(first, 'host-a', a, 4096);
    const { body } = await first.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v' } });
    // The first orchestrator claimed the command (as if dispatching) and then died.
    expect(await first.o.store.commands.claimDue(first.clock.now(), 10, { claimer: 'dead-worker', leaseMs: 30_000 })).toHaveLength(1);
    await first.o.stop();
    const second = await orchestrator({ dataDir: first.dataDir, clock: first.clock });
    expect(await second.o.worker.tick()).toHaveLength(0); // lease still held by the dead worker
    second.clock.advance(30_001);
    expect(await second.o.worker.tick()).toHaveLength(1);
    await second.o.worker.whenIdle();
    // Dispatched once by the new orchestrator: one create call, one container.
    expect((await second.call('GET', `/api/v1/commands/${body.commandId}`)).body).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(a.calls.filter((c) => c.method === 'PUT')).toHaveLength(1);
    expect(a.inventory).toHaveLength(1);
    expect((await second.call('GET', `/api/v1/instances/${body.id}`)).body.state).toBe('starting');
  });

  it('start:false creates the container without starting it: no start, no stop afterwards, the instance stays stopped', async () => {
    const t = await orchestrator();
    const a = await agentUp();
    await catalog(t);
    await onlineHost(t, 'host-a', a, 4096);
    const { body } = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', start: false } });
    t.o.worker.start();
    await until(async () => (await t.call('GET', `/api/v1/commands/${body.commandId}`)).body.status === 'succeeded', 'create command');
    const create = a.calls.find((c) => c.method === 'PUT' && c.path === `/instances/${body.id}`);
    expect(create?.body).toMatchObject({ start: false });
    expect(a.calls.filter((c) => /\/(start|stop)$/.test(c.path))).toEqual([]);
    expect((await t.call('GET', '/api/v1/commands?instanceId=' + body.id)).body.commands).toHaveLength(1);
    expect((await t.call('GET', `/api/v1/instances/${body.id}`)).body).toMatchObject({ state: 'stopped', desiredState: 'stopped' });
  });

  it('GET /commands/:id is 404 COMMAND_NOT_FOUND for an unknown id', async () => {
    const t = await orchestrator();
    expect((await t.call('GET', '/api/v1/commands/nope')).body.error.code).toBe('COMMAND_NOT_FOUND');
  });
});

describe('settings and secrets at creation (creation step 3)', () => {
  it('takes the template variables at creation, checked before anything is written; a secret given then never shows up again', async () => {
    const t = await orchestrator();
    const a = await agentUp();
    await catalog(t);
    await onlineHost(t, 'host-a', a, 4096);
    const secret = 'given-at-creation-7f3a9c';
    const res = await t.call('POST', '/api/v1/instances', {
      body: { groupId: 'g', variantId: 'v', settings: { MOTD: 'welcome' }, secrets: { RCON_PASSWORD: secret } },
    });
    expect(res.status).toBe(202);
    const view = (await t.call('GET', `/api/v1/instances/${res.body.id}`)).body;
    expect(view.settings).toMatchObject({ MOTD: 'welcome' });
    t.o.worker.start();
    await until(async () => (await t.call('GET', `/api/v1/commands/${res.body.commandId}`)).body.status === 'succeeded', 'create command');
    const create = a.calls.find((c) => c.method === 'PUT' && c.path === `/instances/${res.body.id}`);
    expect(create?.body).toMatchObject({ env: { MOTD: 'welcome', RCON_PASSWORD: secret } });
    const answers = [
      view,
      (await t.call('GET', `/api/v1/instances/${res.body.id}`)).body,
      (await t.call('GET', `/api/v1/instances/${res.body.id}/history`)).body,
      (await t.call('GET', `/api/v1/instances/${res.body.id}/revisions`)).body,
      (await t.call('GET', `/api/v1/commands?instanceId=${res.body.id}`)).body,
      (await t.call('GET', '/api/v1/audit')).body,
    ];
    for (const answer of answers) expect(JSON.stringify(answer)).not.toContain(secret);
  });

  it.each([
    [{ settings: { NOPE: 'x' } }, 'body/settings/NOPE is not a variable of this template'],
    [{ settings: { RCON_PASSWORD: 'x' } }, 'body/settings/RCON_PASSWORD is a secret variable: give it under secrets'],
    [{ secrets: { MOTD: 'x' } }, 'body/secrets/MOTD is not a secret variable'],
    [{ settings: { MOTD: 5 } }, 'body/settings/MOTD must be a string'],
  ])('refuses %j naming the variable and the rule, writing nothing', async (values, message) => {
    const t = await orchestrator();
    const a = await agentUp();
    await catalog(t);
    await onlineHost(t, 'host-a', a, 4096);
    const res = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', ...values } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.message).toContain(message);
    expect((await t.call('GET', '/api/v1/instances')).body.instances).toEqual([]);
  });
});
