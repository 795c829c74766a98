// End to end on the real Docker engine: an in-process orchestrator (SQLite)
// and TWO real agents as child processes (`tsx src/agent/index.ts`), driven
// through ectl. Guards: layers push + apply + create → a running container
// with its layers materialised on the chosen host; a killed agent's host goes
// OFFLINE; a restarted agent goes RECOVERING → ONLINE with its instance intact
// and an unknown managed container removed; an orchestrator stopped between
// persisting and dispatching a create leaves exactly one container after restart;
// a fresh database lists the running containers as unclaimed and adopting one
// binds an instance to it (endpoint from the agent) without touching it.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { orchestratorConfig, type OrchestratorConfig } from '../../src/server/config.js';
import { HttpAgentTransport } from '../../src/server/drivers/agent-transport.js';
import { startOrchestrator, type Orchestrator, type OrchestratorDeps } from '../../src/server/orchestrator.js';
import { randomPortRange, removeNetwork } from '../support/agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { busyboxImage, ensureImage, type ImageDefinition } from '../support/images.js';
import { freePort } from '../support/registry.js';

const run = uniqueId('e2e');
const ADMIN_TOKEN = `admin-${run}-${'a'.repeat(16)}`;
const AGENT_TOKEN = `agent-${run}-${'b'.repeat(16)}`;
const NETWORK = `${run}-net`;
const AGENT_ENTRY = fileURLToPath(new URL('../../src/agent/index.ts', import.meta.url));
const HEARTBEAT = '300ms';

interface AgentProc {
  id: string;
  port: number;
  env: NodeJS.ProcessEnv;
  runtimeDir: string;
  child?: ChildProcess;
  log: string[];
}

let base: string;
let configPath: string;
let config: Readonly<OrchestratorConfig>;
let orchestrator: Orchestrator | undefined;
const agents: AgentProc[] = [];
let image: string;
/** Hosts whose inventory calls the fetch wrapper delays and records (recovery observation). */
const watchInventory = new Map<string, string[]>();
const agentTransport = new HttpAgentTransport();

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function ectl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = bufferOutput();
  const code = await runCli(args, { output, env: { configPath, urlOverride: undefined, tokenOverride: undefined }, version: 'e2e' });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

async function ectlJson<T>(args: string[]): Promise<T> {
  const r = await ectl([...args, '--json']);
  if (r.code !== 0) throw new Error(`ectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

const hostStatus = async (id: string): Promise<string | undefined> =>
  (await ectlJson<{ status: string }>(['hosts', 'get', id]).catch(() => undefined))?.status;

/** The orchestrator's agent calls go through the production transport; inventories of watched hosts are recorded and slowed. */
function orchestratorDeps(runWorker = true): OrchestratorDeps {
  return {
    runWorker,
    logger: pino({ level: 'silent' }),
    agentTransport: {
      send: async (request) => {
        for (const [hostId, seen] of watchInventory) {
          const agent = agents.find((a) => a.id === hostId)!;
          if (request.url.href === `http://127.0.0.1:${agent.port}/api/v1/instances` && request.method === 'GET') {
            seen.push((await orchestrator!.store.hosts.get(hostId))?.status ?? 'absent');
            // Long enough for the HTTP polls to see RECOVERING, far below the test bounds.
            await new Promise((r) => setTimeout(r, 400));
          }
        }
        return agentTransport.send(request);
      },
    },
  };
}

function startAgent(a: AgentProc): void {
  a.child = spawn(process.execPath, ['--import', 'tsx', AGENT_ENTRY], { env: a.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (b: Buffer) => {
    a.log.push(b.toString());
    if (a.log.length > 200) a.log.shift();
  };
  a.child.stdout!.on('data', keep);
  a.child.stderr!.on('data', keep);
}

async function killAgent(a: AgentProc): Promise<void> {
  const child = a.child;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGKILL');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
}

async function containersOf(instanceId: string) {
  return docker().listContainers({ all: true, filters: { label: [`orchestrator.instance=${instanceId}`] } });
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ec-e2e-'));
  configPath = join(base, 'config', 'config.json');
  // A container that stays up with no command: the template has no command field.
  const sleeper: ImageDefinition = {
    name: 'e2e-sleeper',
    dockerfile: `FROM ${await ensureImage(busyboxImage)}\nCMD ["/bin/sh", "-c", "echo e2e-sleeper says $GREETING; exec /bin/sleep 3600"]`,
    files: () => [],
  };
  image = await ensureImage(sleeper);
  const port = await freePort();
  config = orchestratorConfig({
    ENDERCLOUD_LISTEN: `127.0.0.1:${port}`,
    ENDERCLOUD_DATA_DIR: join(base, 'orchestrator'),
    ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
    ENDERCLOUD_AGENT_TOKEN: AGENT_TOKEN,
    ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '3',
    ENDERCLOUD_OFFLINE_SWEEP_INTERVAL: '100ms',
    ENDERCLOUD_COMMAND_POLL_INTERVAL: '100ms',
    ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
    ENDERCLOUD_COMMAND_RETRY_MAX: '1s',
    ENDERCLOUD_LOG_LEVEL: 'silent',
  });
  orchestrator = await startOrchestrator(config, orchestratorDeps());
  const range = randomPortRange(20);
  for (const [i, suffix] of ['a', 'b'].entries()) {
    const id = `${run}-${suffix}`;
    const dir = join(base, id);
    const agentPort = await freePort();
    const first = range.first + i * 10;
    agents.push({
      id,
      port: agentPort,
      runtimeDir: join(dir, 'runtime'),
      log: [],
      env: {
        PATH: process.env.PATH,
        AGENT_ID: id,
        AGENT_ORCHESTRATOR_URL: orchestrator.url,
        AGENT_LISTEN_ADDRESS: '127.0.0.1',
        AGENT_PORT: String(agentPort),
        AGENT_CONTROL_URL: `http://127.0.0.1:${agentPort}`,
        AGENT_GAME_ADDRESS: '127.0.0.1',
        AGENT_GAME_BIND_ADDRESS: '127.0.0.1',
        AGENT_GAME_PORT_RANGE: `${first}-${first + 9}`,
        AGENT_RUNTIME_DIRECTORY: join(dir, 'runtime'),
        AGENT_CACHE_DIRECTORY: join(dir, 'cache'),
        AGENT_DOCKER_NETWORK: NETWORK,
        AGENT_HEARTBEAT_INTERVAL: HEARTBEAT,
        AGENT_STOP_TIMEOUT: '1s',
        AGENT_TOKEN,
        AGENT_LOG_LEVEL: 'warn',
      },
    });
  }
  agents.forEach(startAgent);
  expect((await ectl(['login', '--url', orchestrator.url, '--token', ADMIN_TOKEN])).code).toBe(0);
  for (const a of agents) await until(`host ${a.id} ONLINE`, async () => (await hostStatus(a.id)) === 'ONLINE', 30_000);
});

afterAll(async () => {
  for (const a of agents) await killAgent(a);
  await orchestrator?.stop().catch(() => undefined);
  agentTransport.close();
  for (const a of agents) await removeContainersByLabel({ 'orchestrator.host': a.id });
  await removeNetwork(NETWORK);
  rmSync(base, { recursive: true, force: true });
});

describe('control plane end to end (real Docker, two real agents)', () => {
  let instanceId: string;
  let hostOf: AgentProc;

  it('layers push + apply + instances create → a running container with its layers materialised on the chosen host', async () => {
    const layerDir = join(base, 'layer-src');
    mkdirSync(join(layerDir, 'config'), { recursive: true });
    writeFileSync(join(layerDir, 'config', 'motd.txt'), `hello from ${run}\n`);
    writeFileSync(join(layerDir, 'variant.yml'), 'name: base\n');
    const variantDir = join(base, 'variant-src');
    mkdirSync(variantDir, { recursive: true });
    writeFileSync(join(variantDir, 'lobby.properties'), 'lobby=true\n');
    const base1 = await ectlJson<{ checksum: string }>(['layers', 'push', `${run}-base`, layerDir]);
    expect(base1.checksum).toMatch(/^[0-9a-f]{64}$/);
    await ectlJson(['layers', 'push', `${run}-lobby`, variantDir]);

    const file = join(base, 'network.yml');
    writeFileSync(
      file,
      [
        'templates:',
        `  - name: ${run}-sleeper`,
        '    version: "1"',
        '    spec:',
        `      image: ${image}`,
        '      resources: { memoryMb: 64 }',
        '      stop: { timeoutMs: 1000 }',
        `      layers: [${run}-base]`,
        'groups:',
        `  - id: ${run}-lobby`,
        '    kind: ephemeral',
        '    variants:',
        `      - { id: v1, template: ${run}-sleeper@1, extraLayers: [${run}-lobby], env: { GREETING: hi } }`,
        `  - id: ${run}-world`,
        '    kind: persistent',
        '    variants:',
        `      - { id: v1, template: ${run}-sleeper@1 }`,
        '',
      ].join('\n'),
    );
    const applied = await ectl(['apply', '-f', file]);
    expect(applied.stderr).not.toMatch(/error/);
    expect(applied.code).toBe(0);
    expect((await ectlJson<{ plan: { action: string }[] }>(['apply', '-f', file])).plan.map((p) => p.action)).toEqual([
      'unchanged',
      'unchanged',
      'unchanged',
    ]);

    // The sleeper never listens, so it never becomes online (ectl's --wait waits for online): wait for its running container.
    const instance = await ectlJson<{ id: string; hostId: string; groupId: string }>([
      'instances',
      'create',
      '--group',
      `${run}-lobby`,
      '--variant',
      'v1',
    ]);
    instanceId = instance.id;
    await until(
      'the created container running',
      async () => (await containersOf(instance.id)).some((c) => c.State === 'running'),
      120_000,
      200,
    );
    hostOf = agents.find((a) => a.id === instance.hostId)!;
    expect(hostOf).toBeDefined();

    const [c, ...more] = await containersOf(instanceId);
    expect(more).toEqual([]);
    expect(c!.State).toBe('running');
    const inspect = await docker().getContainer(c!.Id).inspect();
    expect(inspect.Config.Labels).toMatchObject({
      'orchestrator.managed': 'true',
      'orchestrator.host': hostOf.id,
      'orchestrator.instance': instanceId,
      'orchestrator.group': `${run}-lobby`,
      'orchestrator.variant': 'v1',
    });
    expect(inspect.Config.Env).toContain('GREETING=hi');
    const dir = join(hostOf.runtimeDir, 'instances', instanceId);
    expect(readFileSync(join(dir, 'config', 'motd.txt'), 'utf8')).toBe(`hello from ${run}\n`);
    expect(readFileSync(join(dir, 'lobby.properties'), 'utf8')).toBe('lobby=true\n');
    expect(existsSync(join(dir, 'variant.yml'))).toBe(false);
    const other = agents.find((a) => a !== hostOf)!;
    expect(existsSync(join(other.runtimeDir, 'instances', instanceId))).toBe(false);

    // ectl instances logs reads the container output through the orchestrator and the real agent.
    const logs = await until(
      'container output',
      async () => {
        const r = await ectl(['instances', 'logs', instanceId, '--tail', '5']);
        return r.code === 0 && r.stdout.includes('e2e-sleeper says hi') ? r : undefined;
      },
      10_000,
    );
    expect(logs.stderr).toBe('');
    expect(await ectlJson<{ instanceId: string; logs: string }>(['instances', 'logs', instanceId])).toMatchObject({
      instanceId,
      logs: expect.stringContaining('e2e-sleeper says hi'),
    });
  }, 180_000);

  it("a killed agent's host goes OFFLINE after 3 missed heartbeats; its container keeps running", async () => {
    await killAgent(hostOf);
    await until(`host ${hostOf.id} OFFLINE`, async () => (await hostStatus(hostOf.id)) === 'OFFLINE', 10_000);
    expect((await containersOf(instanceId))[0]!.State).toBe('running');
  });

  it("a restarted agent goes RECOVERING → ONLINE with its instance intact and unknown managed containers removed (only an ephemeral orphan's data deleted)", async () => {
    const orphanId = `${run}-orphan`;
    const worldId = `${run}-world-orphan`;
    for (const [id, group] of [
      [orphanId, `${run}-lobby`],
      [worldId, `${run}-world`],
    ] as const) {
      const orphan = await docker().createContainer({
        name: `endercloud-v1-${id}`,
        Image: image,
        Labels: {
          'orchestrator.managed': 'true',
          'orchestrator.host': hostOf.id,
          'orchestrator.instance': id,
          'orchestrator.group': group,
          'orchestrator.variant': 'v1',
        },
      });
      await orphan.start();
      mkdirSync(join(hostOf.runtimeDir, 'instances', id), { recursive: true });
      writeFileSync(join(hostOf.runtimeDir, 'instances', id, 'level.dat'), 'world');
    }
    const seen: string[] = [];
    watchInventory.set(hostOf.id, seen);
    const statuses: string[] = [];
    startAgent(hostOf);
    await until(
      `host ${hostOf.id} back ONLINE`,
      async () => {
        const s = await hostStatus(hostOf.id);
        if (s && statuses.at(-1) !== s) statuses.push(s);
        return s === 'ONLINE';
      },
      30_000,
      20,
    );
    watchInventory.delete(hostOf.id);
    expect(statuses).toEqual(['OFFLINE', 'RECOVERING', 'ONLINE']);
    expect(seen[0]).toBe('RECOVERING');

    // One cleanup removes each container and then its data: wait for the whole of it.
    await until(
      'orphans removed',
      async () =>
        (await containersOf(orphanId)).length === 0 &&
        (await containersOf(worldId)).length === 0 &&
        !existsSync(join(hostOf.runtimeDir, 'instances', orphanId)),
      20_000,
    );
    // The ephemeral orphan's runtime directory goes; the persistent group's world stays on disk.
    expect(existsSync(join(hostOf.runtimeDir, 'instances', orphanId))).toBe(false);
    expect(readFileSync(join(hostOf.runtimeDir, 'instances', worldId, 'level.dat'), 'utf8')).toBe('world');
    const [c, ...more] = await containersOf(instanceId);
    expect(more).toEqual([]);
    expect(c!.State).toBe('running');
    // While its host was OFFLINE the persistent instance was `unknown` (its data may be alive there, never
    // started elsewhere); the supervisor's next pass over the returned host finds the container running and
    // re-verifies it (unknown → starting → online), never recreating it.
    const instance = await until(
      'the instance re-verified after its host returned',
      async () => {
        const i = await ectlJson<{ hostId: string; state: string }>(['instances', 'get', instanceId]);
        return ['starting', 'online'].includes(i.state) ? i : undefined;
      },
      20_000,
      100,
    );
    expect(instance.hostId).toBe(hostOf.id);
    expect((await containersOf(instanceId)).map((x) => x.State)).toEqual(['running']);
  }, 60_000);

  it('an orchestrator stopped after persisting a create but before dispatching it makes exactly one container after restart', async () => {
    await orchestrator!.stop();
    // Restart with the worker never started: the create is persisted, never dispatched.
    orchestrator = await startOrchestrator(config, orchestratorDeps(false));
    for (const a of agents) await until(`host ${a.id} ONLINE again`, async () => (await hostStatus(a.id)) === 'ONLINE', 30_000);
    const created = await ectlJson<{ id: string; commandId: string }>([
      'instances',
      'create',
      '--group',
      `${run}-lobby`,
      '--variant',
      'v1',
    ]);
    const pending = await orchestrator.store.commands.get(created.commandId);
    expect(pending?.status).toBe('pending');
    await orchestrator.stop();
    expect(await containersOf(created.id)).toEqual([]);

    orchestrator = await startOrchestrator(config, orchestratorDeps(true));
    await until(
      'the resumed create to succeed',
      async () => {
        const cmd = await ectlJson<{ status: string; lastError: string | null }>(['commands', 'get', created.commandId]).catch(
          () => undefined,
        );
        if (cmd?.status === 'failed') throw new Error(`create failed: ${cmd.lastError}`);
        return cmd?.status === 'succeeded';
      },
      60_000,
      100,
    );
    const list = await containersOf(created.id);
    expect(list).toHaveLength(1);
    expect(list[0]!.State).toBe('running');
  }, 120_000);

  it('a fresh database lists running containers as unclaimed; adopting one makes an instance with its endpoint that is probed, the container untouched', async () => {
    await orchestrator!.stop();
    const fresh = orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${config.listenPort}`,
      ENDERCLOUD_DATA_DIR: join(base, 'orchestrator-fresh'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
      ENDERCLOUD_AGENT_TOKEN: AGENT_TOKEN,
      ENDERCLOUD_SUPERVISE_INTERVAL: '200ms',
      ENDERCLOUD_LOG_LEVEL: 'silent',
    });
    orchestrator = await startOrchestrator(fresh, orchestratorDeps());
    await until(`host ${hostOf.id} ONLINE in the fresh database`, async () => (await hostStatus(hostOf.id)) === 'ONLINE', 30_000);
    const [before, ...others] = await containersOf(instanceId);
    expect(others).toEqual([]);
    const startedAt = (await docker().getContainer(before!.Id).inspect()).State.StartedAt;
    const entry = (
      await ectlJson<{ instanceId: string; groupId: string; variantId: string; hostPort: number; state: string }[]>([
        'hosts',
        'unclaimed',
        hostOf.id,
      ])
    ).find((u) => u.instanceId === instanceId);
    expect(entry).toMatchObject({ groupId: `${run}-lobby`, variantId: 'v1', state: 'running', hostPort: expect.any(Number) });

    // The restored catalog (no layers needed); a short readiness window so the probe outcome shows quickly.
    const file = join(base, 'restored.yml');
    writeFileSync(
      file,
      [
        'templates:',
        `  - name: ${run}-sleeper`,
        '    version: "1"',
        '    spec:',
        `      image: ${image}`,
        '      resources: { memoryMb: 64 }',
        '      readiness: { kind: tcp, startupTimeoutMs: 1500, intervalMs: 200 }',
        'groups:',
        `  - id: ${run}-lobby`,
        '    kind: ephemeral',
        '    variants:',
        `      - { id: v1, template: ${run}-sleeper@1 }`,
        '',
      ].join('\n'),
    );
    expect((await ectl(['apply', '-f', file])).code).toBe(0);
    const adopted = await ectlJson<{ id: string; hostId: string; endpoint: unknown; state: string }>([
      'hosts',
      'adopt',
      hostOf.id,
      instanceId,
      '--group',
      `${run}-lobby`,
      '--variant',
      'v1',
    ]);
    expect(adopted).toMatchObject({
      id: instanceId,
      hostId: hostOf.id,
      state: 'starting',
      endpoint: { host: '127.0.0.1', port: entry!.hostPort },
    });
    const probed = await until(
      'the adopted instance probed',
      async () => {
        const i = await ectlJson<{ state: string; stateReason: string }>(['instances', 'get', instanceId]);
        return ['online', 'degraded'].includes(i.state) && i;
      },
      20_000,
      100,
    );
    expect(probed.stateReason).not.toMatch(/altered|not adopted/);
    expect((await ectlJson<{ instanceId: string }[]>(['hosts', 'unclaimed', hostOf.id])).map((u) => u.instanceId)).not.toContain(
      instanceId,
    );
    const [after, ...more] = await containersOf(instanceId);
    expect(more).toEqual([]);
    expect(after!.Id).toBe(before!.Id);
    expect(after!.State).toBe('running');
    expect((await docker().getContainer(after!.Id).inspect()).State.StartedAt).toBe(startedAt);
  }, 60_000);
});
