// Graceful stop paths, RCON commands and container replacement through the
// agent API, against the real Docker engine and the Minecraft-protocol test
// server: RCON stop saves the world, a server ignoring SIGTERM is killed at the
// timeout, and a replace keeps the data, the port and the stopped state.
import { existsSync, readFileSync } from 'node:fs';
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
import { ensureImage } from '../support/images.js';
import { MC_RCON_PORT, mcServerImage, waitForStatus } from '../support/mc-server.js';

const RUN = uniqueId('agent-stop');
const NETWORK = `ec-${RUN}`;
const AGENT_ID = `${RUN}-a`;
const PASSWORD = `rcon-secret-${RUN}`;
const TAG_REPO = `endercloud-test/mc-replace-${RUN}`;

const PORTS = randomPortRange(20);

let orch: FakeOrchestrator;
let agent: TestAgent;
let mcImage: string;

function createBody(overrides: Record<string, unknown> = {}, env: Record<string, string> = {}): Record<string, unknown> {
  return {
    groupId: 'survival',
    variantId: 'v1',
    image: mcImage,
    layers: [],
    resources: { memoryMb: 256 },
    env: { RCON_PASSWORD: PASSWORD, STOP_DELAY_SECONDS: '0', ...env },
    ...overrides,
  };
}

/** A JSON answer of the agent API (an error answer carries `error`). */
interface Answer {
  [key: string]: unknown;
  error: { code: string; message: string };
}

async function callOn(on: TestAgent, method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: Record<string, unknown>) {
  const res = await on.app.inject({ method, url: `/api/v1${url}`, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as Answer };
}

const call = (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: Record<string, unknown>) =>
  callOn(agent, method, url, payload);

/** A listener outside the agent on 127.0.0.1:port (what takes a sleeping world's port). */
async function squat(port: number): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  return server;
}

const unsquat = (server: Server) => new Promise((r) => server.close(r));

async function createReady(id: string, overrides: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  const created = await call('PUT', `/instances/${id}`, createBody(overrides, env));
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  await waitForStatus('127.0.0.1', created.body.hostPort as number, (s) => s.max > 0, 20_000);
  return created.body;
}

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
const dataDir = (id: string) => join(agent.runtimeDirectory, 'instances', id);

beforeAll(async () => {
  mcImage = await ensureImage(mcServerImage);
  // The same image under two tags, so a replace can change the tag.
  await docker().getImage(mcImage).tag({ repo: TAG_REPO, tag: 'a' });
  await docker().getImage(mcImage).tag({ repo: TAG_REPO, tag: 'b' });
  orch = await startFakeOrchestrator();
  agent = await createTestAgent({ agentId: AGENT_ID, orchestratorUrl: orch.url, portRange: PORTS, network: NETWORK, leaderEpoch: 1 });
});

afterAll(async () => {
  await removeContainersByLabel({ 'orchestrator.host': AGENT_ID });
  for (const tag of ['a', 'b'])
    await docker()
      .getImage(`${TAG_REPO}:${tag}`)
      .remove()
      .catch(() => undefined);
  await agent?.close();
  await removeNetwork(NETWORK);
  await orch?.close();
});

describe('RCON and graceful stop', () => {
  it('runs RCON commands on the container network, refuses a wrong password, and an RCON stop saves the world and exits 0', async () => {
    await createReady('s-rcon');
    const list = await call('POST', '/instances/s-rcon/rcon', { port: MC_RCON_PORT, password: PASSWORD, command: 'list' });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.response).toMatch(/There are 0 of a max of 20 players online/);
    const saved = await call('POST', '/instances/s-rcon/rcon', { port: MC_RCON_PORT, password: PASSWORD, command: 'save-all' });
    expect(saved.body.response).toMatch(/Saved the game/);
    const wrong = await call('POST', '/instances/s-rcon/rcon', { port: MC_RCON_PORT, password: 'nope', command: 'list' });
    expect(wrong.status).toBe(502);
    expect(wrong.body.error.code).toBe('RCON_AUTH_FAILED');

    const stopped = await call('POST', '/instances/s-rcon/stop', { timeoutSeconds: 20, rcon: { port: MC_RCON_PORT, password: PASSWORD } });
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(200);
    expect(stopped.body).toMatchObject({ state: 'exited', method: 'rcon', killed: false, exitCode: 0 });
    // Graceful: the world was saved and the lock released.
    expect(Number(readJson(join(dataDir('s-rcon'), 'level.json')).saves)).toBeGreaterThanOrEqual(2);
    expect(existsSync(join(dataDir('s-rcon'), 'session.lock'))).toBe(false);
    const logs = (await call('GET', '/instances/s-rcon')).body;
    expect(logs).toMatchObject({ state: 'exited', exitCode: 0, oomKilled: false });

    const notRunning = await call('POST', '/instances/s-rcon/rcon', { port: MC_RCON_PORT, password: PASSWORD, command: 'list' });
    expect(notRunning.status).toBe(409);
    expect(notRunning.body.error.code).toBe('INSTANCE_NOT_RUNNING');
    const again = await call('POST', '/instances/s-rcon/stop', {});
    expect(again.body).toMatchObject({ state: 'exited', method: 'none', killed: false, exitCode: 0 });
    // The password never reaches a log line.
    expect(JSON.stringify(agent.logLines)).not.toContain(PASSWORD);
  });

  it('kills a server that ignores SIGTERM at the timeout (2 s) and says so', async () => {
    await createReady('s-stubborn', {}, { IGNORE_SIGTERM: 'true' });
    const t0 = Date.now();
    const stopped = await call('POST', '/instances/s-stubborn/stop', { timeoutSeconds: 2 });
    const elapsed = Date.now() - t0;
    expect(stopped.body).toMatchObject({ state: 'exited', method: 'signal', killed: true, exitCode: 137 });
    expect(elapsed).toBeGreaterThanOrEqual(1900);
    expect(elapsed).toBeLessThan(10_000);
    // Killed, not saved: the lock stays behind.
    expect(existsSync(join(dataDir('s-stubborn'), 'session.lock'))).toBe(true);
  });
});

describe('POST /instances/:id/replace', () => {
  it('keeps the data and host port, honours a new tag, env and labels, and is idempotent under retry', async () => {
    const first = await createReady('s-repl', { image: `${TAG_REPO}:a`, labels: { team: 'red' } });
    const seed = readJson(join(dataDir('s-repl'), 'level.json')).seed;
    const replaceBody = createBody(
      {
        image: `${TAG_REPO}:b`,
        labels: { team: 'blue' },
        start: true,
        layers: undefined,
        stop: { timeoutSeconds: 10, rcon: { port: MC_RCON_PORT, password: 'wrong' } },
      },
      { MOTD: 'replaced' },
    );
    delete replaceBody.layers;
    const replaced = await call('POST', '/instances/s-repl/replace', replaceBody);
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    // RCON refused the wrong password, so the old server got the signal and still saved.
    expect(replaced.body).toMatchObject({
      replaced: true,
      previousContainerId: first.containerId,
      hostPort: first.hostPort,
      state: 'running',
      stop: { method: 'signal', killed: false, exitCode: 0 },
    });
    expect(replaced.body.containerId).not.toBe(first.containerId);
    await expect(
      docker()
        .getContainer(first.containerId as string)
        .inspect(),
    ).rejects.toMatchObject({ statusCode: 404 });

    const status = await waitForStatus('127.0.0.1', first.hostPort as number, (s) => s.motd === 'replaced', 20_000);
    expect(status.max).toBe(20);
    // Same runtime directory: the world created by the first container is still there.
    expect(readJson(join(dataDir('s-repl'), 'level.json')).seed).toBe(seed);
    const inspected = (await call('GET', '/instances/s-repl')).body;
    expect(inspected).toMatchObject({ image: `${TAG_REPO}:b`, labels: { team: 'blue' }, user: null, state: 'running' });

    const retried = await call('POST', '/instances/s-repl/replace', replaceBody);
    expect(retried.body).toMatchObject({ replaced: false, containerId: replaced.body.containerId, hostPort: first.hostPort, stop: null });

    const userChange = await call('POST', '/instances/s-repl/replace', { ...replaceBody, user: '1000:1000' });
    expect(userChange.status).toBe(409);
    expect(userChange.body.error.code).toBe('IMMUTABLE');
    const reserved = await call('POST', '/instances/s-repl/replace', { ...replaceBody, labels: { 'orchestrator.host': 'evil' } });
    expect(reserved.status).toBe(400);
    const all = await docker().listContainers({
      all: true,
      filters: { label: [`orchestrator.host=${AGENT_ID}`, 'orchestrator.instance=s-repl'] },
    });
    expect(all.map((c) => c.Id)).toEqual([replaced.body.containerId]);
  });

  it('leaves a stopped instance stopped with start:false, on the same data', async () => {
    const first = await createReady('s-cold');
    await call('POST', '/instances/s-cold/stop', { timeoutSeconds: 10 });
    const body = createBody({ start: false }, { MOTD: 'cold' });
    delete body.layers;
    const replaced = await call('POST', '/instances/s-cold/replace', body);
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body).toMatchObject({
      replaced: true,
      state: 'created',
      hostPort: first.hostPort,
      stop: { method: 'none', killed: false },
    });
    const info = await docker()
      .getContainer(replaced.body.containerId as string)
      .inspect();
    expect(info.State.Running).toBe(false);
    expect(info.Config.Env).toContain('MOTD=cold');
    expect(existsSync(join(dataDir('s-cold'), 'level.json'))).toBe(true);

    const missing = await call('POST', '/instances/s-nothing/replace', body);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('INSTANCE_NOT_FOUND');
  });

  it('a start whose host port was taken while it was stopped answers 409 HOST_PORT_TAKEN; a replace with newHostPort moves it to another port of the range, on the same data', async () => {
    const first = await createReady('s-moved');
    const seed = readJson(join(dataDir('s-moved'), 'level.json')).seed;
    await call('POST', '/instances/s-moved/stop', { timeoutSeconds: 10 });
    // Something outside the agent listens on the port while the world sleeps.
    const squatter = createServer();
    await new Promise<void>((resolve, reject) => squatter.once('error', reject).listen(first.hostPort as number, '127.0.0.1', resolve));
    try {
      const start = await call('POST', '/instances/s-moved/start');
      expect(start.status, JSON.stringify(start.body)).toBe(409);
      expect(start.body.error.code).toBe('HOST_PORT_TAKEN');
      const body = createBody({ start: true, newHostPort: true });
      delete body.layers;
      const moved = await call('POST', '/instances/s-moved/replace', body);
      expect(moved.status, JSON.stringify(moved.body)).toBe(200);
      expect(moved.body).toMatchObject({ replaced: true, previousContainerId: first.containerId, state: 'running' });
      const port = moved.body.hostPort as number;
      expect(port).not.toBe(first.hostPort);
      expect(port).toBeGreaterThanOrEqual(PORTS.first);
      expect(port).toBeLessThanOrEqual(PORTS.last);
      await waitForStatus('127.0.0.1', port, (s) => s.max > 0, 20_000);
      expect(readJson(join(dataDir('s-moved'), 'level.json')).seed).toBe(seed);
      const all = await docker().listContainers({
        all: true,
        filters: { label: [`orchestrator.host=${AGENT_ID}`, 'orchestrator.instance=s-moved'] },
      });
      expect(all.map((c) => c.Id)).toEqual([moved.body.containerId]);
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  });

  describe('with no free port in the range', () => {
    /** An agent of its own on a 2-port range; both ports get taken by listeners outside it. */
    async function fullRange(suffix: string, probe?: () => Promise<boolean>) {
      const ports = randomPortRange(2);
      const small = await createTestAgent({
        agentId: `${RUN}-${suffix}`,
        orchestratorUrl: orch.url,
        portRange: ports,
        network: NETWORK,
        leaderEpoch: 1,
        ...(probe ? { probe } : {}),
      });
      return { ports, small, id: `${RUN}-${suffix}` };
    }

    async function containersOf(agentId: string, instanceId: string) {
      return docker().listContainers({
        all: true,
        filters: { label: [`orchestrator.host=${agentId}`, `orchestrator.instance=${instanceId}`] },
      });
    }

    it('a newHostPort replace keeps the old container and its data (503 PORT_RANGE_EXHAUSTED naming the port, the range and the host); once a port is free, the move succeeds', async () => {
      const { ports, small, id } = await fullRange('full');
      const squatters: Server[] = [];
      try {
        const created = await callOn(small, 'PUT', '/instances/s-full', createBody());
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        const oldPort = created.body.hostPort as number;
        const otherPort = oldPort === ports.first ? ports.last : ports.first;
        await waitForStatus('127.0.0.1', oldPort, (st) => st.max > 0, 20_000);
        const seed = readJson(join(small.runtimeDirectory, 'instances', 's-full', 'level.json')).seed;
        await callOn(small, 'POST', '/instances/s-full/stop', { timeoutSeconds: 10 });
        squatters.push(await squat(oldPort), await squat(otherPort));
        expect((await callOn(small, 'POST', '/instances/s-full/start')).body.error.code).toBe('HOST_PORT_TAKEN');

        const body = createBody({ start: true, newHostPort: true });
        delete body.layers;
        const refused = await callOn(small, 'POST', '/instances/s-full/replace', body);
        expect(refused.status, JSON.stringify(refused.body)).toBe(503);
        expect(refused.body.error.code).toBe('PORT_RANGE_EXHAUSTED');
        expect(refused.body.error.message).toContain(
          `host port ${oldPort} is taken and no other port of ${ports.first}-${ports.last} is free on host ${id}`,
        );
        expect((await containersOf(id, 's-full')).map((c) => c.Id)).toEqual([created.body.containerId]);
        expect(readJson(join(small.runtimeDirectory, 'instances', 's-full', 'level.json')).seed).toBe(seed);

        await unsquat(squatters.pop() as Server); // the other port is free again
        const moved = await callOn(small, 'POST', '/instances/s-full/replace', body);
        expect(moved.status, JSON.stringify(moved.body)).toBe(200);
        expect(moved.body).toMatchObject({
          replaced: true,
          previousContainerId: created.body.containerId,
          hostPort: otherPort,
          state: 'running',
        });
        await waitForStatus('127.0.0.1', otherPort, (st) => st.max > 0, 20_000);
        expect(readJson(join(small.runtimeDirectory, 'instances', 's-full', 'level.json')).seed).toBe(seed);
      } finally {
        for (const s of squatters) await unsquat(s);
        await removeContainersByLabel({ 'orchestrator.host': id });
        await small.close();
      }
    });

    it('a probe that cannot see the listeners (its own network namespace): every start fails after the old container is gone, so the container is re-created stopped on its old port with its data', async () => {
      const { ports, small, id } = await fullRange('blind', async () => true);
      const squatters: Server[] = [];
      try {
        const created = await callOn(small, 'PUT', '/instances/s-blind', createBody({ start: false }));
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        const oldPort = created.body.hostPort as number;
        squatters.push(await squat(ports.first), await squat(ports.last));
        const body = createBody({ start: true, newHostPort: true });
        delete body.layers;
        const refused = await callOn(small, 'POST', '/instances/s-blind/replace', body);
        expect(refused.status, JSON.stringify(refused.body)).toBe(503);
        expect(refused.body.error).toMatchObject({
          code: 'PORT_RANGE_EXHAUSTED',
          message: expect.stringContaining(`re-created stopped on port ${oldPort}`),
        });
        const left = await containersOf(id, 's-blind');
        expect(left).toHaveLength(1);
        expect(left[0]?.State).toBe('created');
        expect(left[0]?.Labels['orchestrator.host-port']).toBe(String(oldPort));
        expect(existsSync(join(small.runtimeDirectory, 'instances', 's-blind'))).toBe(true);

        await unsquat(squatters.shift() as Server);
        await unsquat(squatters.shift() as Server);
        const started = await callOn(small, 'POST', '/instances/s-blind/start');
        expect(started.status, JSON.stringify(started.body)).toBe(200);
        expect(started.body).toMatchObject({ hostPort: oldPort, state: 'running' });
      } finally {
        for (const s of squatters) await unsquat(s);
        await removeContainersByLabel({ 'orchestrator.host': id });
        await small.close();
      }
    });
  });
});
