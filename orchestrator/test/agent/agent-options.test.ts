// Create options (user, caller labels, stop signal and timeout, pull policy),
// what inspect and the inventory show of them, signal stops, scoped delete
// and cleanup that keeps an orphan's data — through the agent API against the
// real Docker engine (busybox containers, a real local registry for pulls).
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
import { startRegistry, type LocalRegistry } from '../support/registry.js';

const RUN = uniqueId('agent-opts');
const NETWORK = `ec-${RUN}`;
const AGENT_ID = `${RUN}-a`;
const IMAGE = imageTag(busyboxImage);
// PID 1 with traps: SIGINT exits 3, SIGUSR1 exits 4 (a shell as PID 1 ignores an untrapped SIGTERM).
const TRAPS = ['sh', '-c', "trap 'exit 3' INT; trap 'exit 4' USR1; while true; do sleep 0.1; done"];

let orch: FakeOrchestrator;
let agent: TestAgent;
let registry: LocalRegistry | undefined;
const pushed: string[] = [];

function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { groupId: 'lobby', variantId: 'v1', image: IMAGE, layers: [], resources: { memoryMb: 32 }, command: TRAPS, ...overrides };
}

/** A JSON answer of the agent API (an error answer carries `error`). */
interface Answer {
  [key: string]: unknown;
  error: { code: string; message: string };
}

async function call(method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: Record<string, unknown>) {
  const res = await agent.app.inject({ method, url: `/api/v1${url}`, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as Answer };
}

const dataDir = (id: string) => join(agent.runtimeDirectory, 'instances', id);

function seedFiles(id: string): void {
  mkdirSync(join(dataDir(id), 'world', 'region'), { recursive: true });
  mkdirSync(join(dataDir(id), 'logs'), { recursive: true });
  writeFileSync(join(dataDir(id), 'world', 'region', 'r.0.0.mca'), 'region');
  writeFileSync(join(dataDir(id), 'logs', 'latest.log'), 'log');
  writeFileSync(join(dataDir(id), 'server.properties'), 'motd=x\n');
}

beforeAll(async () => {
  orch = await startFakeOrchestrator();
  agent = await createTestAgent({
    agentId: AGENT_ID,
    orchestratorUrl: orch.url,
    portRange: randomPortRange(20),
    network: NETWORK,
    leaderEpoch: 1,
  });
});

afterAll(async () => {
  await removeContainersByLabel({ 'orchestrator.host': AGENT_ID });
  for (const ref of pushed)
    await docker()
      .getImage(ref)
      .remove({ force: true })
      .catch(() => undefined);
  await agent?.close();
  await removeNetwork(NETWORK);
  await registry?.stop();
  await orch?.close();
});

describe('create options', () => {
  it('applies user, caller labels, stop signal and stop timeout; inspect and inventory show them', async () => {
    const created = await call(
      'PUT',
      '/instances/o-user',
      body({ user: '1000:1000', labels: { team: 'red', 'com.example/tier': 'gold' }, stopSignal: 'SIGUSR1', stopTimeoutSeconds: 7 }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const info = await docker()
      .getContainer(created.body.containerId as string)
      .inspect();
    expect(info.Config.User).toBe('1000:1000');
    expect(info.Config.Labels).toMatchObject({ team: 'red', 'com.example/tier': 'gold', 'orchestrator.user': '1000:1000' });
    expect((info.Config as { StopSignal?: string }).StopSignal).toBe('SIGUSR1');
    expect((info.Config as { StopTimeout?: number }).StopTimeout).toBe(7);

    const inspected = (await call('GET', '/instances/o-user')).body;
    expect(inspected).toMatchObject({
      user: '1000:1000',
      image: IMAGE,
      labels: { team: 'red', 'com.example/tier': 'gold' },
      state: 'running',
      exitCode: 0,
      oomKilled: false,
      restartCount: 0,
    });
    expect(Object.keys(inspected.labels as object).some((k) => k.startsWith('orchestrator.'))).toBe(false);
    expect(inspected.startedAt).not.toBeNull();
    const entry = ((await call('GET', '/instances')).body.instances as Record<string, unknown>[]).find((i) => i.instanceId === 'o-user');
    expect(entry).toMatchObject({ user: '1000:1000', image: IMAGE, labels: { team: 'red', 'com.example/tier': 'gold' }, finishedAt: null });

    // No signal named: the container's own stop signal (SIGUSR1 → exit 4).
    const stopped = await call('POST', '/instances/o-user/stop', {});
    expect(stopped.body).toMatchObject({ state: 'exited', method: 'signal', killed: false, exitCode: 4 });
    await call('POST', '/instances/o-user/start');
    const interrupted = await call('POST', '/instances/o-user/stop', { signal: 'SIGINT', timeoutSeconds: 5 });
    expect(interrupted.body).toMatchObject({ state: 'exited', method: 'signal', killed: false, exitCode: 3 });
    expect((await call('GET', '/instances/o-user')).body).toMatchObject({ exitCode: 3, finishedAt: expect.any(String) });
  });

  it.each([
    [{ user: 'root' }, 'user "root" is invalid'],
    [{ user: '1000:99999999999' }, 'user "1000:99999999999" is invalid'],
    [{ labels: { 'orchestrator.managed': 'false' } }, 'labels key "orchestrator.managed" is reserved'],
    [{ labels: { 'Orchestrator.Host': 'x' } }, 'is reserved'],
    [{ labels: { 'bad key': 'x' } }, 'labels key "bad key" is invalid'],
    [{ stopSignal: 'TERM; rm -rf /' }, 'body/stopSignal'],
    [{ stopTimeoutSeconds: -1 }, 'body/stopTimeoutSeconds'],
    [{ pull: 'sometimes' }, 'body/pull'],
  ])('refuses a bad option with 400 naming it (%j)', async (overrides, message) => {
    const res = await call('PUT', '/instances/o-bad', body(overrides));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain(message);
    expect(existsSync(dataDir('o-bad'))).toBe(false);
  });

  it('pull:always pulls a present image again from the registry; pull:missing does not', async () => {
    registry = await startRegistry();
    const repo = `${registry.address}/endercloud/${RUN}`;
    const ref = `${repo}:1`;
    pushed.push(ref);
    await docker().getImage(IMAGE).tag({ repo, tag: '1' });
    const push = await docker()
      .getImage(ref)
      .push({ authconfig: { serveraddress: registry.address } });
    await new Promise((resolve, reject) =>
      docker().modem.followProgress(push, (err: Error | null, out: unknown) => (err ? reject(err) : resolve(out))),
    );
    const pullLines = () => agent.logLines.filter((l) => l.msg === 'image pulled' && l.image === ref).length;

    expect((await call('PUT', '/instances/o-missing', body({ image: ref }))).status).toBe(200);
    expect(pullLines()).toBe(0);
    const always = await call('PUT', '/instances/o-always', body({ image: ref, pull: 'always' }));
    expect(always.status, JSON.stringify(always.body)).toBe(200);
    expect(pullLines()).toBe(1);
  });
});

describe('scoped DELETE /instances/:id', () => {
  it('keepData removes the container only; the runtime directory stays', async () => {
    await call('PUT', '/instances/o-keep', body());
    seedFiles('o-keep');
    const res = await call('DELETE', '/instances/o-keep', { keepData: true });
    expect(res.body).toEqual({
      instanceId: 'o-keep',
      scope: 'container',
      containerRemoved: true,
      directoryRemoved: false,
      pathsRemoved: [],
    });
    expect(existsSync(join(dataDir('o-keep'), 'world', 'region', 'r.0.0.mca'))).toBe(true);
    const listed = await docker().listContainers({
      all: true,
      filters: { label: [`orchestrator.host=${AGENT_ID}`, 'orchestrator.instance=o-keep'] },
    });
    expect(listed).toHaveLength(0);
  });

  it('paths removes the container and just those paths (also as a query); bad input changes nothing', async () => {
    await call('PUT', '/instances/o-paths', body());
    seedFiles('o-paths');
    const unsafe = await call('DELETE', '/instances/o-paths', { paths: ['logs', '../other'] });
    expect(unsafe.status).toBe(400);
    expect(unsafe.body.error.code).toBe('UNSAFE_PATH');
    const both = await call('DELETE', '/instances/o-paths', { keepData: true, paths: ['logs'] });
    expect(both.status).toBe(400);
    expect((await call('GET', '/instances/o-paths')).body.state).toBe('running');
    expect(existsSync(join(dataDir('o-paths'), 'logs', 'latest.log'))).toBe(true);

    const res = await agent.app.inject({
      method: 'DELETE',
      url: '/api/v1/instances/o-paths?paths=logs&paths=cache/&paths=./server.properties',
    });
    expect(res.json()).toEqual({
      instanceId: 'o-paths',
      scope: 'paths',
      containerRemoved: true,
      directoryRemoved: false,
      pathsRemoved: ['logs', 'server.properties'],
    });
    expect(existsSync(join(dataDir('o-paths'), 'logs'))).toBe(false);
    expect(existsSync(join(dataDir('o-paths'), 'server.properties'))).toBe(false);
    expect(existsSync(join(dataDir('o-paths'), 'world', 'region', 'r.0.0.mca'))).toBe(true);

    const query = await agent.app.inject({ method: 'DELETE', url: '/api/v1/instances/o-paths?keepData=true' });
    expect(query.json()).toMatchObject({ scope: 'container', containerRemoved: false });
  });

  it('POST /cleanup keeps the runtime directory of orphans named in keepDataFor', async () => {
    await call('PUT', '/instances/o-orphan-keep', body());
    await call('PUT', '/instances/o-orphan-drop', body());
    const res = await call('POST', '/cleanup', { instanceIds: ['o-orphan-keep', 'o-orphan-drop'], keepDataFor: ['o-orphan-keep'] });
    expect(res.body).toEqual({ removed: ['o-orphan-keep', 'o-orphan-drop'], skipped: [], notFound: [], dataKept: ['o-orphan-keep'] });
    expect(existsSync(dataDir('o-orphan-keep'))).toBe(true);
    expect(existsSync(dataDir('o-orphan-drop'))).toBe(false);
  });
});

describe('runtime directory owner and per-run logs', () => {
  const WRITE = ['sh', '-c', 'id -u > /data/uid && mkdir -p /data/conf/new && echo w > /data/conf/new/f && sleep 30'];

  async function waitFile(path: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!existsSync(path)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${path}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('a created runtime directory and every layer entry belong to the create user, who can write /data; no user keeps root', async () => {
    const layer = await orch.addLayer('owned', {
      'conf/server.properties': { content: 'motd=x\n' },
      'bin/run.sh': { content: 'echo\n', mode: 0o755 },
    });
    expect((await call('PUT', '/instances/o-owned', body({ user: '1234:2345', layers: [layer], command: WRITE }))).status).toBe(200);
    for (const rel of ['', 'conf', 'conf/server.properties', 'bin', 'bin/run.sh']) {
      const s = statSync(join(dataDir('o-owned'), rel));
      expect({ rel, uid: s.uid, gid: s.gid }).toEqual({ rel, uid: 1234, gid: 2345 });
    }
    expect(statSync(join(dataDir('o-owned'), 'bin/run.sh')).mode & 0o777).toBe(0o755);
    await waitFile(join(dataDir('o-owned'), 'conf/new/f'));
    expect(readFileSync(join(dataDir('o-owned'), 'uid'), 'utf8').trim()).toBe('1234');

    // uid alone: group 0, as Docker runs it without an /etc/passwd entry.
    expect((await call('PUT', '/instances/o-uid-only', body({ user: '1500', layers: [layer], command: WRITE }))).status).toBe(200);
    expect(statSync(dataDir('o-uid-only'))).toMatchObject({ uid: 1500, gid: 0 });
    await waitFile(join(dataDir('o-uid-only'), 'conf/new/f'));

    // The image's own user: the agent cannot know its ids, so the directory stays root's.
    expect((await call('PUT', '/instances/o-image-user', body({ layers: [layer] }))).status).toBe(200);
    expect(statSync(join(dataDir('o-image-user'), 'conf/server.properties'))).toMatchObject({ uid: 0, gid: 0 });
  });

  it('logs?since=start answers only the current (or last) run; without it earlier runs are included', async () => {
    // Run 1 prints and exits; later runs print and wait for SIGINT.
    const COUNT = [
      'sh',
      '-c',
      'n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo "run $n"; [ $n = 1 ] && exit 0; trap "exit 3" INT; while true; do sleep 0.1; done',
    ];
    expect((await call('PUT', '/instances/o-runs', body({ command: COUNT }))).status).toBe(200);
    const text = async (q: string) => (await agent.app.inject({ method: 'GET', url: `/api/v1/instances/o-runs/logs${q}` })).body;
    const waitLog = async (want: string) => {
      const deadline = Date.now() + 10_000;
      while ((await text('?tail=10')) !== want) {
        if (Date.now() > deadline) throw new Error(`logs never became ${JSON.stringify(want)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await waitLog('run 1\n');
    expect(await text('?tail=10&since=start')).toBe('run 1\n');
    await new Promise((r) => setTimeout(r, 400)); // farther apart than the start margin (log-window.ts)
    expect((await call('POST', '/instances/o-runs/start')).status).toBe(200);
    await waitLog('run 1\nrun 2\n');
    expect(await text('?tail=10&since=start')).toBe('run 2\n');
    expect((await call('POST', '/instances/o-runs/stop', { signal: 'SIGINT', timeoutSeconds: 5 })).status).toBe(200);
    expect(await text('?tail=10&since=start')).toBe('run 2\n');
    expect((await agent.app.inject({ method: 'GET', url: '/api/v1/instances/o-runs/logs?since=yesterday' })).statusCode).toBe(400);
  });
});
