// Test harness for the agent: a tiny orchestrator stand-in on 127.0.0.1 that
// serves template layer archives and records heartbeats, and a factory that
// wires a real agent (Docker runtime, layer cache, runtime dirs) around it.

import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { buildAgentApp } from '../../src/agent/app.js';
import { DockerRuntime } from '../../src/agent/docker-runtime.js';
import { InstanceService } from '../../src/agent/instance-service.js';
import { FsLayerCache, HttpLayerSource } from '../../src/agent/layer-cache.js';
import { PortAllocator, type PortProbe } from '../../src/agent/port-allocator.js';
import { FsRuntimeDirectories } from '../../src/agent/runtime-directories.js';
import type { LayerRef } from '../../src/agent/contracts.js';
import type { PortRange } from '../../src/shared/config.js';
import { layerChecksum } from '../../src/shared/layer-checksum.js';
import { packDirectory } from '../../src/shared/safe-tar.js';
import { DOCKER_SOCKET, docker } from './docker.js';

export interface LayerFile {
  content: string | Buffer;
  mode?: number;
}

export interface HeartbeatRecord {
  agentId: string;
  at: number;
  body: Record<string, unknown>;
  /** Whether the agent's control URL answered /health while this beat was in flight. */
  agentAnswered: boolean;
}

export interface FakeOrchestrator {
  url: string;
  /** Archive downloads per layer id. */
  downloads: Map<string, number>;
  heartbeats: HeartbeatRecord[];
  addLayer(id: string, files: Record<string, LayerFile>): Promise<LayerRef>;
  /** Serves `bytes` for the layer instead of its real archive (to test rejection). */
  overrideArchive(id: string, bytes: Buffer): void;
  close(): Promise<void>;
}

export async function startFakeOrchestrator(): Promise<FakeOrchestrator> {
  const root = mkdtempSync(join(tmpdir(), 'ec-layers-'));
  const layers = new Map<string, string>();
  const overrides = new Map<string, Buffer>();
  const downloads = new Map<string, number>();
  const heartbeats: HeartbeatRecord[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const archive = /^\/api\/v1\/template-layers\/([^/]+)\/archive$/.exec(url.pathname);
    if (req.method === 'GET' && archive) {
      const id = decodeURIComponent(archive[1]!);
      downloads.set(id, (downloads.get(id) ?? 0) + 1);
      const override = overrides.get(id);
      if (override) return void res.writeHead(200, { 'content-type': 'application/gzip' }).end(override);
      const dir = layers.get(id);
      if (!dir) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/gzip' });
      packDirectory(dir).pipe(res);
      return;
    }
    const beat = /^\/api\/v1\/agents\/([^/]+)\/heartbeat$/.exec(url.pathname);
    if (req.method === 'POST' && beat) {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
        const record: HeartbeatRecord = { agentId: beat[1]!, at: Date.now(), body, agentAnswered: false };
        try {
          const health = await fetch(`${String(body.controlUrl)}/api/v1/health`, { signal: AbortSignal.timeout(1000) });
          record.agentAnswered = health.status < 500;
        } catch {
          record.agentAnswered = false;
        }
        heartbeats.push(record);
        res.writeHead(204).end();
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    downloads,
    heartbeats,
    async addLayer(id, files) {
      const dir = join(root, id);
      mkdirSync(dir, { recursive: true });
      for (const [path, f] of Object.entries(files)) {
        const full = join(dir, path);
        mkdirSync(dirname(full), { recursive: true });
        writeFileSync(full, f.content);
        chmodSync(full, f.mode ?? 0o644);
      }
      layers.set(id, dir);
      return { id, checksum: await layerChecksum(dir) };
    },
    overrideArchive(id, bytes) {
      overrides.set(id, bytes);
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => {
          rmSync(root, { recursive: true, force: true });
          r();
        });
      }),
  };
}

export interface TestAgentOptions {
  agentId: string;
  orchestratorUrl: string;
  portRange: PortRange;
  network: string;
  token?: string;
  /** Replaces the bind probe (e.g. one that is blind, like an agent in its own network namespace). */
  probe?: PortProbe;
  /**
   * Tests that call the agent themselves stand in for the orchestrator's leader:
   * this epoch is put on every call that carries none (agents refuse a mutating
   * call without one). Unset where a real orchestrator calls the agent.
   */
  leaderEpoch?: number;
}

export interface TestAgent {
  app: ReturnType<typeof buildAgentApp>;
  service: InstanceService;
  runtime: DockerRuntime;
  runtimeDirectory: string;
  cacheDirectory: string;
  /** Every structured log line the agent wrote. */
  logLines: Record<string, unknown>[];
  close(): Promise<void>;
}

export async function createTestAgent(o: TestAgentOptions): Promise<TestAgent> {
  const base = mkdtempSync(join(tmpdir(), `ec-${o.agentId}-`));
  const runtimeDirectory = join(base, 'runtime');
  const cacheDirectory = join(base, 'cache');
  mkdirSync(runtimeDirectory, { recursive: true });
  const logLines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void logLines.push(JSON.parse(s) as Record<string, unknown>) });
  const runtime = new DockerRuntime({ socketPath: DOCKER_SOCKET, network: o.network });
  const layers = new FsLayerCache({
    directory: cacheDirectory,
    source: new HttpLayerSource({ orchestratorUrl: o.orchestratorUrl, token: o.token, timeoutMs: 30_000 }),
    maxArchiveBytes: 64 * 1024 * 1024,
    maxExtractedBytes: 256 * 1024 * 1024,
    logger,
  });
  await layers.init();
  const directories = new FsRuntimeDirectories({ runtimeDirectory, runtimeHostDirectory: runtimeDirectory });
  const service = new InstanceService({
    agentId: o.agentId,
    orchestratorUrl: o.orchestratorUrl,
    gameAddress: '127.0.0.1',
    gameBindAddress: '127.0.0.1',
    defaultStopTimeoutSeconds: 1,
    runtime,
    layers,
    directories,
    ports: new PortAllocator({ range: o.portRange, bindAddress: '127.0.0.1', runtime, ...(o.probe ? { probe: o.probe } : {}) }),
    logger,
  });
  const app = buildAgentApp({
    agentId: o.agentId,
    version: 'test',
    token: o.token,
    service,
    engineReachable: () =>
      runtime.ping().then(
        () => true,
        () => false,
      ),
    logger,
  });
  if (o.leaderEpoch !== undefined) {
    const epoch = String(o.leaderEpoch);
    app.addHook('onRequest', async (req) => {
      req.headers['x-leader-epoch'] ??= epoch;
    });
  }
  return {
    app,
    service,
    runtime,
    runtimeDirectory,
    cacheDirectory,
    logLines,
    async close() {
      await app.close();
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** Linux's first ephemeral port (net.ipv4.ip_local_port_range). */
const EPHEMERAL_FIRST = 32768;

/** Slices of [20000, 32768): more than the test files vitest runs at once (vitest.config.ts: maxForks 2). */
const PORT_SLICES = 4;
const PORT_SLICE_SIZE = Math.floor((EPHEMERAL_FIRST - 20000) / PORT_SLICES / 10) * 10;
/** This process's slice: one per vitest worker (VITEST_POOL_ID 1, 2, …), so files running alongside never share a port. */
const PORT_SLICE_FIRST = 20000 + ((Number(process.env.VITEST_POOL_ID ?? '1') - 1) % PORT_SLICES) * PORT_SLICE_SIZE;
/** Where the next block starts in the slice: consecutive blocks from a random start (the files a worker runs one after another differ too). */
let nextPortOffset = Math.floor((Math.random() * PORT_SLICE_SIZE) / 10) * 10;

/**
 * A game-port range for a test agent, below Linux's ephemeral range
 * (32768+): ports handed out by the kernel (listen on 0, freePort) can then
 * never be the ones Docker publishes for an agent. Each vitest worker takes
 * its blocks from its own slice, and one process's blocks never overlap, so
 * two agents running at once never share a port. (Random blocks over the
 * whole range once collided: a world stopped for a restore found its port
 * published by another file's agent.)
 */
export function randomPortRange(size: number): PortRange {
  const span = Math.ceil(size / 10) * 10;
  if (span > PORT_SLICE_SIZE) throw new Error(`randomPortRange: ${size} ports do not fit in a slice of ${PORT_SLICE_SIZE}`);
  if (nextPortOffset + span > PORT_SLICE_SIZE) nextPortOffset = 0;
  const first = PORT_SLICE_FIRST + nextPortOffset;
  nextPortOffset += span;
  return { first, last: first + size - 1 };
}

export async function removeNetwork(name: string): Promise<void> {
  await docker()
    .getNetwork(name)
    .remove()
    .catch(() => undefined);
}
