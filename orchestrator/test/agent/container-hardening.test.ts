// Container hardening and the network fence against the real Docker engine:
// what a game container the agent creates is allowed (no capability but the
// declared ones, a read-only root with /data and /tmp writable, a non-root
// user, memory and pid limits), what an install container keeps, and that a
// game container on the agent's network cannot reach a control-plane port —
// neither a container only on the control network (the orchestrator under
// Compose) nor the game-network address of one on both that listens only on
// its control address (the agent under Compose).
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MEMORY_BYTES, DockerRuntime, demuxLogs } from '../../src/agent/docker-runtime.js';
import { INSTALL_LABEL, INSTALL_PIDS_LIMIT, runInstall } from '../../src/agent/egg-runtime.js';
import type { LayerRef } from '../../src/agent/contracts.js';
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

const RUN = uniqueId('harden');
const TEST_LABEL = { 'endercloud.test-run': RUN };
const NETWORK = `ec-${RUN}`;
const CONTROL_NETWORK = `ec-${RUN}-control`;
const IMAGE = imageTag(busyboxImage);
const SLEEP = ['sh', '-c', 'exec sleep 3600'];
const LISTEN_PORT = 8080;

let orch: FakeOrchestrator;
let agent: TestAgent;
let layer: LayerRef;
const scratch: string[] = [];

/** Runs `sh -c cmd` in a running container as its configured user: exit code and output. */
async function execIn(id: string, cmd: string): Promise<{ code: number; output: string }> {
  const exec = await docker()
    .getContainer(id)
    .exec({ Cmd: ['sh', '-c', cmd], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  const info = await exec.inspect();
  return { code: info.ExitCode ?? -1, output: demuxLogs(Buffer.concat(chunks)).toString('utf8') };
}

/** A TCP connect (busybox nc, 3 s timeout) from inside the container: 0 when it connected. */
const connectFrom = (id: string, ip: string, port: number) => execIn(id, `echo | nc -w 3 ${ip} ${port}`);

function put(id: string, payload: Record<string, unknown>) {
  return agent.app.inject({ method: 'PUT', url: `/api/v1/instances/${id}`, payload });
}

function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { groupId: 'g', variantId: 'v1', image: IMAGE, layers: [layer], resources: { memoryMb: 64 }, command: SLEEP, ...overrides };
}

/** A plain container of this file (not the agent's), started, on `network`. */
async function helperContainer(name: string, network: string, cmd: string[]): Promise<string> {
  const c = await docker().createContainer({
    name: `${RUN}-${name}`,
    Image: IMAGE,
    Cmd: cmd,
    Labels: TEST_LABEL,
    HostConfig: { NetworkMode: network },
  });
  await c.start();
  return c.id;
}

async function addressOn(id: string, network: string): Promise<string> {
  const info = await docker().getContainer(id).inspect();
  const ip = info.NetworkSettings.Networks[network]?.IPAddress;
  if (!ip) throw new Error(`container ${id} has no address on ${network}`);
  return ip;
}

beforeAll(async () => {
  orch = await startFakeOrchestrator();
  layer = await orch.addLayer('harden-base', { 'server.properties': { content: 'motd=x\n' } });
  agent = await createTestAgent({
    agentId: RUN,
    orchestratorUrl: orch.url,
    portRange: randomPortRange(10),
    network: NETWORK,
    leaderEpoch: 1,
  });
});

afterAll(async () => {
  await removeContainersByLabel({ 'orchestrator.host': RUN });
  await removeContainersByLabel(TEST_LABEL);
  await agent?.close();
  await removeNetwork(NETWORK);
  await removeNetwork(CONTROL_NETWORK);
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
  await orch?.close();
});

describe('game container hardening', () => {
  it('drops every capability but the declared ones, runs non-root with a read-only root, writable /data and /tmp, memory and pid limits', async () => {
    const res = await put('i-hard', body({ user: '1000:1000', security: { capAdd: ['NET_BIND_SERVICE'] } }));
    expect(res.statusCode).toBe(200);
    const id = res.json().containerId as string;
    const info = await docker().getContainer(id).inspect();
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    expect(((info.HostConfig.CapAdd ?? []) as string[]).map((c) => c.replace(/^CAP_/, ''))).toEqual(['NET_BIND_SERVICE']);
    expect(info.HostConfig.ReadonlyRootfs).toBe(true);
    expect(Object.keys(info.HostConfig.Tmpfs ?? {})).toEqual(['/tmp']);
    expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.Config.User).toBe('1000:1000');
    expect(info.HostConfig.Memory).toBe(64 * 1024 * 1024);
    expect(info.HostConfig.PidsLimit).toBeGreaterThan(0);
    // The agent gave the data directory to the container's user at creation.
    const dataDir = join(agent.runtimeDirectory, 'instances', 'i-hard');
    expect((await stat(dataDir)).uid).toBe(1000);

    expect(await execIn(id, 'id -u')).toMatchObject({ code: 0, output: '1000\n' });
    expect((await execIn(id, 'touch /rootfile')).code).not.toBe(0);
    expect((await execIn(id, 'touch /etc/rootfile')).code).not.toBe(0);
    expect((await execIn(id, 'echo ok > /data/written && echo ok > /tmp/written')).code).toBe(0);
    expect(existsSync(join(dataDir, 'written'))).toBe(true);
    // The effective set is exactly the declared capability (NET_BIND_SERVICE is bit 10).
    const caps = await execIn(id, "grep -E '^Cap(Bnd|Eff)' /proc/self/status");
    expect(caps.output).toContain('CapBnd:\t0000000000000400');
  });

  it('refuses an unknown capability and ALL with a 400 naming it', async () => {
    const unknown = await put('i-badcap', body({ security: { capAdd: ['CHOWN', 'NET_FLY'] } }));
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.message).toContain('"NET_FLY"');
    const all = await put('i-allcap', body({ security: { capAdd: ['ALL'] } }));
    expect(all.statusCode).toBe(400);
    expect(all.json().error.message).toMatch(/may not be ALL/);
    expect(
      await docker().listContainers({ all: true, filters: { label: [`orchestrator.host=${RUN}`, 'orchestrator.instance=i-badcap'] } }),
    ).toEqual([]);
  });

  it('a template that opts out with readOnlyRootfs: false gets a writable root (and still no capabilities)', async () => {
    const res = await put('i-rw', body({ user: '1000:1000', security: { readOnlyRootfs: false } }));
    expect(res.statusCode).toBe(200);
    const id = res.json().containerId as string;
    const info = await docker().getContainer(id).inspect();
    expect(info.HostConfig.ReadonlyRootfs).toBe(false);
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    // Writable, but only where the image lets uid 1000 write (busybox's / is root's): /tmp and /data still are.
    expect((await execIn(id, 'echo ok > /tmp/written')).code).toBe(0);
  });

  it('a spec without memory gets the default limit, never unlimited', async () => {
    const runtime = new DockerRuntime({ socketPath: DOCKER_SOCKET, network: NETWORK });
    const dir = await mkdtemp(join(tmpdir(), 'ec-harden-'));
    scratch.push(dir);
    const created = await runtime.create({
      name: `${RUN}-nomem`,
      image: IMAGE,
      command: SLEEP,
      env: [],
      labels: TEST_LABEL,
      memoryBytes: 0,
      dataHostPath: dir,
      port: { containerPort: 25565, hostPort: randomPortRange(1).first, hostIp: '127.0.0.1' },
    });
    const info = await docker().getContainer(created.id).inspect();
    expect(info.HostConfig.Memory).toBe(DEFAULT_MEMORY_BYTES);
    expect(info.HostConfig.MemorySwap).toBe(DEFAULT_MEMORY_BYTES);
  });
});

describe('install container hardening', () => {
  it('runs as root with no-new-privileges, a pid limit, only the server directory mounted, on the game network', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ec-harden-install-'));
    scratch.push(dir);
    let seen: Promise<Docker.ContainerInspectInfo> | undefined;
    const answer = await runInstall(
      agent.runtime,
      {
        name: `${RUN}-install`,
        hostPath: dir,
        labels: { ...TEST_LABEL, [INSTALL_LABEL]: 'true' },
        onStarted: (containerId) => {
          seen = docker()
            .getContainer(containerId)
            .inspect()
            .finally(() => writeFileSync(join(dir, 'go'), ''));
        },
      },
      {
        image: IMAGE,
        entrypoint: 'sh',
        // Waits for the test's go-ahead (bounded), so the inspect sees it running.
        script: 'i=0; while [ ! -f /mnt/server/go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; id -u > /mnt/server/installed-by',
        timeoutMs: 60_000,
      },
    );
    expect(answer).toMatchObject({ exitCode: 0, timedOut: false });
    const info = await seen!;
    expect(info.Config.User).toBe('0:0');
    expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.HostConfig.PidsLimit).toBe(INSTALL_PIDS_LIMIT);
    expect(info.HostConfig.Memory).toBeGreaterThan(0);
    expect(info.Mounts.map((m) => ({ source: m.Source, destination: m.Destination, type: m.Type }))).toEqual([
      { source: dir, destination: '/mnt/server', type: 'bind' },
    ]);
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual([NETWORK]);
    expect(info.HostConfig.NetworkMode).toBe(NETWORK);
  });
});

describe('network fence', () => {
  it('a game container cannot connect to a control-plane port; a control-network peer can', async () => {
    await docker().createNetwork({ Name: CONTROL_NETWORK, Driver: 'bridge', CheckDuplicate: true, Labels: TEST_LABEL });
    // The orchestrator under Compose: only on the control network.
    const control = await helperContainer('control', CONTROL_NETWORK, ['httpd', '-f', '-p', String(LISTEN_PORT)]);
    // The agent under Compose: on both, listening on its control address only.
    const dual = await helperContainer('dual', CONTROL_NETWORK, ['sleep', '3600']);
    // The game network is the agent's own (made on its first create; made here first so the agent container can join it).
    await agent.runtime.ensureNetwork(NETWORK);
    await docker().getNetwork(NETWORK).connect({ Container: dual });
    const dualControlIp = await addressOn(dual, CONTROL_NETWORK);
    const dualGameIp = await addressOn(dual, NETWORK);
    expect((await execIn(dual, `httpd -p ${dualControlIp}:${LISTEN_PORT}`)).code).toBe(0);
    const peer = await helperContainer('peer', CONTROL_NETWORK, ['sleep', '3600']);
    const controlIp = await addressOn(control, CONTROL_NETWORK);

    // The listeners work: a peer on the control network connects to both.
    expect((await connectFrom(peer, controlIp, LISTEN_PORT)).code).toBe(0);
    expect((await connectFrom(peer, dualControlIp, LISTEN_PORT)).code).toBe(0);

    const res = await put('i-fence', body({ user: '1000:1000' }));
    expect(res.statusCode).toBe(200);
    const game = res.json().containerId as string;
    const gameInfo = await docker().getContainer(game).inspect();
    expect(Object.keys(gameInfo.NetworkSettings.Networks)).toEqual([NETWORK]);

    // nc works from the game container: a listener on the game network itself answers.
    expect((await execIn(dual, `httpd -p ${dualGameIp}:${LISTEN_PORT + 1}`)).code).toBe(0);
    expect((await connectFrom(game, dualGameIp, LISTEN_PORT + 1)).code).toBe(0);

    expect((await connectFrom(game, controlIp, LISTEN_PORT)).code).not.toBe(0);
    expect((await connectFrom(game, dualControlIp, LISTEN_PORT)).code).not.toBe(0);
    expect((await connectFrom(game, dualGameIp, LISTEN_PORT)).code).not.toBe(0);
    // Compose's service names do not resolve on the game network either.
    expect((await execIn(game, `nslookup ${RUN}-control`)).code).not.toBe(0);
  });
});
