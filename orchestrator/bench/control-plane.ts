// bench/control-plane: heartbeats per second one orchestrator sustains over HTTP
// (SQLite and PostgreSQL side by side, a temp PG database created and dropped),
// and placement latency over 1,000 registered hosts. The hosts are SIMULATED
// agents (bench/simulated-agents.ts), never real ones. Bounded: a few seconds per phase.
//
//   npx tsx bench/control-plane.ts            (PostgreSQL at 127.0.0.1:5432 unless BENCH_PG_URL)

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { pino } from 'pino';
import { measurePlacementLatency } from '../src/placement/placement-bench.js';
import { orchestratorConfig } from '../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../src/server/orchestrator.js';
import { startSimulatedAgents, type SimulatedAgents } from './simulated-agents.js';
import { benchConfig } from './bench-config.js';

const PG_ADMIN_URL = benchConfig.pgAdminUrl;
const HEARTBEAT_PHASE_MS = benchConfig.heartbeatPhaseMs;
const HEARTBEAT_HOSTS = 50;
const CONCURRENCY = 32;
const PLACEMENT_HOSTS = 1000;
const PLACEMENT_MAX = 300;
const TOKEN = `bench-admin-${'x'.repeat(20)}`;

interface Backend {
  name: 'SQLite' | 'PostgreSQL';
  databaseUrl: string | undefined;
}

interface Figures {
  heartbeatsPerSecond: number;
  heartbeatP50Ms: number;
  heartbeatP99Ms: number;
  heartbeatErrors: number;
  placementP50Ms: number;
  placementP99Ms: number;
  placements: number;
}

const pct = (sorted: number[], p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function api(o: Orchestrator, method: string, path: string, body?: unknown): Promise<Response> {
  const res = await fetch(`${o.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 400) throw new Error(`${method} ${path}: HTTP ${res.status} ${await res.text()}`);
  return res;
}

async function beat(o: Orchestrator, sim: SimulatedAgents, id: string): Promise<void> {
  const res = await fetch(`${o.url}/api/v1/agents/${id}/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(sim.heartbeatBody(id)),
  });
  await res.arrayBuffer();
  if (res.status >= 300) throw new Error(`heartbeat ${id}: HTTP ${res.status}`);
}

/** How often the simulated hosts beat while the bench waits for them: well inside their 10 s interval. */
const REBEAT_MS = 3000;

async function registerHosts(o: Orchestrator, sim: SimulatedAgents, prefix: string, count: number): Promise<void> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
  const beatAll = async (): Promise<void> => {
    for (let i = 0; i < ids.length; i += CONCURRENCY) await Promise.all(ids.slice(i, i + CONCURRENCY).map((id) => beat(o, sim, id)));
  };
  // Real agents keep beating while their recovery runs: a host that beat once is OFFLINE after
  // 3 intervals (30 s), and on a loaded machine 1,000 recoveries took longer than that (every
  // host OFFLINE by the deadline: "0/1000 reached ONLINE").
  const started = Date.now();
  await beatAll();
  let lastBeat = Date.now();
  const deadline = Date.now() + 60_000;
  for (;;) {
    const hosts = ((await (await api(o, 'GET', '/hosts')).json()) as { hosts: Array<{ id: string; status: string }> }).hosts.filter((h) =>
      h.id.startsWith(`${prefix}-`),
    );
    const online = hosts.filter((h) => h.status === 'ONLINE').length;
    if (online >= count) {
      process.stdout.write(
        `${count} simulated hosts (${prefix}-*) ONLINE ${((Date.now() - started) / 1000).toFixed(1)} s after their first beat\n`,
      );
      return;
    }
    if (Date.now() > deadline) {
      const counts = new Map<string, number>();
      for (const h of hosts) counts.set(h.status, (counts.get(h.status) ?? 0) + 1);
      const byStatus = [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
      throw new Error(`only ${online}/${count} simulated hosts reached ONLINE within 60 s (${byStatus})`);
    }
    if (Date.now() - lastBeat >= REBEAT_MS) {
      await beatAll();
      lastBeat = Date.now();
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function heartbeatPhase(
  o: Orchestrator,
  sim: SimulatedAgents,
): Promise<Pick<Figures, 'heartbeatsPerSecond' | 'heartbeatP50Ms' | 'heartbeatP99Ms' | 'heartbeatErrors'>> {
  const ids = Array.from({ length: HEARTBEAT_HOSTS }, (_, i) => `hb-${String(i).padStart(3, '0')}`);
  await registerHosts(o, sim, 'hb', HEARTBEAT_HOSTS);
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + HEARTBEAT_PHASE_MS;
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const id = ids[next++ % ids.length]!;
        const t = performance.now();
        try {
          await beat(o, sim, id);
          latencies.push(performance.now() - t);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    heartbeatsPerSecond: latencies.length / elapsed,
    heartbeatP50Ms: pct(latencies, 0.5),
    heartbeatP99Ms: pct(latencies, 0.99),
    heartbeatErrors: errors,
  };
}

async function placementPhase(
  o: Orchestrator,
  sim: SimulatedAgents,
): Promise<Pick<Figures, 'placementP50Ms' | 'placementP99Ms' | 'placements'>> {
  await registerHosts(o, sim, 'sim', PLACEMENT_HOSTS);
  await api(o, 'PUT', '/templates/bench/versions/1', { image: 'bench/none:1', resources: { memoryMb: 64 } });
  await api(o, 'PUT', '/groups/bench', { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'bench', version: '1' } }] });
  const latencies: number[] = [];
  const end = performance.now() + HEARTBEAT_PHASE_MS;
  while (latencies.length < PLACEMENT_MAX && performance.now() < end) {
    const t = performance.now();
    await (await api(o, 'POST', '/instances', { groupId: 'bench', variantId: 'v' })).arrayBuffer();
    latencies.push(performance.now() - t);
  }
  latencies.sort((a, b) => a - b);
  return { placementP50Ms: pct(latencies, 0.5), placementP99Ms: pct(latencies, 0.99), placements: latencies.length };
}

async function runBackend(backend: Backend, sim: SimulatedAgents): Promise<Figures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ec-bench-'));
  const env: Record<string, string> = {
    ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
    ENDERCLOUD_DATA_DIR: dataDir,
    ENDERCLOUD_ADMIN_TOKEN: TOKEN,
    ENDERCLOUD_LOG_LEVEL: 'silent',
  };
  if (backend.databaseUrl) env.ENDERCLOUD_DATABASE_URL = backend.databaseUrl;
  // The worker stays off: placement is measured up to the persisted command, not the (simulated) dispatch.
  const o = await startOrchestrator(orchestratorConfig(env), { logger: pino({ level: 'silent' }), runWorker: false });
  try {
    const hb = await heartbeatPhase(o, sim);
    const pl = await placementPhase(o, sim);
    return { ...hb, ...pl };
  } finally {
    await o.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function withTempPgDatabase<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const name = `ec_bench_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(PG_ADMIN_URL);
    url.pathname = `/${name}`;
    try {
      return await fn(url.toString());
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

async function main(): Promise<void> {
  process.stdout.write('SIMULATION: 1,000 hosts are simulated heartbeats, no real agents\n');
  process.stdout.write(
    `heartbeats: ${HEARTBEAT_HOSTS} simulated hosts, ${CONCURRENCY} concurrent HTTP clients, ${HEARTBEAT_PHASE_MS} ms per backend\n`,
  );
  const sim = await startSimulatedAgents();
  try {
    const sqlite = await runBackend({ name: 'SQLite', databaseUrl: undefined }, sim);
    const postgres = await withTempPgDatabase((url) => runBackend({ name: 'PostgreSQL', databaseUrl: url }, sim));
    const pure = measurePlacementLatency({ clock: () => performance.now(), hostCount: PLACEMENT_HOSTS, iterations: 1000 });
    const rows: [string, (f: Figures) => string][] = [
      ['heartbeats/s', (f) => fmt(f.heartbeatsPerSecond, 0)],
      ['heartbeat p50 ms', (f) => fmt(f.heartbeatP50Ms, 2)],
      ['heartbeat p99 ms', (f) => fmt(f.heartbeatP99Ms, 2)],
      ['heartbeat errors', (f) => String(f.heartbeatErrors)],
      [`POST /instances p50 ms (${PLACEMENT_HOSTS} hosts)`, (f) => fmt(f.placementP50Ms, 2)],
      [`POST /instances p99 ms (${PLACEMENT_HOSTS} hosts)`, (f) => fmt(f.placementP99Ms, 2)],
      ['placements measured', (f) => String(f.placements)],
    ];
    const w = Math.max(...rows.map(([k]) => k.length));
    process.stdout.write(`\n${'metric'.padEnd(w)}  ${'SQLite'.padStart(10)}  ${'PostgreSQL'.padStart(10)}\n`);
    for (const [k, v] of rows) process.stdout.write(`${k.padEnd(w)}  ${v(sqlite).padStart(10)}  ${v(postgres).padStart(10)}\n`);
    process.stdout.write(`\nratio PostgreSQL/SQLite heartbeats/s: ${fmt(postgres.heartbeatsPerSecond / sqlite.heartbeatsPerSecond, 2)}\n`);
    process.stdout.write(`ratio PostgreSQL/SQLite placement p50: ${fmt(postgres.placementP50Ms / sqlite.placementP50Ms, 2)}\n`);
    process.stdout.write(
      `pure placement decision over ${pure.hostCount} simulated hosts: ${fmt(pure.perPlacementUs, 1)} µs each (${pure.iterations} iterations, ${pure.strategy})\n`,
    );
  } finally {
    await sim.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/control-plane failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
