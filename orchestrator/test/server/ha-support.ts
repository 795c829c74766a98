// HA test support: orchestrator replicas as child processes (so kill -9 and
// SIGSTOP are real), the real agent app over the in-memory runtime with a gate
// that can hold create calls in flight and a record of every answer, and a
// heartbeat pump that keeps the agent's host ONLINE on whichever replica is up.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAgentApp } from '../../src/agent/app.js';
import { EpochFence } from '../../src/agent/epoch-fence.js';
import { InstanceService } from '../../src/agent/instance-service.js';
import { PortAllocator } from '../../src/agent/port-allocator.js';
import { FsRuntimeDirectories } from '../../src/agent/runtime-directories.js';
import { MemoryRuntime } from '../support/memory-runtime.js';
import { AGENT_TOKEN, heartbeatBody, silentLogger } from './support.js';

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ADMIN_TOKEN = 'ha-admin-token-0123456789abcdef';
/** Every replica of a deployment is given the same master key (docs/production.md "Secret key"); a replica with another refuses to start. */
export const HA_SECRET_KEY = Buffer.alloc(32, 0x48).toString('base64');

export interface AgentAnswer {
  method: string;
  path: string;
  epoch: string | undefined;
  status: number;
}

export interface HaAgent {
  url: string;
  runtime: MemoryRuntime;
  fence: EpochFence;
  answers: AgentAnswer[];
  /** Holds every create (PUT /instances/:id) until the returned release is called; `held` counts those waiting. */
  holdCreates(): () => void;
  readonly held: number;
  close(): Promise<void>;
}

export async function startHaAgent(agentId = 'ha-agent'): Promise<HaAgent> {
  const base = await mkdtemp(path.join(tmpdir(), 'ec-ha-agent-'));
  const runtimeDirectory = path.join(base, 'runtime');
  const emptyLayer = path.join(base, 'empty-layer');
  await mkdir(emptyLayer, { recursive: true });
  const directories = new FsRuntimeDirectories({ runtimeDirectory, runtimeHostDirectory: runtimeDirectory });
  await directories.init();
  const runtime = new MemoryRuntime({ output: () => 'Done (1.0s)!\n' });
  const service = new InstanceService({
    agentId,
    orchestratorUrl: 'http://127.0.0.1:9',
    gameAddress: '127.0.0.1',
    gameBindAddress: '127.0.0.1',
    defaultStopTimeoutSeconds: 1,
    runtime,
    layers: { ensure: async () => emptyLayer },
    directories,
    ports: new PortAllocator({ range: { first: 31000, last: 31099 }, bindAddress: '127.0.0.1', runtime, probe: async () => true }),
    logger: silentLogger,
    rconConnect: runtime.rconConnect,
  });
  const fence = EpochFence.inMemory();
  const app = buildAgentApp({
    agentId,
    version: '0.1.0',
    token: AGENT_TOKEN,
    service,
    engineReachable: async () => true,
    logger: silentLogger,
    fence,
  });
  let gate: Promise<void> | undefined;
  let held = 0;
  const answers: AgentAnswer[] = [];
  // Runs before the fence (a preHandler): a held call is fenced when it is let through, as a late one would be.
  app.addHook('onRequest', async (req) => {
    if (gate && req.method === 'PUT' && /^\/api\/v1\/instances\/[^/]+$/.test(req.url)) {
      held += 1;
      await gate;
      held -= 1;
    }
  });
  app.addHook('onResponse', async (req, reply) => {
    const epoch = req.headers['x-leader-epoch'];
    answers.push({
      method: req.method,
      path: req.url.replace(/^\/api\/v1/, ''),
      epoch: Array.isArray(epoch) ? epoch[0] : epoch,
      status: reply.statusCode,
    });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    runtime,
    fence,
    answers,
    holdCreates() {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      return () => {
        gate = undefined;
        release();
      };
    },
    get held() {
      return held;
    },
    async close() {
      await app.close();
      await rm(base, { recursive: true, force: true });
    },
  };
}

export interface Replica {
  url: string;
  child: ChildProcess;
  pid: number;
  output: string[];
  /** Resolves with the exit code or signal once the process is gone. */
  exited: Promise<string>;
  call(method: string, route: string, body?: unknown): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Starts `src/server/index.ts` directly under node (no npm wrapper: the pid is the orchestrator's). */
export async function startReplica(env: Record<string, string>): Promise<Replica> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server/index.ts'], {
    cwd: PACKAGE_DIR,
    env: {
      ...process.env,
      ENDERCLOUD_LISTEN: '127.0.0.1:0',
      ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
      ENDERCLOUD_AGENT_TOKEN: AGENT_TOKEN,
      ENDERCLOUD_SECRET_KEY: HA_SECRET_KEY,
      ENDERCLOUD_LOG_LEVEL: 'info',
      ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
      ENDERCLOUD_COMMAND_RETRY_MAX: '500ms',
      ENDERCLOUD_COMMAND_POLL_INTERVAL: '100ms',
      ENDERCLOUD_SUPERVISE_INTERVAL: '200ms',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`replica did not start:\n${output.join('')}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      const m = /EnderCloud orchestrator: API (http:\/\/[^ ]+)\/api\/v1/.exec(output.join(''));
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`replica exited (${how}) before listening:\n${output.join('')}`));
    });
  });
  return {
    url,
    child,
    pid: child.pid!,
    output,
    exited,
    async call(method, route, body) {
      const res = await fetch(`${url}/api/v1${route}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
  };
}

/** SIGKILL (if still running) and wait for the exit. */
export async function killReplica(r: Replica, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (r.child.exitCode === null && r.child.signalCode === null) {
    if (signal !== 'SIGKILL') r.child.kill('SIGCONT');
    r.child.kill(signal);
  }
  await r.exited;
}

/** Heartbeats every 300 ms to the current target (whichever replica is up), like a real agent. */
export function heartbeatPump(
  agentUrl: string,
  agentId: string,
  target: () => string | undefined,
): { stop(): void; beat(): Promise<void> } {
  const beat = async () => {
    const url = target();
    if (!url) return;
    await fetch(`${url}/api/v1/agents/${agentId}/heartbeat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(heartbeatBody(agentUrl, { heartbeatIntervalMs: 300 })),
    }).catch(() => undefined);
  };
  const timer = setInterval(() => void beat(), 300);
  return { stop: () => clearInterval(timer), beat };
}

/** Template busybox@1 and group g (one variant v) through the API. */
export async function seedCatalog(r: Replica): Promise<void> {
  const t = await r.call('PUT', '/templates/tpl/versions/1', { image: 'busybox:1', resources: { memoryMb: 64 } });
  if (t.status >= 300) throw new Error(`template: ${t.status} ${JSON.stringify(t.body)}`);
  const g = await r.call('PUT', '/groups/g', { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] });
  if (g.status >= 300) throw new Error(`group: ${g.status} ${JSON.stringify(g.body)}`);
}

export const newTempDir = (prefix: string) => mkdtemp(path.join(tmpdir(), prefix));
