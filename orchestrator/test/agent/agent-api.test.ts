// The agent API end to end through Fastify inject, against the real Docker
// engine: create (labels, limits, mount, port, env, network, hardening),
// idempotent retry, concurrent port choice, power actions, logs bounds,
// delete, cleanup, conflicts, auth, validation and request-id logging.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestAgent,
  randomPortRange,
  removeNetwork,
  startFakeOrchestrator,
  type FakeOrchestrator,
  type TestAgent,
} from '../support/agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { busyboxImage, imageTag } from '../support/images.js';
import type { LayerRef } from '../../src/agent/contracts.js';
import type { PortProbe } from '../../src/agent/port-allocator.js';
import type { PortRange } from '../../src/shared/config.js';

const RUN = uniqueId('agent-api');
const TEST_LABEL = { 'endercloud.test-run': RUN };
const NETWORK = `ec-${RUN}`;
const IMAGE = imageTag(busyboxImage);
const SLEEP = ['sh', '-c', 'echo started $ENDERCLOUD_INSTANCE_ID; exec sleep 3600'];

let orch: FakeOrchestrator;
let agent: TestAgent;
let layerA: LayerRef;
let layerB: LayerRef;
const agents: TestAgent[] = [];
const agentIds: string[] = [];
const listeners: Server[] = [];

async function newAgent(suffix: string, range: PortRange, token?: string, probe?: PortProbe): Promise<TestAgent> {
  const agentId = `${RUN}-${suffix}`;
  const a = await createTestAgent({
    agentId,
    orchestratorUrl: orch.url,
    portRange: range,
    network: NETWORK,
    leaderEpoch: 1,
    ...(token ? { token } : {}),
    ...(probe ? { probe } : {}),
  });
  agents.push(a);
  agentIds.push(agentId);
  return a;
}

function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { groupId: 'lobby', variantId: 'v1', image: IMAGE, layers: [layerA], resources: { memoryMb: 64 }, command: SLEEP, ...overrides };
}

function put(a: TestAgent, id: string, payload: Record<string, unknown>, headers: Record<string, string> = {}) {
  return a.app.inject({ method: 'PUT', url: `/api/v1/instances/${id}`, payload, headers });
}

async function listenOn(port: number): Promise<void> {
  const s = createServer();
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, '127.0.0.1', resolve);
  });
  listeners.push(s);
}

/** A container that is not the agent's: labelled only for this file's cleanup. */
async function foreignContainer(name: string, labels: Record<string, string>): Promise<string> {
  const c = await docker().createContainer({ name, Image: IMAGE, Cmd: ['sleep', '3600'], Labels: { ...labels, ...TEST_LABEL } });
  return c.id;
}

beforeAll(async () => {
  orch = await startFakeOrchestrator();
  layerA = await orch.addLayer('base', {
    'server.properties': { content: 'motd=base\n' },
    'start.sh': { content: '#!/bin/sh\necho hi\n', mode: 0o755 },
    'variant.yml': { content: 'name: base\n' },
  });
  layerB = await orch.addLayer('extra', { 'server.properties': { content: 'motd=extra\n' }, 'plugins/p.jar': { content: 'jar' } });
  agent = await newAgent('main', randomPortRange(60));
});

afterAll(async () => {
  for (const id of agentIds) await removeContainersByLabel({ 'orchestrator.host': id });
  await removeContainersByLabel(TEST_LABEL);
  await Promise.all(listeners.map((s) => new Promise((r) => s.close(r))));
  for (const a of agents) await a.close();
  await removeNetwork(NETWORK);
  await orch?.close();
});

describe('PUT /api/v1/instances/:id', () => {
  it('creates a running container with the ownership labels, limits, /data mount, port, env order, network and hardening', async () => {
    const res = await put(
      agent,
      'i-create',
      body({
        layers: [layerA, layerB],
        sessionId: 'match-1',
        resources: { memoryMb: 96, cpus: 0.5 },
        env: { FIRST: '1', ENDERCLOUD_INSTANCE_ID: 'spoofed', SECOND: '2' },
      }),
    );
    expect(res.statusCode).toBe(200);
    const out = res.json();
    expect(out).toMatchObject({ instanceId: 'i-create', containerName: 'endercloud-v1-i-create', state: 'running' });
    expect(out.endpoint).toBe(`127.0.0.1:${out.hostPort}`);

    const info = await docker().getContainer(out.containerId).inspect();
    expect(info.Name).toBe('/endercloud-v1-i-create');
    expect(info.Config.Labels).toMatchObject({
      'orchestrator.managed': 'true',
      'orchestrator.host': `${RUN}-main`,
      'orchestrator.instance': 'i-create',
      'orchestrator.group': 'lobby',
      'orchestrator.variant': 'v1',
      'orchestrator.session': 'match-1',
      'orchestrator.host-port': String(out.hostPort),
    });
    expect(info.HostConfig.Memory).toBe(96 * 1024 * 1024);
    expect(info.HostConfig.NanoCpus).toBe(500_000_000);
    expect(info.HostConfig.RestartPolicy?.Name).toBe('no');
    expect(info.HostConfig.PortBindings).toEqual({ '25565/tcp': [{ HostIp: '127.0.0.1', HostPort: String(out.hostPort) }] });
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual([NETWORK]);
    const dataMount = info.Mounts.find((m) => m.Destination === '/data');
    expect(dataMount?.Source).toBe(join(agent.runtimeDirectory, 'instances', 'i-create'));
    expect(dataMount?.RW).toBe(true);
    expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    expect(info.HostConfig.CapAdd ?? []).toEqual([]);
    expect(info.HostConfig.ReadonlyRootfs).toBe(true);
    expect(info.HostConfig.PidsLimit).toBe(512);
    expect(Object.keys(info.HostConfig.Tmpfs ?? {})).toEqual(['/tmp']);
    expect(info.HostConfig.LogConfig?.Type).toBe('json-file');

    const env = info.Config.Env;
    const at = (entry: string) => env.indexOf(entry);
    expect(at('FIRST=1')).toBeGreaterThanOrEqual(0);
    expect(at('FIRST=1')).toBeLessThan(at('SECOND=2'));
    expect(at('SECOND=2')).toBeLessThan(at('ENDERCLOUD_INSTANCE_ID=i-create'));
    expect(at(`ENDERCLOUD_ORCHESTRATOR_URL=${orch.url}`)).toBeGreaterThan(at('SECOND=2'));
    expect(env.some((e) => e === 'ENDERCLOUD_INSTANCE_ID=spoofed')).toBe(false);

    // Materialized: later layers win, variant.yml removed, executable bits kept.
    const dir = join(agent.runtimeDirectory, 'instances', 'i-create');
    expect(readFileSync(join(dir, 'server.properties'), 'utf8')).toBe('motd=extra\n');
    expect(existsSync(join(dir, 'variant.yml'))).toBe(false);
    expect(statSync(join(dir, 'start.sh')).mode & 0o111).not.toBe(0);
    expect(existsSync(join(dir, 'plugins', 'p.jar'))).toBe(true);
  });

  it('sets no CPU quota when cpus is not given', async () => {
    const res = await put(agent, 'i-nocpu', body());
    expect(res.statusCode).toBe(200);
    const info = await docker().getContainer(res.json().containerId).inspect();
    expect(info.HostConfig.NanoCpus ?? 0).toBe(0);
    expect(info.HostConfig.CpuQuota ?? 0).toBe(0);
  });

  it('a retried create returns the same container and endpoint, and starts it again if it stopped', async () => {
    const first = (await put(agent, 'i-retry', body())).json();
    const again = await put(agent, 'i-retry', body());
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({
      containerId: first.containerId,
      hostPort: first.hostPort,
      endpoint: first.endpoint,
      state: 'running',
    });
    await docker().getContainer(first.containerId).kill();
    const restarted = (await put(agent, 'i-retry', body())).json();
    expect(restarted).toMatchObject({ containerId: first.containerId, hostPort: first.hostPort, state: 'running' });
    const all = await docker().listContainers({
      all: true,
      filters: { label: ['orchestrator.instance=i-retry', `orchestrator.host=${RUN}-main`] },
    });
    expect(all).toHaveLength(1);
  });

  it('20 concurrent creates get 20 distinct ports and share one layer download', async () => {
    const layer = await orch.addLayer('shared', { 'a.txt': { content: 'shared' } });
    const ids = Array.from({ length: 20 }, (_, i) => `i-par-${i}`);
    const results = await Promise.all(ids.map((id) => put(agent, id, body({ layers: [layer] }))));
    for (const r of results) expect(r.statusCode, r.body).toBe(200);
    const ports = results.map((r) => r.json().hostPort as number);
    expect(new Set(ports).size).toBe(20);
    expect(orch.downloads.get('shared')).toBe(1);
    // Delete them again: the container and its runtime directory go.
    const deleted = await Promise.all(ids.map((id) => agent.app.inject({ method: 'DELETE', url: `/api/v1/instances/${id}` })));
    for (const d of deleted) expect(d.json()).toMatchObject({ containerRemoved: true, directoryRemoved: true });
    for (const id of ids) expect(existsSync(join(agent.runtimeDirectory, 'instances', id))).toBe(false);
  });

  it('refuses a container name held by an unmanaged container with 409 INSTANCE_CONFLICT and leaves it alone', async () => {
    const foreignId = await foreignContainer('endercloud-v1-i-taken', {});
    const res = await put(agent, 'i-taken', body());
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('INSTANCE_CONFLICT');
    const info = await docker().getContainer(foreignId).inspect();
    expect(info.State.Status).toBe('created');
    expect(existsSync(join(agent.runtimeDirectory, 'instances', 'i-taken'))).toBe(false);
  });

  it('undoes its work when the image cannot be pulled: no container, no runtime directory', async () => {
    const res = await put(agent, 'i-noimage', body({ image: '127.0.0.1:9/endercloud/missing:1' }));
    expect(res.statusCode).toBe(502);
    expect(res.json().error.code).toBe('IMAGE_PULL_FAILED');
    // A refused registry is final: the answer says so, and the orchestrator does not retry it.
    expect(res.json().error.retryable).toBe(false);
    expect(existsSync(join(agent.runtimeDirectory, 'instances', 'i-noimage'))).toBe(false);
    const left = await docker().listContainers({ all: true, filters: { label: ['orchestrator.instance=i-noimage'] } });
    expect(left).toHaveLength(0);
  });

  it('a layer whose archive does not match its checksum is refused with nothing left behind', async () => {
    const good = await orch.addLayer('tampered', { 'x.txt': { content: 'original' } });
    const other = await orch.addLayer('tampered-source', { 'x.txt': { content: 'evil' } });
    const bytes = Buffer.from(
      await (await fetch(`${orch.url}/api/v1/template-layers/tampered-source/archive?checksum=${other.checksum}`)).arrayBuffer(),
    );
    orch.overrideArchive('tampered', bytes);
    const res = await put(agent, 'i-tampered', body({ layers: [good] }));
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('CHECKSUM_MISMATCH');
    expect(existsSync(join(agent.runtimeDirectory, 'instances', 'i-tampered'))).toBe(false);
    expect(existsSync(join(agent.cacheDirectory, 'tampered', good.checksum))).toBe(false);
  });
});

describe('ports', () => {
  it('skips a port held by a host listener, and names the range when it is exhausted', async () => {
    const range = randomPortRange(2);
    const small = await newAgent('small', range);
    await listenOn(range.first);
    const first = await put(small, 'i-small-1', body());
    expect(first.statusCode).toBe(200);
    expect(first.json().hostPort).toBe(range.last);
    const second = await put(small, 'i-small-2', body());
    expect(second.statusCode).toBe(503);
    expect(second.json().error).toMatchObject({
      code: 'PORT_RANGE_EXHAUSTED',
      message: expect.stringContaining(`${range.first}-${range.last}`),
    });
    expect(existsSync(join(small.runtimeDirectory, 'instances', 'i-small-2'))).toBe(false);
  });
});

describe('ports when the bind probe is blind', () => {
  it('moves to the next port when the start fails because a host listener holds the chosen one', async () => {
    const range = randomPortRange(3);
    const blind = await newAgent('blind', range, undefined, async () => true);
    await listenOn(range.first);
    const res = await put(blind, 'i-blind', body());
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().hostPort).toBe(range.first + 1);
    const all = await docker().listContainers({ all: true, filters: { label: ['orchestrator.instance=i-blind'] } });
    expect(all).toHaveLength(1);
  });
});

describe('power actions, inspect and logs', () => {
  it('pause, unpause, stop and start change the container state; inspect shows exit details', async () => {
    const created = (await put(agent, 'i-power', body())).json();
    const act = async (action: string, payload?: Record<string, unknown>) => {
      const r = await agent.app.inject({ method: 'POST', url: `/api/v1/instances/i-power/${action}`, ...(payload ? { payload } : {}) });
      expect(r.statusCode, r.body).toBe(200);
      return r.json();
    };
    expect((await act('pause')).state).toBe('paused');
    expect((await docker().getContainer(created.containerId).inspect()).State.Paused).toBe(true);
    const refused = await agent.app.inject({ method: 'POST', url: '/api/v1/instances/i-power/start' });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.code).toBe('INVALID_TRANSITION');
    expect((await act('unpause')).state).toBe('running');
    const t0 = Date.now();
    expect((await act('stop', { timeoutSeconds: 1 })).state).toBe('exited');
    expect(Date.now() - t0).toBeLessThan(15_000);
    const inspected = (await agent.app.inject({ method: 'GET', url: '/api/v1/instances/i-power' })).json();
    expect(inspected).toMatchObject({
      instanceId: 'i-power',
      state: 'exited',
      exitCode: 137,
      oomKilled: false,
      groupId: 'lobby',
      variantId: 'v1',
    });
    expect(inspected.finishedAt).not.toBeNull();
    expect((await act('start')).state).toBe('running');
    // A stop while paused still works (unpause first, then the graceful signal).
    await act('pause');
    expect((await act('stop', { timeoutSeconds: 0 })).state).toBe('exited');
  });

  it("unpause of a container it paused goes by the container's id; when that container changed meanwhile, the checked path answers", async () => {
    const created = (await put(agent, 'i-thaw', body())).json();
    const act = async (action: string) => agent.app.inject({ method: 'POST', url: `/api/v1/instances/i-thaw/${action}` });
    expect((await act('pause')).json().state).toBe('paused');
    const fast = await act('unpause');
    expect(fast.json()).toMatchObject({ state: 'running', containerId: created.containerId, hostPort: created.hostPort });
    expect((await docker().getContainer(created.containerId).inspect()).State.Running).toBe(true);
    // Thawed outside the agent after its pause: the id's unpause is refused (not paused), the checked path sees it running.
    expect((await act('pause')).json().state).toBe('paused');
    await docker().getContainer(created.containerId).unpause();
    const outside = await act('unpause');
    expect(outside.statusCode, outside.body).toBe(200);
    expect(outside.json().state).toBe('running');
    // Removed outside the agent after its pause: no container, as without the fast path.
    expect((await act('pause')).json().state).toBe('paused');
    await docker().getContainer(created.containerId).remove({ force: true });
    const gone = await act('unpause');
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error.code).toBe('INSTANCE_NOT_FOUND');
  });

  it("GET /instances lists only this host's managed containers", async () => {
    const other = await newAgent('inv', randomPortRange(5));
    await put(other, 'i-other-inv', body());
    const list = (await agent.app.inject({ method: 'GET', url: '/api/v1/instances' })).json().instances as {
      instanceId: string;
      endpoint: string;
      hostPort: number;
    }[];
    const ids = list.map((i) => i.instanceId);
    expect(ids).toContain('i-create');
    expect(ids).not.toContain('i-other-inv');
    const entry = list.find((i) => i.instanceId === 'i-create')!;
    expect(entry).toMatchObject({ groupId: 'lobby', variantId: 'v1', sessionId: 'match-1', state: 'running' });
    expect(entry.endpoint).toBe(`127.0.0.1:${entry.hostPort}`);
    const otherList = (await other.app.inject({ method: 'GET', url: '/api/v1/instances' })).json().instances as { instanceId: string }[];
    expect(otherList.map((i) => i.instanceId)).toEqual(['i-other-inv']);
  });

  it('logs return the last N lines, at most 1000 lines and 1 MiB', async () => {
    // 1200 lines of ~2 KiB: the last 1000 lines would be ~2 MiB.
    const command = [
      'sh',
      '-c',
      'x=$(head -c 2000 /dev/zero | tr "\\000" x); i=0; while [ $i -lt 1200 ]; do echo "$i $x"; i=$((i+1)); done; echo done-writing; exec sleep 3600',
    ];
    await put(agent, 'i-logs', body({ command }));
    const deadline = Date.now() + 20_000;
    let tail = '';
    while (Date.now() < deadline) {
      tail = (await agent.app.inject({ method: 'GET', url: '/api/v1/instances/i-logs/logs?tail=2' })).body;
      if (tail.includes('done-writing')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(tail.trimEnd().split('\n')).toHaveLength(2);
    expect(tail).toMatch(/^1199 x+\ndone-writing\n$/);
    const big = await agent.app.inject({ method: 'GET', url: '/api/v1/instances/i-logs/logs?tail=1000' });
    expect(big.statusCode).toBe(200);
    expect(big.rawPayload.length).toBeLessThanOrEqual(1024 * 1024);
    expect(big.rawPayload.length).toBeGreaterThan(900 * 1024);
    expect(big.body.endsWith('done-writing\n')).toBe(true);
    expect(/^\d+ x+$/.test(big.body.split('\n')[0]!)).toBe(true);
    const tooMany = await agent.app.inject({ method: 'GET', url: '/api/v1/instances/i-logs/logs?tail=1001' });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().error).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringContaining('tail') });
  });

  it('unknown instances are 404 INSTANCE_NOT_FOUND and bad ids 400 INVALID_ID', async () => {
    const missing = await agent.app.inject({ method: 'GET', url: '/api/v1/instances/no-such' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('INSTANCE_NOT_FOUND');
    for (const bad of ['a%2Fb', 'a%5Cb', '.hidden', '-x']) {
      const r = await agent.app.inject({ method: 'GET', url: `/api/v1/instances/${bad}` });
      expect(r.statusCode, bad).toBe(400);
      expect(r.json().error.code).toBe('INVALID_ID');
    }
    const badPut = await put(agent, 'a%2F..%2Fb', body());
    expect(badPut.statusCode).toBe(400);
  });

  it('DELETE removes the container and its runtime directory, and is safe to repeat', async () => {
    const created = (await put(agent, 'i-del', body())).json();
    const dir = join(agent.runtimeDirectory, 'instances', 'i-del');
    expect(existsSync(dir)).toBe(true);
    const del = await agent.app.inject({ method: 'DELETE', url: '/api/v1/instances/i-del' });
    expect(del.json()).toEqual({ instanceId: 'i-del', scope: 'all', containerRemoved: true, directoryRemoved: true, pathsRemoved: [] });
    expect(existsSync(dir)).toBe(false);
    await expect(docker().getContainer(created.containerId).inspect()).rejects.toMatchObject({ statusCode: 404 });
    const again = await agent.app.inject({ method: 'DELETE', url: '/api/v1/instances/i-del' });
    expect(again.json()).toEqual({ instanceId: 'i-del', scope: 'all', containerRemoved: false, directoryRemoved: false, pathsRemoved: [] });
  });
});

describe('POST /api/v1/cleanup', () => {
  it("removes this host's orphans and never touches another host's or an unlabelled container", async () => {
    await put(agent, 'i-orphan', body());
    const otherHost = await foreignContainer('endercloud-v1-i-foreign', {
      'orchestrator.managed': 'true',
      'orchestrator.host': `${RUN}-elsewhere`,
      'orchestrator.instance': 'i-foreign',
    });
    const unlabelled = await foreignContainer(`endercloud-v1-i-plain-${RUN}`, {});
    const res = await agent.app.inject({
      method: 'POST',
      url: '/api/v1/cleanup',
      payload: { instanceIds: ['i-orphan', 'i-foreign', `i-plain-${RUN}`, '../etc'] },
    });
    expect(res.statusCode).toBe(200);
    const report = res.json();
    expect(report.removed).toEqual(['i-orphan']);
    expect(report.skipped).toEqual(
      expect.arrayContaining([
        { instanceId: 'i-foreign', reason: `managed by host ${RUN}-elsewhere` },
        { instanceId: '../etc', reason: 'invalid instance id' },
      ]),
    );
    expect(report.notFound).toEqual([`i-plain-${RUN}`]);
    expect((await docker().getContainer(otherHost).inspect()).Id).toBe(otherHost);
    expect((await docker().getContainer(unlabelled).inspect()).Id).toBe(unlabelled);
    expect(existsSync(join(agent.runtimeDirectory, 'instances', 'i-orphan'))).toBe(false);
  });
});

describe('HTTP edges', () => {
  it('requires the bearer token when one is set (401 without or with a wrong one)', async () => {
    const secured = await newAgent('auth', randomPortRange(3), 'tok-' + RUN);
    const none = await secured.app.inject({ method: 'GET', url: '/api/v1/health' });
    expect(none.statusCode).toBe(401);
    expect(none.json().error.code).toBe('UNAUTHORIZED');
    const wrong = await secured.app.inject({ method: 'GET', url: '/api/v1/instances', headers: { authorization: 'Bearer nope' } });
    expect(wrong.statusCode).toBe(401);
    const prefix = await secured.app.inject({ method: 'GET', url: '/api/v1/instances', headers: { authorization: `Bearer tok-${RUN}x` } });
    expect(prefix.statusCode).toBe(401);
    const ok = await secured.app.inject({ method: 'GET', url: '/api/v1/health', headers: { authorization: `Bearer tok-${RUN}` } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ status: 'ok', agentId: `${RUN}-auth`, engine: 'reachable' });
    expect(JSON.stringify(secured.logLines)).not.toContain(`tok-${RUN}`);
  });

  it.each([
    [{ image: undefined }, 'body/image'],
    [{ resources: { memoryMb: 'lots' } }, 'body/resources/memoryMb'],
    [{ resources: { memoryMb: 64, cpus: 0 } }, 'body/resources/cpus'],
    [{ layers: [{ id: 'base', checksum: 'abc' }] }, 'body/layers/0/checksum'],
    [{ env: { 'BAD-NAME': 'x' } }, 'body/env'],
    [{ surprise: true }, 'body/surprise'],
    [{ groupId: '../x' }, 'body/groupId'],
    [{ containerPort: 70000 }, 'body/containerPort'],
  ])('a bad create body is 400 VALIDATION_FAILED naming the field (%j)', async (overrides, field) => {
    const payload = body(overrides);
    for (const [k, v] of Object.entries(overrides)) if (v === undefined) delete payload[k];
    const res = await put(agent, 'i-invalid', payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_FAILED');
    expect(res.json().error.message).toContain(field);
    expect(existsSync(join(agent.runtimeDirectory, 'instances', 'i-invalid'))).toBe(false);
  });

  it('a bad stop body and a bad cleanup body are 400 naming the field', async () => {
    const stop = await agent.app.inject({ method: 'POST', url: '/api/v1/instances/i-create/stop', payload: { timeoutSeconds: -1 } });
    expect(stop.statusCode).toBe(400);
    expect(stop.json().error.message).toContain('timeoutSeconds');
    const cleanup = await agent.app.inject({ method: 'POST', url: '/api/v1/cleanup', payload: { ids: [] } });
    expect(cleanup.statusCode).toBe(400);
    expect(cleanup.json().error.message).toContain('instanceIds');
  });

  it('echoes x-request-id and puts it and x-command-id in every log line of the request', async () => {
    const res = await put(agent, 'i-traced', body(), { 'x-request-id': 'req-trace-1', 'x-command-id': 'cmd-77' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe('req-trace-1');
    const lines = agent.logLines.filter((l) => l.requestId === 'req-trace-1');
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const l of lines) expect(l.commandId).toBe('cmd-77');
    expect(lines.map((l) => l.msg)).toContain('instance created');
    const generated = await agent.app.inject({ method: 'GET', url: '/api/v1/health' });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const unknown = await agent.app.inject({ method: 'GET', url: '/api/v1/nothing', headers: { 'x-request-id': 'req-404' } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['x-request-id']).toBe('req-404');
    expect(unknown.json().error.code).toBe('NOT_FOUND');
  });
});
