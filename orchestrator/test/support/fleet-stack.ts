// A fleet on the real Docker engine, for test/fleet: an orchestrator (SQLite,
// short provisioner/supervisor/readiness intervals) either in this process or
// as a child process that can be SIGKILLed, an in-process agent with its
// heartbeats, the Minecraft-protocol test-server template (RCON, transfers,
// the network secret) and routers assembled by buildRouterParts as
// `npm run router` does. Everything it creates carries the host label it
// removes in close(), also when a test failed.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { Heartbeater } from '../../src/agent/heartbeat.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { realTimers } from '../../src/shared/timers.js';
import { createTestAgent, randomPortRange, removeNetwork, type TestAgent } from './agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from './docker.js';
import { ensureImage } from './images.js';
import { mcServerImage } from './mc-server.js';
import { freePort } from './registry.js';
import { startTestRouter, until, type StackRouter } from './router-stack.js';

export { until };
export type Loose = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ORCHESTRATOR_DIR = fileURLToPath(new URL('../..', import.meta.url));
const silent = pino({ level: 'silent' });
export const NETWORK_SECRET_ENV = 'NETWORK_SECRET';

export interface FleetStackOptions {
  /** `process`: the orchestrator runs as `tsx src/server/index.ts` and can be killed (SIGKILL). */
  mode?: 'inline' | 'process';
  env?: Record<string, string>;
}

export interface FleetStack {
  run: string;
  hostId: string;
  adminToken: string;
  /** The agent token (a second agent of a test joins with it). */
  agentToken: string;
  routerToken: string;
  url: string;
  agent: TestAgent;
  /** The in-process orchestrator (inline mode only). */
  orchestrator(): Orchestrator;
  /** Every line the orchestrator logged (inline: pino at debug; process: its stdout and stderr). */
  logs: string[];
  /** The template name of the test server (RCON, accepts-transfers, network secret). */
  template: string;
  api(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: Loose }>;
  must(method: string, path: string, body?: unknown): Promise<Loose>;
  /** PUT /groups/:id with the test-server template and this scaling policy. */
  putGroup(id: string, scaling: Loose | null, extra?: Loose): Promise<void>;
  get(id: string): Promise<Loose>;
  waitState(id: string, state: string, timeoutMs?: number): Promise<Loose>;
  waitGone(id: string, timeoutMs?: number): Promise<void>;
  history(id: string): Promise<Loose[]>;
  commands(id: string): Promise<Loose[]>;
  groupInstances(groupId: string): Promise<Loose[]>;
  containerOf(id: string): Promise<Loose | undefined>;
  runtimeDir(id: string): string;
  startRouter(toml: string): Promise<StackRouter>;
  /** SIGKILL (process mode) or a graceful stop (inline). */
  kill(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

interface Running {
  stop(): Promise<void>;
  kill(): Promise<void>;
  inline?: Orchestrator;
}

export async function startFleetStack(prefix: string, opts: FleetStackOptions = {}): Promise<FleetStack> {
  const run = uniqueId(prefix);
  const base = mkdtempSync(join(tmpdir(), `ec-${prefix}-`));
  const adminToken = `admin-${run}-${'a'.repeat(16)}`;
  const agentToken = `agent-${run}-${'b'.repeat(16)}`;
  const hostId = `${run}-host`.toLowerCase();
  const network = `${run}-net`;
  const image = await ensureImage(mcServerImage);
  const [orchestratorPort, routerPort, agentPort] = [await freePort(), await freePort(), await freePort()];
  const url = `http://127.0.0.1:${orchestratorPort}`;
  const env: Record<string, string> = {
    ENDERCLOUD_LISTEN: `127.0.0.1:${orchestratorPort}`,
    ENDERCLOUD_DATA_DIR: join(base, 'orchestrator'),
    ENDERCLOUD_ADMIN_TOKEN: adminToken,
    ENDERCLOUD_AGENT_TOKEN: agentToken,
    ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
    ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
    ENDERCLOUD_COMMAND_RETRY_MAX: '500ms',
    ENDERCLOUD_COMMAND_LEASE: '2s',
    ENDERCLOUD_OFFLINE_SWEEP_INTERVAL: '200ms',
    // 5 s without a beat: the agent shares this process's event loop with routers and bots.
    ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '10',
    ENDERCLOUD_SUPERVISE_INTERVAL: '200ms',
    ENDERCLOUD_PROVISION_INTERVAL: '200ms',
    ENDERCLOUD_RESUME_TIMEOUT: '5s',
    ENDERCLOUD_CONTAINER_USER: '0:0',
    ENDERCLOUD_ROUTER_PUBLIC_ADDRESS: `127.0.0.1:${routerPort}`,
    ENDERCLOUD_LOG_LEVEL: 'debug',
    ...opts.env,
  };
  const logs: string[] = [];
  const capture = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });

  async function launch(): Promise<Running> {
    if (opts.mode !== 'process') {
      const o = await startOrchestrator(orchestratorConfig(env), { logger: capture });
      return { inline: o, stop: () => o.stop(), kill: () => o.stop() };
    }
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/server/index.ts'], {
      cwd: ORCHESTRATOR_DIR,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (b: Buffer) => logs.push(b.toString()));
    child.stderr!.on('data', (b: Buffer) => logs.push(b.toString()));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    // Never outlive the test process, even when it dies before close().
    const reap = (): void => void child.kill('SIGKILL');
    process.once('exit', reap);
    void exited.then(() => process.off('exit', reap));
    try {
      await until(
        'orchestrator process answers /health',
        async () => {
          if (child.exitCode !== null) throw new Error(`orchestrator exited with ${child.exitCode}: ${logs.join('').slice(-2000)}`);
          return (
            (await fetch(`${url}/api/v1/health`).then(
              (r) => r.status < 500,
              () => false,
            )) || undefined
          );
        },
        60_000,
        100,
      );
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    const signal = async (s: NodeJS.Signals) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(s);
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    };
    return { stop: () => signal('SIGTERM'), kill: () => signal('SIGKILL') };
  }

  let current: Running;
  try {
    current = await launch();
  } catch (err) {
    rmSync(base, { recursive: true, force: true });
    throw err;
  }
  const portRange = randomPortRange(20);
  let agent: TestAgent | undefined;
  let heartbeater: Heartbeater | undefined;
  const routers: StackRouter[] = [];

  const api: FleetStack['api'] = async (method, path, body, token = adminToken) => {
    const res = await fetch(`${url}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* text */
    }
    return { status: res.status, body: parsed as Loose };
  };
  const must: FleetStack['must'] = async (method, path, body) => {
    const r = await api(method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const template = `${run}-mc`;

  const stack: FleetStack = {
    run,
    hostId,
    adminToken,
    agentToken,
    routerToken: '',
    url,
    logs,
    template,
    api,
    must,
    get agent() {
      return agent!;
    },
    orchestrator() {
      if (!current.inline) throw new Error('the orchestrator runs in a child process');
      return current.inline;
    },
    async putGroup(id, scaling, extra = {}) {
      await must('PUT', `/groups/${id}`, {
        kind: 'ephemeral',
        variants: [{ id: 'main', template: { name: template, version: '1' }, env: {} }],
        scaling,
        ...extra,
      });
    },
    get: async (id) => (await api('GET', `/instances/${id}`)).body,
    async waitState(id, state, timeoutMs = 20_000) {
      let last: Loose = {};
      try {
        return await until(
          `instance ${id} ${state}`,
          async () => {
            last = (await api('GET', `/instances/${id}`)).body ?? {};
            return last.state === state ? last : undefined;
          },
          timeoutMs,
          100,
        );
      } catch (err) {
        const cmds = (await stack.commands(id).catch(() => [])).map((c) => `${c.kind}:${c.status}:${c.lastError ?? ''}`);
        throw new Error(
          `${(err as Error).message}; last ${String(last.state)} (${String(last.stateReason)}); commands ${cmds.join(' | ')}`,
        );
      }
    },
    async waitGone(id, timeoutMs = 30_000) {
      await until(`instance ${id} deleted`, async () => (await api('GET', `/instances/${id}`)).status === 404, timeoutMs, 100);
    },
    history: async (id) => (await api('GET', `/instances/${id}/history?limit=200`)).body.history as Loose[],
    commands: async (id) => (await api('GET', `/commands?instanceId=${id}`)).body.commands as Loose[],
    groupInstances: async (groupId) => ((await api('GET', '/instances')).body.instances as Loose[]).filter((i) => i.groupId === groupId),
    async containerOf(id) {
      const list = await docker().listContainers({
        all: true,
        filters: { label: [`orchestrator.instance=${id}`, `orchestrator.host=${hostId}`] },
      });
      return list[0] as Loose | undefined;
    },
    runtimeDir: (id) => join(agent!.runtimeDirectory, 'instances', id),
    async startRouter(toml) {
      // The first router is the one the orchestrator sends transferred players back to.
      const r = await startTestRouter(toml, {
        orchestratorUrl: url,
        routerToken: stack.routerToken,
        configPath: 'fleet.toml',
        port: routers.length === 0 ? routerPort : 0,
      });
      routers.push(r);
      return r;
    },
    async kill() {
      await current.kill();
    },
    async restart() {
      current = await launch();
    },
    async close() {
      // FLEET_LOG_FILE=path keeps the orchestrator's log of the run for a failing test.
      if (process.env.FLEET_LOG_FILE) writeFileSync(process.env.FLEET_LOG_FILE, logs.join(''));
      for (const r of routers) await r.close().catch(() => undefined);
      await heartbeater?.stop().catch(() => undefined);
      await current.stop().catch(() => undefined);
      await agent?.close().catch(() => undefined);
      await removeContainersByLabel({ 'orchestrator.host': hostId });
      await removeNetwork(network);
      rmSync(base, { recursive: true, force: true });
    },
  };

  try {
    agent = await createTestAgent({ agentId: hostId, orchestratorUrl: url, portRange, network, token: agentToken });
    await agent.app.listen({ host: '127.0.0.1', port: agentPort });
    heartbeater = new Heartbeater({
      orchestratorUrl: url,
      agentId: hostId,
      token: agentToken,
      intervalMs: 500,
      fetch: globalThis.fetch,
      timers: realTimers,
      now: () => Date.now(),
      logger: silent,
      body: async () => ({
        controlUrl: `http://127.0.0.1:${agentPort}`,
        gameAddress: '127.0.0.1',
        version: 'test',
        heartbeatIntervalMs: 500,
        resources: { cpuCount: 2, memoryTotalBytes: 8 * 1024 ** 3, memoryAvailableBytes: 8 * 1024 ** 3, diskFreeBytes: null },
        portRange,
      }),
    });
    heartbeater.start();
    await until('agent host ONLINE', async () => (await api('GET', `/hosts/${hostId}`)).body?.status === 'ONLINE', 30_000, 100);
    await must('PUT', `/templates/${template}/versions/1`, testServerTemplate(image));
    stack.routerToken = (await must('POST', '/tokens', { name: `${run}-router`, scopes: ['router'] })).secret as string;
  } catch (err) {
    await stack.close();
    throw err;
  }
  return stack;
}

/** The Minecraft-protocol test server with RCON, accepts-transfers and the network secret. */
export function testServerTemplate(image: string, extra: Loose = {}): Loose {
  return {
    image,
    resources: { memoryMb: 256 },
    containerPort: 25565,
    env: { ACCEPTS_TRANSFERS: 'true', MAX_PLAYERS: '50' },
    variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true }],
    // Generous per-probe bounds: two Docker-heavy files share 2 busy cores; a slow answer is not a degraded server.
    readiness: { kind: 'minecraft', startupTimeoutMs: 30_000, intervalMs: 200, probeTimeoutMs: 3000, failureThreshold: 5 },
    stop: { signal: 'SIGTERM', timeoutMs: 3000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
    dataPaths: ['level.json', 'playerdata'],
    technicalPaths: ['stats'],
    networkSecret: { env: NETWORK_SECRET_ENV },
    ...extra,
  };
}

/** Every instance of a group in one state, exactly `count` of them. */
export async function groupIn(stack: FleetStack, groupId: string, state: string, count: number, timeoutMs = 30_000): Promise<Loose[]> {
  let last: string[] = [];
  try {
    return await until(
      `${count} ${state} instance(s) in ${groupId}`,
      async () => {
        const all = await stack.groupInstances(groupId);
        last = all.map((i) => `${String(i.name)}:${String(i.state)}`);
        const hits = all.filter((i) => i.state === state);
        return hits.length === count ? hits : undefined;
      },
      timeoutMs,
      100,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; instances: ${last.join(', ')}`);
  }
}
