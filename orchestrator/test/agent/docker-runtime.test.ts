// The Docker adapter against the real engine (error tagging, ports, networks,
// pulls from a real local registry) and the two-agent smoke test: two agents
// on real sockets, one daemon, disjoint port ranges, each blind to the other.
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerRuntime, boundLog, demuxLogs, withDefaultTag } from '../../src/agent/docker-runtime.js';
import { Heartbeater, readResources } from '../../src/agent/heartbeat.js';
import { realTimers } from '../../src/shared/timers.js';
import type { LayerRef } from '../../src/agent/contracts.js';
import { AppError } from '../../src/shared/errors.js';
import {
  createTestAgent,
  randomPortRange,
  removeNetwork,
  startFakeOrchestrator,
  type FakeOrchestrator,
  type TestAgent,
} from '../support/agent-harness.js';
import { DOCKER_SOCKET, docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { busyboxImage, imageTag } from '../support/images.js';
import { runtimeContract } from './runtime-contract.js';
import { startRegistry, type LocalRegistry } from '../support/registry.js';

const RUN = uniqueId('docker-rt');
const TEST_LABEL = { 'endercloud.test-run': RUN };
const NETWORK = `ec-${RUN}`;
const IMAGE = imageTag(busyboxImage);
const runtime = new DockerRuntime({ socketPath: DOCKER_SOCKET, network: NETWORK });

let orch: FakeOrchestrator;
let layer: LayerRef;
const agents: { id: string; agent: TestAgent }[] = [];
const heartbeaters: Heartbeater[] = [];
let registry: LocalRegistry | undefined;
const imagesToRemove: string[] = [];

beforeAll(async () => {
  orch = await startFakeOrchestrator();
  layer = await orch.addLayer('rt-base', { 'eula.txt': { content: 'eula=true\n' } });
});

afterAll(async () => {
  for (const h of heartbeaters) await h.stop();
  for (const { id } of agents) await removeContainersByLabel({ 'orchestrator.host': id });
  await removeContainersByLabel(TEST_LABEL);
  for (const { agent } of agents) await agent.close();
  for (const image of imagesToRemove)
    await docker()
      .getImage(image)
      .remove({ force: true })
      .catch(() => undefined);
  await removeNetwork(NETWORK);
  await removeNetwork(`${NETWORK}-race`);
  await registry?.stop();
  await orch?.close();
});

const contractPorts = randomPortRange(2);
runtimeContract('DockerRuntime (real engine)', () => ({
  runtime,
  image: IMAGE,
  command: ['sleep', '3600'],
  dataHostPath: tmpdir(),
  labels: TEST_LABEL,
  hostPorts: [contractPorts.first, contractPorts.last],
  name: (suffix) => `${RUN}-contract-${suffix}`,
}));

describe('DockerRuntime', () => {
  it('tags an unreachable engine as a retryable DOCKER_ERROR', async () => {
    const down = new DockerRuntime({ socketPath: '/nonexistent/docker.sock', network: NETWORK });
    const err = await down.ping().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'DOCKER_ERROR', retryable: true });
    await expect(down.list({})).rejects.toMatchObject({ retryable: true });
  });

  it('tags a missing image on create as a fatal error and a missing container as absent', async () => {
    const err = await runtime
      .create({
        name: `${RUN}-noimg`,
        image: 'endercloud-test/does-not-exist:1',
        env: [],
        labels: TEST_LABEL,
        dataHostPath: '/tmp',
        port: { containerPort: 1, hostPort: 1, hostIp: '127.0.0.1' },
      })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'NOT_FOUND', retryable: false });
    expect(await runtime.inspect(`${RUN}-nothing-here`)).toBeUndefined();
    await expect(runtime.remove(`${RUN}-nothing-here`)).resolves.toBeUndefined();
  });

  it("counts a created container's labelled host port as reserved even before it runs", async () => {
    await docker().createContainer({
      name: `${RUN}-promised`,
      Image: IMAGE,
      Cmd: ['true'],
      Labels: { ...TEST_LABEL, 'orchestrator.host-port': '45999' },
    });
    expect((await runtime.reservedHostPorts()).has(45999)).toBe(true);
  });

  it('creates a missing network once even under concurrent calls', async () => {
    const name = `${NETWORK}-race`;
    await Promise.all(Array.from({ length: 5 }, () => runtime.ensureNetwork(name)));
    const found = await docker().listNetworks({ filters: { name: [name] } });
    expect(found.filter((n) => n.Name === name)).toHaveLength(1);
  });

  it('demultiplexes Docker log frames and bounds logs at a line start', () => {
    const frame = (stream: number, text: string) => {
      const payload = Buffer.from(text);
      const header = Buffer.alloc(8);
      header[0] = stream;
      header.writeUInt32BE(payload.length, 4);
      return Buffer.concat([header, payload]);
    };
    expect(demuxLogs(Buffer.concat([frame(1, 'out\n'), frame(2, 'err\n')])).toString()).toBe('out\nerr\n');
    expect(demuxLogs(Buffer.from('raw tty text\n')).toString()).toBe('raw tty text\n');
    expect(boundLog(Buffer.from('aaaa\nbbbb\ncccc\n'), 8)).toBe('cccc\n');
    expect(withDefaultTag('busybox')).toBe('busybox:latest');
    expect(withDefaultTag('127.0.0.1:5000/x')).toBe('127.0.0.1:5000/x:latest');
    expect(withDefaultTag('127.0.0.1:5000/x:1')).toBe('127.0.0.1:5000/x:1');
  });

  it('pulls a missing image from a real local registry, reporting progress', async () => {
    registry = await startRegistry();
    const ref = `${registry.address}/endercloud/pulltest:${RUN}`;
    imagesToRemove.push(ref);
    const [repo, tag] = [ref.slice(0, ref.lastIndexOf(':')), ref.slice(ref.lastIndexOf(':') + 1)];
    await docker().getImage(IMAGE).tag({ repo, tag });
    const push = await docker()
      .getImage(ref)
      .push({ authconfig: { serveraddress: registry.address } });
    await new Promise((resolve, reject) =>
      docker().modem.followProgress(push, (err: Error | null, out: unknown) => (err ? reject(err) : resolve(out))),
    );
    await docker().getImage(ref).remove();
    const events: string[] = [];
    expect(await runtime.ensureImage(ref, (e) => events.push(e.status))).toEqual({ pulled: true });
    expect(events.length).toBeGreaterThan(0);
    expect((await docker().getImage(ref).inspect()).Id).toBeTruthy();
    expect(await runtime.ensureImage(ref)).toEqual({ pulled: false });
  });

  it('an agent create pulls a missing image and logs the pull', async () => {
    expect(registry).toBeDefined();
    const ref = `${registry!.address}/endercloud/pulltest:${RUN}`;
    await docker().getImage(ref).remove({ force: true });
    const id = `${RUN}-puller`;
    const agent = await createTestAgent({
      agentId: id,
      orchestratorUrl: orch.url,
      portRange: randomPortRange(10),
      network: NETWORK,
      leaderEpoch: 1,
    });
    agents.push({ id, agent });
    const res = await agent.app.inject({
      method: 'PUT',
      url: '/api/v1/instances/i-pulled',
      payload: { groupId: 'g', variantId: 'v', image: ref, layers: [layer], resources: { memoryMb: 32 }, command: ['sleep', '3600'] },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().state).toBe('running');
    const msgs = agent.logLines.map((l) => l.msg);
    expect(msgs).toContain('pulling image');
    expect(msgs).toContain('image pulled');
  });
});

describe('two agents on one Docker daemon', () => {
  it('each sees and removes only its own containers; ports stay in their own ranges; heartbeats follow listen', async () => {
    const both = randomPortRange(20);
    const ranges = [
      { first: both.first, last: both.first + 9 },
      { first: both.first + 10, last: both.last },
    ];
    const started: { id: string; agent: TestAgent; url: string; token: string }[] = [];
    for (const [i, range] of ranges.entries()) {
      const id = `${RUN}-smoke-${i}`;
      const token = `tok-${i}-${RUN}`;
      const agent = await createTestAgent({
        agentId: id,
        orchestratorUrl: orch.url,
        portRange: range,
        network: NETWORK,
        token,
        leaderEpoch: 1,
      });
      agents.push({ id, agent });
      await agent.app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(agent.app.server.address() as AddressInfo).port}`;
      const hb = new Heartbeater({
        orchestratorUrl: orch.url,
        agentId: id,
        token,
        intervalMs: 60_000,
        body: async () => ({
          controlUrl: url,
          gameAddress: '127.0.0.1',
          version: 'test',
          resources: await readResources(agent.runtimeDirectory),
          portRange: range,
          heartbeatIntervalMs: 60_000,
        }),
        fetch,
        timers: realTimers,
        now: () => Date.now(),
        logger: pino({ level: 'silent' }),
      });
      heartbeaters.push(hb);
      hb.start();
      started.push({ id, agent, url, token });
    }
    const call = async (i: number, method: string, path: string, payload?: unknown) => {
      const s = started[i]!;
      const res = await fetch(`${s.url}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${s.token}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
        ...(payload ? { body: JSON.stringify(payload) } : {}),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    const create = (i: number, instanceId: string) =>
      call(i, 'PUT', `/instances/${instanceId}`, {
        groupId: 'g',
        variantId: 'v',
        image: IMAGE,
        layers: [layer],
        resources: { memoryMb: 32 },
        command: ['sleep', '3600'],
      });

    const a = [await create(0, 'smoke-a1'), await create(0, 'smoke-a2')];
    const b = [await create(1, 'smoke-b1'), await create(1, 'smoke-b2')];
    for (const r of [...a, ...b]) expect(r.status).toBe(200);
    const inRange = (port: unknown, range: { first: number; last: number }) =>
      typeof port === 'number' && port >= range.first && port <= range.last;
    for (const r of a) expect(inRange(r.json.hostPort, ranges[0]!)).toBe(true);
    for (const r of b) expect(inRange(r.json.hostPort, ranges[1]!)).toBe(true);

    // The same instance id on the other agent collides on the container name: refused, A's container untouched.
    const clash = await create(1, 'smoke-a1');
    expect(clash.status).toBe(409);
    expect((clash.json.error as { code: string }).code).toBe('INSTANCE_CONFLICT');

    const inventory = async (i: number) =>
      ((await call(i, 'GET', '/instances')).json.instances as { instanceId: string }[]).map((x) => x.instanceId).sort();
    expect(await inventory(0)).toEqual(['smoke-a1', 'smoke-a2']);
    expect(await inventory(1)).toEqual(['smoke-b1', 'smoke-b2']);

    const cleanup = await call(0, 'POST', '/cleanup', { instanceIds: ['smoke-b1', 'smoke-b2'] });
    expect(cleanup.json.removed).toEqual([]);
    expect((cleanup.json.skipped as unknown[]).length).toBe(2);
    const del = await call(0, 'DELETE', '/instances/smoke-b1');
    expect(del.json.containerRemoved).toBe(false);
    expect((await call(0, 'GET', '/instances/smoke-b1')).status).toBe(404);
    expect(await inventory(1)).toEqual(['smoke-b1', 'smoke-b2']);
    for (const r of b)
      expect(
        (
          await docker()
            .getContainer(r.json.containerId as string)
            .inspect()
        ).State.Running,
      ).toBe(true);

    // Heartbeats: one per agent right after listen, and the agent already answered.
    const deadline = Date.now() + 5000;
    while (started.some((s) => !orch.heartbeats.some((h) => h.agentId === s.id)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    for (const s of started) {
      const beat = orch.heartbeats.find((h) => h.agentId === s.id);
      expect(beat?.agentAnswered).toBe(true);
      expect(beat?.body.controlUrl).toBe(s.url);
    }
  });
});
