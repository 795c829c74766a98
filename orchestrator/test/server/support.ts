// Server route-test support: an orchestrator over a real store in a temp dir
// (SQLite, or a fresh PostgreSQL database), a manual clock, and the real agent
// app on 127.0.0.1 over an in-memory runtime (a test double), recording every call.

import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freshDatabase } from '../support/postgres.js';
import { pino } from 'pino';
import { expect } from 'vitest';
import { AppError } from '../../src/shared/errors.js';
import { ManualClock } from '../../src/server/clock.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { buildOrchestrator, type Orchestrator, type OrchestratorDeps } from '../../src/server/orchestrator.js';
import { parseMasterKey } from '../../src/server/secrets/master-key.js';
import { SecretBox } from '../../src/server/secrets/secret-box.js';
import { buildAgentApp } from '../../src/agent/app.js';
import type { LayerCache } from '../../src/agent/contracts.js';
import { InstanceService } from '../../src/agent/instance-service.js';
import { PortAllocator } from '../../src/agent/port-allocator.js';
import { FsRuntimeDirectories } from '../../src/agent/runtime-directories.js';
import { tarGzBuffer } from '../support/malicious-tar.js';
import { InventoryMirror, type InventoryItem } from '../support/inventory-mirror.js';
import { MemoryRuntime, instanceOf, type MemoryContainer } from '../support/memory-runtime.js';

/** The AppError `p` rejects with (the test fails when it resolves or rejects with anything else). */
export async function errorOf(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

/** Parsed JSON answers in tests: shape checked by the assertions, not the compiler. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Loose = any;

export const silentLogger = pino({ level: 'silent' });
/**
 * The master key every test orchestrator gets unless a test sets ENDERCLOUD_SECRET_KEY (`''`: the data dir's key
 * file) or ENDERCLOUD_SECRET_KEY_FILE: orchestrators of one test sharing a database are replicas, which share a key.
 */
export const TEST_SECRET_KEY = Buffer.alloc(32, 0x54).toString('base64');
/** The secret codec of TEST_SECRET_KEY, for a test that opens a store itself (the orchestrator installs it otherwise). */
export const TEST_SECRET_BOX = SecretBox.fromMasterKey(parseMasterKey(TEST_SECRET_KEY, 'TEST_SECRET_KEY'));
export const PG_ADMIN_URL = process.env.ENDERCLOUD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestOrchestrator {
  o: Orchestrator;
  clock: ManualClock;
  dataDir: string;
  adminToken: string;
  /** inject() with the admin token unless `token` is given (null: none). */
  call(
    method: string,
    url: string,
    opts?: { body?: unknown; token?: string | null; headers?: Record<string, string>; payload?: Buffer },
  ): Promise<{ status: number; body: Loose; headers: Record<string, unknown> }>;
  close(): Promise<void>;
}

export interface TestOrchestratorOptions {
  dataDir?: string;
  env?: Record<string, string>;
  deps?: OrchestratorDeps;
  clock?: ManualClock;
  /** Keep the data dir on close (a second orchestrator reuses it). */
  keepDataDir?: boolean;
}

export async function newDataDir(): Promise<string> {
  return mkdtemp(path.join(tmpdir(), 'ec-orch-test-'));
}

export async function testOrchestrator(opts: TestOrchestratorOptions = {}): Promise<TestOrchestrator> {
  const dataDir = opts.dataDir ?? (await newDataDir());
  const clock = opts.clock ?? new ManualClock();
  const config = orchestratorConfig({
    ENDERCLOUD_DATA_DIR: dataDir,
    ENDERCLOUD_LISTEN: '127.0.0.1:0',
    ENDERCLOUD_AGENT_TOKEN: 'agent-token-0123456789abcdef',
    ENDERCLOUD_COMMAND_RETRY_INITIAL: '10ms',
    ENDERCLOUD_COMMAND_RETRY_MAX: '40ms',
    ENDERCLOUD_COMMAND_POLL_INTERVAL: '20ms',
    // No background stats calls to the fake agents (tests that assert call lists); instance-metrics.test.ts ticks by hand.
    ENDERCLOUD_STATS_INTERVAL: '0',
    ...(opts.env?.ENDERCLOUD_SECRET_KEY_FILE ? {} : { ENDERCLOUD_SECRET_KEY: TEST_SECRET_KEY }),
    ...opts.env,
  });
  const o = await buildOrchestrator(config, {
    clock,
    logger: silentLogger,
    runWorker: false,
    runOfflineDetector: false,
    runSupervisor: false,
    random: () => 0.5,
    ...opts.deps,
  });
  const adminToken = config.adminToken ?? (await readFile(path.join(dataDir, 'admin-token'), 'utf8')).trim();
  return {
    o,
    clock,
    dataDir,
    adminToken,
    async call(method, url, c = {}) {
      const token = c.token === undefined ? adminToken : c.token;
      const headers: Record<string, string> = { ...c.headers };
      if (token !== null) headers.authorization = `Bearer ${token}`;
      const res = await o.app.inject({
        method: method as 'GET',
        url,
        headers,
        ...(c.payload ? { payload: c.payload } : c.body !== undefined ? { payload: c.body as object } : {}),
      });
      let body: unknown = res.body;
      try {
        body = JSON.parse(res.body);
      } catch {
        /* not JSON */
      }
      return { status: res.statusCode, body, headers: res.headers };
    },
    async close() {
      await o.stop();
      if (!opts.keepDataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A fresh PostgreSQL database for one test file; drop() removes it. */
export function freshPostgres(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  return freshDatabase(prefix, PG_ADMIN_URL);
}

// ---------------------------------------------------------------- fake agent
// The REAL agent app (src/agent/app.ts) over the in-memory runtime test double
// (test/support/memory-runtime.ts), listening on 127.0.0.1 because the
// orchestrator calls agents over HTTP. `inventory` is a live, editable view of
// its containers (see inventory-mirror.ts); every call is recorded.

export interface AgentCall {
  method: string;
  path: string;
  body: Loose;
  headers: IncomingMessage['headers'];
}

export type { InventoryItem };

export interface FakeAgent {
  url: string;
  calls: AgentCall[];
  /** Live view of the managed containers: push, splice or edit items to change them behind the orchestrator's back. */
  inventory: InventoryItem[];
  /** The in-memory runtime under the agent (a test double). */
  runtime: MemoryRuntime;
  /** The agent's real runtime directory (`instances/`, `backups/` under it). */
  runtimeDirectory: string;
  /** Respond to the next N calls of a route key (e.g. "PUT /instances") with this status. */
  failNext(key: string, times: number, status?: number, code?: string): void;
  close(): Promise<void>;
}

export interface FakeAgentOptions {
  agentId?: string;
  /** The agent's game port range (the heartbeat's default is 31000-31099). */
  portRange?: { first: number; last: number };
  /** AGENT_TOKEN of the agent; default none (fronts in some tests forward calls without it). */
  token?: string;
  /** Listen on this port of 127.0.0.1 (default: any free one), e.g. to enrol its URL before it exists. */
  port?: number;
}

/** The output every simulated server prints on a start: log readiness (`Done \\(`) matches it. */
const serverOutput = (c: MemoryContainer) => `log of ${instanceOf(c) ?? c.name}\nDone (1.0s)!\n`;

export async function startFakeAgent(opts: FakeAgentOptions = {}): Promise<FakeAgent> {
  const agentId = opts.agentId ?? 'fake-agent';
  const base = await mkdtemp(path.join(tmpdir(), 'ec-fake-agent-'));
  const runtimeDirectory = path.join(base, 'runtime');
  const emptyLayer = path.join(base, 'empty-layer');
  await mkdir(emptyLayer, { recursive: true });
  const calls: AgentCall[] = [];
  const inventory: InventoryItem[] = [];
  const failures = new Map<string, { times: number; status: number; code: string }>();
  const directories = new FsRuntimeDirectories({ runtimeDirectory, runtimeHostDirectory: runtimeDirectory });
  await directories.init();
  // onChange fires only on agent calls, after `mirror` exists.
  const runtime = new MemoryRuntime({ output: serverOutput, onChange: () => mirror.sync() });
  const mirror = new InventoryMirror({ agentId, runtime, inventory, instanceDirectory: (id) => directories.localPath(id) });
  // Layers are not under test here: every layer is an empty tree.
  const layers: LayerCache = { ensure: async () => emptyLayer };
  const service = new InstanceService({
    agentId,
    orchestratorUrl: 'http://127.0.0.1:9',
    gameAddress: '127.0.0.1',
    gameBindAddress: '127.0.0.1',
    defaultStopTimeoutSeconds: 1,
    runtime,
    layers,
    directories,
    // Host ports are simulated: nothing real listens on them, so no bind probe.
    ports: new PortAllocator({
      range: opts.portRange ?? { first: 31000, last: 31099 },
      bindAddress: '127.0.0.1',
      runtime,
      probe: async () => true,
    }),
    logger: silentLogger,
    rconConnect: runtime.rconConnect,
  });
  const app = buildAgentApp({
    agentId,
    version: '0.1.0',
    token: opts.token,
    service,
    engineReachable: async () => runtime.engineUp,
    logger: silentLogger,
  });
  // Edits the test made to `inventory` since the last call reach the runtime first.
  app.addHook('onRequest', async () => mirror.sync());
  app.addHook('preValidation', async (req, reply) => {
    const p = req.url.replace(/^\/api\/v1/, '');
    const body =
      req.body !== null && typeof req.body === 'object' && typeof (req.body as { pipe?: unknown }).pipe !== 'function'
        ? req.body
        : undefined;
    calls.push({ method: req.method, path: p, body, headers: req.headers });
    const failure = failures.get(`${req.method} ${p.replace(/^\/instances\/[^/]+/, '/instances')}`);
    if (failure && failure.times > 0) {
      failure.times -= 1;
      return reply.status(failure.status).send({ error: { code: failure.code, message: 'injected failure' } });
    }
    return undefined;
  });
  await app.listen({ host: '127.0.0.1', port: opts.port ?? 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    inventory,
    runtime,
    runtimeDirectory,
    failNext(key, times, status = 503, code = 'DOCKER_ERROR') {
      failures.set(key, { times, status, code });
    },
    async close() {
      await app.close();
      await rm(base, { recursive: true, force: true });
    },
  };
}

export function heartbeatBody(controlUrl: string, overrides: Record<string, unknown> = {}) {
  return {
    controlUrl,
    gameAddress: '127.0.0.1',
    version: '0.1.0',
    resources: {
      cpuCount: 4,
      memoryTotalBytes: 4096 * 1024 * 1024,
      memoryAvailableBytes: 2048 * 1024 * 1024,
      diskFreeBytes: 10 * 1024 ** 3,
    },
    portRange: { first: 31000, last: 31099 },
    heartbeatIntervalMs: 1000,
    ...overrides,
  };
}

export const AGENT_TOKEN = 'agent-token-0123456789abcdef';

/** A small valid layer archive. */
export function layerArchive(files: Record<string, string> = { 'server.properties': 'motd=hi\n' }): Promise<Buffer> {
  return tarGzBuffer(Object.entries(files).map(([name, body]) => ({ header: { name, type: 'file' as const, mode: 0o644 }, body })));
}

/** Polls `check` until it returns a truthy value (bounded). */
export async function until<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
