// Server route-test support: an orchestrator over a real store in a temp dir
// (SQLite, or a fresh PostgreSQL database), a manual clock, and a tiny in-test
// agent on 127.0.0.1 that answers the agent API and records every call.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { ManualClock } from '../../src/server/clock.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { buildOrchestrator, type Orchestrator, type OrchestratorDeps } from '../../src/server/orchestrator.js';
import { tarGzBuffer } from '../support/malicious-tar.js';

/** Parsed JSON answers in tests: shape checked by the assertions, not the compiler. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Loose = any;

export const silentLogger = pino({ level: 'silent' });
export const PG_ADMIN_URL = process.env.ENDERCLOUD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestOrchestrator {
  o: Orchestrator;
  clock: ManualClock;
  dataDir: string;
  adminToken: string;
  /** inject() with the admin token unless `token` is given (null: none). */
  call(method: string, url: string, opts?: { body?: unknown; token?: string | null; headers?: Record<string, string>; payload?: Buffer }): Promise<{ status: number; body: Loose; headers: Record<string, unknown> }>;
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
    ...opts.env,
  });
  const o = await buildOrchestrator(config, { clock, logger: silentLogger, runWorker: false, runOfflineDetector: false, runSupervisor: false, random: () => 0.5, ...opts.deps });
  const adminToken = config.adminToken ?? (await readFile(path.join(dataDir, 'admin-token'), 'utf8')).trim();
  return {
    o, clock, dataDir, adminToken,
    async call(method, url, c = {}) {
      const token = c.token === undefined ? adminToken : c.token;
      const headers: Record<string, string> = { ...c.headers };
      if (token !== null) headers.authorization = `Bearer ${token}`;
      const res = await o.app.inject({
        method: method as 'GET', url, headers,
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
export async function freshPostgres(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`.replace(/[^a-z0-9_]/g, '_');
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: PG_ADMIN_URL });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`create database ${name}`);
  const base = new URL(PG_ADMIN_URL);
  base.pathname = `/${name}`;
  return { url: base.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

// ---------------------------------------------------------------- fake agent

export interface AgentCall {
  method: string;
  path: string;
  body: Loose;
  headers: IncomingMessage['headers'];
}

export interface InventoryItem {
  instanceId: string;
  containerId?: string;
  groupId?: string | null;
  variantId?: string | null;
  state?: string;
  hostPort?: number | null;
  exitCode?: number | null;
  image?: string;
  labels?: Record<string, string>;
}

export interface FakeAgent {
  url: string;
  calls: AgentCall[];
  inventory: InventoryItem[];
  /** Respond to the next N calls of a route key (e.g. "PUT /instances") with this status. */
  failNext(key: string, times: number, status?: number, code?: string): void;
  close(): Promise<void>;
}

export async function startFakeAgent(): Promise<FakeAgent> {
  const calls: AgentCall[] = [];
  const inventory: InventoryItem[] = [];
  const failures = new Map<string, { times: number; status: number; code: string }>();
  let nextPort = 31000;
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const view = (i: InventoryItem) => ({
    instanceId: i.instanceId, containerId: i.containerId ?? `c-${i.instanceId}`, containerName: `endercloud-${i.variantId ?? 'v'}-${i.instanceId}`,
    groupId: i.groupId ?? null, variantId: i.variantId ?? null, sessionId: null, hostPort: i.hostPort ?? null,
    endpoint: i.hostPort ? `127.0.0.1:${i.hostPort}` : null, state: i.state ?? 'running',
    exitCode: i.exitCode ?? (i.state === 'exited' ? 0 : null), oomKilled: false, image: i.image ?? 'busybox:1', ...(i.labels ? { labels: i.labels } : {}),
  });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const body = raw ? JSON.parse(raw) : undefined;
      const p = (req.url ?? '').replace(/^\/api\/v1/, '');
      calls.push({ method: req.method ?? '', path: p, body, headers: req.headers });
      const key = `${req.method} ${p.replace(/^\/instances\/[^/]+/, '/instances')}`;
      const failure = failures.get(key);
      if (failure && failure.times > 0) {
        failure.times -= 1;
        return send(res, failure.status, { error: { code: failure.code, message: 'injected failure' } });
      }
      if (req.method === 'GET' && p === '/instances') return send(res, 200, { instances: inventory.map(view) });
      const m = /^\/instances\/([^/]+)$/.exec(p);
      if (req.method === 'PUT' && m) {
        const id = decodeURIComponent(m[1]!);
        let item = inventory.find((i) => i.instanceId === id);
        if (!item) {
          item = { instanceId: id, groupId: body.groupId, variantId: body.variantId, hostPort: nextPort++, state: 'running', image: body.image };
          inventory.push(item);
        }
        return send(res, 200, view(item));
      }
      if (req.method === 'POST' && p === '/cleanup') {
        const removed: string[] = [];
        for (const id of body.instanceIds as string[]) {
          const idx = inventory.findIndex((i) => i.instanceId === id);
          if (idx >= 0) {
            inventory.splice(idx, 1);
            removed.push(id);
          }
        }
        return send(res, 200, { removed, skipped: [], notFound: [] });
      }
      if (req.method === 'GET' && m) {
        const item = inventory.find((i) => i.instanceId === decodeURIComponent(m[1]!));
        return item ? send(res, 200, view(item)) : send(res, 404, { error: { code: 'INSTANCE_NOT_FOUND', message: 'no such instance' } });
      }
      if (req.method === 'DELETE' && m) {
        const idx = inventory.findIndex((i) => i.instanceId === decodeURIComponent(m[1]!));
        if (idx >= 0) inventory.splice(idx, 1);
        return send(res, 200, { instanceId: decodeURIComponent(m[1]!), containerRemoved: idx >= 0, directoryRemoved: body?.keepData === false });
      }
      const logs = /^\/instances\/([^/]+)\/logs/.exec(p);
      if (req.method === 'GET' && logs) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(`log of ${decodeURIComponent(logs[1]!)}\nDone (1.0s)!\n`);
      }
      const power = /^\/instances\/([^/]+)\/(start|stop|pause|unpause|replace)$/.exec(p);
      if (req.method === 'POST' && power) {
        const item = inventory.find((i) => i.instanceId === decodeURIComponent(power[1]!));
        if (!item) return send(res, 404, { error: { code: 'INSTANCE_NOT_FOUND', message: 'no such instance' } });
        if (power[2] === 'stop') {
          item.state = 'exited';
          item.exitCode = 0;
          return send(res, 200, { state: 'exited', method: body?.rcon ? 'rcon' : 'signal', killed: false, exitCode: 0 });
        }
        if (power[2] === 'replace') {
          item.image = body.image;
          item.state = body.start ? 'running' : 'created';
          return send(res, 200, { ...view(item), replaced: true, previousContainerId: item.containerId ?? null, stop: null });
        }
        item.state = power[2] === 'pause' ? 'paused' : 'running';
        return send(res, 200, view(item));
      }
      return send(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${p}` } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    inventory,
    failNext(key, times, status = 503, code = 'DOCKER_ERROR') {
      failures.set(key, { times, status, code });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function heartbeatBody(controlUrl: string, overrides: Record<string, unknown> = {}) {
  return {
    controlUrl,
    gameAddress: '127.0.0.1',
    version: '0.1.0',
    resources: { cpuCount: 4, memoryTotalBytes: 4096 * 1024 * 1024, memoryAvailableBytes: 2048 * 1024 * 1024, diskFreeBytes: 10 * 1024 ** 3 },
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
export async function until<T>(check: () => Promise<T | undefined | false> | T | undefined | false, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
