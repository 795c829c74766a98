// Benchmark `npm run bench:scale`: the control plane at size — a LABELLED
// SIMULATION. 1,000 simulated agents (bench/simulated-agents.ts, one in-process
// HTTP server, no Docker) and 10,000 store-level instances against one real
// orchestrator on the real PostgreSQL (a temporary database, dropped at the end).
// Measures, each against its goal (issue 13 "Cost that grows with changes"):
//   - heartbeat ingest over HTTP, as agents send it (with the inventory digest);
//   - a full reconcile pass: the production Supervisor.tick() over every host;
//   - placement p99: the production placeInstance() over the 1,000 stored hosts;
//   - allocation from a warm buffer (the bench:fleet measure) at that size.
//   npx tsx bench/scale.ts [heartbeat,reconcile,placement,allocation]   knobs: BENCH_PG_URL, BENCH_PHASE_MS, BENCH_FLEET_CLIENTS, BENCH_FLEET_ALLOCATIONS
// Bounded: the whole run aborts (and cleans up) after 10 minutes (about 4 on a quiet 2-core machine).

import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { pino } from 'pino';
import type { Host } from '../src/domain/index.js';
import { placeInstance, type PlacementHost } from '../src/placement/placement.js';
import { systemClock } from '../src/server/clock.js';
import { orchestratorConfig } from '../src/server/config.js';
import { buildOrchestrator, type Orchestrator } from '../src/server/orchestrator.js';
import { loadMasterKey } from '../src/server/secrets/master-key.js';
import { SecretBox } from '../src/server/secrets/secret-box.js';
import { toRow } from '../src/store/repos/instance-rows.js';
import type { Store } from '../src/store/store.js';
import { group, instance, templateVersion } from '../test/store/fixtures.js';
import { freshDatabase } from '../test/support/postgres.js';
import { allocationLoadInChild } from './allocation-clients.js';
import { benchConfig } from './bench-config.js';
import { startSimulatedAgents, type SimulatedAgents } from './simulated-agents.js';

const HOSTS = 1000;
const INSTANCES = 10_000;
const BUFFER = benchConfig.fleetBuffer;
const HEARTBEAT_CLIENTS = 64;
const HEARTBEAT_PHASE_MS = Math.max(benchConfig.heartbeatPhaseMs, 5000);
const RECONCILE_PASSES = 3;
const PLACEMENTS = 2000;
const REGISTRY_CHANGES = 40;
/**
 * bench:fleet's count (default 2,000; BENCH_FLEET_ALLOCATIONS), after ALLOCATION_WARMUP unmeasured
 * ones: with 500 measured after 100, the figure was mostly the JIT warming up (2.2 instead of 1.5 ms
 * of CPU per cycle; bench:fleet warms it with its SQLite run first).
 */
const ALLOCATIONS = benchConfig.fleetAllocations;
const ALLOCATION_WARMUP = 500;
const TOKEN = 'bench-scale-admin-0123456789abcdef';
const AGENT_TOKEN = 'bench-scale-agent-0123456789abcdef';
const RUN_LIMIT_MS = 10 * 60_000;
const ALL_PHASES = ['heartbeat', 'reconcile', 'placement', 'registry', 'allocation'];
/** `npx tsx bench/scale.ts heartbeat,allocation` runs only those phases (default all). */
const PHASES = new Set((process.argv[2] ?? ALL_PHASES.join(',')).split(','));
for (const p of PHASES) if (!ALL_PHASES.includes(p)) throw new Error(`bench:scale: unknown phase "${p}" (${ALL_PHASES.join(', ')})`);

const pct = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const sortedCopy = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);
const hostId = (n: number): string => `scale-host-${String(n).padStart(4, '0')}`;

interface Goal {
  figure: string;
  measured: string;
  goal: string;
  met: boolean;
  /** measured / goal, oriented so that > 1 is worse than the goal. */
  load: number;
}

const toClean: Array<() => Promise<void>> = [];

async function cleanup(): Promise<void> {
  for (const c of toClean.splice(0).reverse()) await c().catch((err: unknown) => console.error(`cleanup: ${(err as Error).message}`));
}

async function tempDatabase(): Promise<string> {
  const db = await freshDatabase('ec_bench_scale', benchConfig.pgAdminUrl);
  toClean.push(() => db.drop());
  return db.url;
}

// The heartbeat clients run in a child process (plain node:http, keep-alive),
// so this process's CPU time during the phase is the orchestrator's alone.
const HEARTBEAT_CLIENT = `
const http = require('node:http');
let input = '';
process.stdin.on('data', (c) => { input += c; });
process.stdin.on('end', async () => {
  const { port, bodies, clients, durationMs, token } = JSON.parse(input);
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const latencies = [];
  let errors = 0, next = 0, firstError = null;
  const beat = (i) => new Promise((resolve) => {
    const t = performance.now();
    const req = http.request({ host: '127.0.0.1', port, agent, method: 'POST', path: '/api/v1/agents/' + bodies[i][0] + '/heartbeat',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(bodies[i][1]), authorization: 'Bearer ' + token } }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode >= 300) { errors++; firstError ??= 'HTTP ' + res.statusCode; } else latencies.push(performance.now() - t);
        resolve();
      });
    });
    req.on('error', (e) => { errors++; firstError ??= e.message; resolve(); });
    req.end(bodies[i][1]);
  });
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < end) await beat(next++ % bodies.length);
  }));
  const elapsedMs = performance.now() - start;
  agent.destroy();
  process.stdout.write(JSON.stringify({ latencies, errors, firstError, elapsedMs }));
});
`;

interface HeartbeatRun {
  latencies: number[];
  errors: number;
  firstError: string | null;
  elapsedMs: number;
  serverCpuMs: number;
}

async function heartbeatLoad(port: number, bodies: Array<[string, string]>, durationMs: number): Promise<HeartbeatRun> {
  const child = spawn(process.execPath, ['-e', HEARTBEAT_CLIENT], { stdio: ['pipe', 'pipe', 'inherit'] });
  const kill = async (): Promise<void> => void (child.exitCode === null && child.kill('SIGKILL'));
  toClean.push(kill);
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const cpu = process.cpuUsage();
  child.stdin.end(JSON.stringify({ port, bodies, clients: HEARTBEAT_CLIENTS, durationMs, token: AGENT_TOKEN }));
  const code = await exited;
  const used = process.cpuUsage(cpu);
  if (code !== 0) throw new Error(`heartbeat client process exited with ${code}`);
  return { ...(JSON.parse(out) as Omit<HeartbeatRun, 'serverCpuMs'>), serverCpuMs: (used.user + used.system) / 1000 };
}

async function registerHosts(o: Orchestrator, baseUrl: string, sim: SimulatedAgents): Promise<void> {
  for (let i = 0; i < HOSTS; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, HOSTS - i) }, async (_, k) => {
        const id = hostId(i + k);
        const res = await fetch(`${baseUrl}/api/v1/agents/${id}/heartbeat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${AGENT_TOKEN}` },
          body: JSON.stringify(sim.heartbeatBody(id)),
        });
        await res.arrayBuffer();
        if (res.status >= 300) throw new Error(`registering ${id}: HTTP ${res.status}`);
      }),
    );
  }
  await o.ctx.hosts.whenIdle();
  const counts = await o.store.hosts.countByStatus();
  if (counts.ONLINE !== HOSTS) throw new Error(`only ${counts.ONLINE}/${HOSTS} simulated hosts reached ONLINE after recovery`);
}

/**
 * 10,000 online instances written straight into the database (a STORE-LEVEL
 * fixture, as bench:fleet's buffer), 10 per host, each with the running
 * container its simulated agent lists: `arena` is the allocation buffer, the
 * rest fill group `scale`.
 */
async function seedInstances(store: Store, databaseUrl: string, dataDir: string, sim: SimulatedAgents, now: number): Promise<void> {
  await store.templates.create(templateVersion('paper', '1.0.0'));
  for (const id of ['arena', 'scale']) {
    await store.groups.put(group(id, { kind: 'ephemeral', caps: { maxInstances: INSTANCES + 100 }, createdAt: now, updatedAt: now }));
  }
  // Rows in the store's own encoding (toRow, secrets sealed under the orchestrator's key file), 500 per multi-row INSERT: seeding is setup, not what is measured.
  const secrets = { codec: SecretBox.fromMasterKey(await loadMasterKey({ dataDir })) };
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    for (let start = 0; start < INSTANCES; start += 500) {
      const rows: Array<Record<string, unknown>> = [];
      for (let n = start; n < Math.min(INSTANCES, start + 500); n++) {
        const groupId = n < BUFFER ? 'arena' : 'scale';
        const id = `${groupId}-i${String(n).padStart(5, '0')}`;
        const host = hostId(n % HOSTS);
        const port = 30000 + Math.floor(n / HOSTS);
        const row = instance(id, {
          name: id,
          groupId,
          hostId: host,
          state: 'online',
          desiredState: 'running',
          stateChangedAt: now,
          memoryMb: 512,
          observed: { container: 'running', observedAt: now },
          endpoint: { host: '127.0.0.1', port },
          hostPort: port,
          players: { online: 0, max: 20, at: now },
          createdAt: now,
          updatedAt: now,
        });
        rows.push(toRow({ ...row, version: 1 }, secrets) as Record<string, unknown>);
        sim.putContainer(host, {
          instanceId: id,
          containerId: `sim-${id}`,
          containerName: `endercloud-sim-${id}`,
          hostPort: port,
          endpoint: `127.0.0.1:${port}`,
          state: 'running',
          groupId,
          variantId: row.variantId,
          sessionId: null,
          image: row.containerConfig.image,
          labels: row.containerConfig.labels,
        });
      }
      const columns = Object.keys(rows[0]!);
      const params: unknown[] = [];
      const tuples = rows.map((r) => `(${columns.map((c) => `$${params.push(r[c] ?? null)}`).join(', ')})`);
      await db.query(`insert into instances (${columns.join(', ')}) values ${tuples.join(', ')}`, params);
    }
  } finally {
    await db.end();
  }
}

async function heartbeatPhase(port: number, sim: SimulatedAgents): Promise<Goal & { detail: string }> {
  const bodies: Array<[string, string]> = Array.from({ length: HOSTS }, (_, n) => [
    hostId(n),
    JSON.stringify(sim.heartbeatBody(hostId(n))),
  ]);
  await heartbeatLoad(port, bodies, 1000); // warm-up: the new digests land, statement caches fill
  const run = await heartbeatLoad(port, bodies, HEARTBEAT_PHASE_MS);
  const perSecond = (run.latencies.length * 1000) / run.elapsedMs;
  const s = sortedCopy(run.latencies);
  return {
    figure: `heartbeat ingest (${HOSTS} agents, ${HEARTBEAT_CLIENTS} connections)`,
    goal: '>= 5000/s',
    met: perSecond >= 5000 && run.errors === 0,
    load: 5000 / perSecond,
    measured: `${perSecond.toFixed(0)}/s`,
    detail:
      `p50 ${pct(s, 50).toFixed(2)} ms, p99 ${pct(s, 99).toFixed(2)} ms, ${run.latencies.length} beats, ${run.errors} errors${run.firstError ? ` (first: ${run.firstError})` : ''}; ` +
      `orchestrator CPU ${((run.serverCpuMs * 1000) / Math.max(1, run.latencies.length)).toFixed(0)} µs per beat (one core: ${((run.latencies.length * 1000) / Math.max(1, run.serverCpuMs)).toFixed(0)}/s)`,
  };
}

async function reconcilePhase(o: Orchestrator): Promise<Goal[]> {
  const times: number[] = [];
  const cpuMs: number[] = [];
  for (let i = 0; i < 1 + RECONCILE_PASSES; i++) {
    const cpu = process.cpuUsage();
    const t = performance.now();
    await o.supervisor.tick();
    times.push(performance.now() - t);
    const used = process.cpuUsage(cpu);
    cpuMs.push((used.user + used.system) / 1000);
  }
  console.log(
    `  reconcile: process CPU per pass ${cpuMs.map((c) => c.toFixed(0)).join(', ')} ms (cold first; the simulated agents' share included: they run in this process)`,
  );
  const cold = times[0]!;
  const warm = sortedCopy(times.slice(1));
  const worstWarm = warm[warm.length - 1]!;
  return [
    {
      figure: `reconcile pass, every inventory read (${HOSTS} hosts, ${INSTANCES} instances)`,
      goal: '<= 1000 ms',
      met: cold <= 1000,
      load: cold / 1000,
      measured: `${cold.toFixed(0)} ms`,
    },
    {
      figure: 'reconcile pass, digests unchanged (steady state)',
      goal: '<= 1000 ms',
      met: worstWarm <= 1000,
      load: worstWarm / 1000,
      measured: `${worstWarm.toFixed(0)} ms (worst of ${RECONCILE_PASSES}; ${warm.map((t) => t.toFixed(0)).join(', ')})`,
    },
  ];
}

/** The production placement function over the 1,000 stored hosts, in the shape the instance creator gives it. */
async function placementPhase(store: Store): Promise<Goal> {
  const hosts: Host[] = await store.hosts.list({ statuses: ['ONLINE'] });
  const byHost = new Map<string, number>();
  for (const i of await store.instances.list({ groupId: 'scale' })) if (i.hostId) byHost.set(i.hostId, (byHost.get(i.hostId) ?? 0) + 1);
  const placement: PlacementHost[] = hosts.map((h) => ({
    id: h.id,
    status: h.status,
    memoryMb: h.resources.memoryMb,
    memoryReservedMb: h.memoryReservedMb,
    groupCounts: { scale: byHost.get(h.id) ?? 0 },
  }));
  const times: number[] = [];
  let placed = 0;
  for (let i = 0; i < PLACEMENTS; i++) {
    const strategy = i % 2 === 0 ? 'packed' : 'distributed';
    const t = performance.now();
    if (placeInstance(placement, { groupId: 'scale', memoryMb: 512 * (1 + (i % 8)) }, strategy).ok) placed++;
    times.push(performance.now() - t);
  }
  const s = sortedCopy(times);
  const p99 = pct(s.slice(100), 99); // the first 100 warm the JIT
  return {
    figure: `placement decision (placeInstance over ${hosts.length} hosts)`,
    goal: '<= 1 ms p99',
    met: p99 <= 1,
    load: p99 / 1,
    measured: `p99 ${(p99 * 1000).toFixed(0)} µs, p50 ${(pct(s, 50) * 1000).toFixed(0)} µs (${placed}/${PLACEMENTS} placed, packed and distributed)`,
  };
}

/**
 * A router's view at size: the production registry feed with one subscriber
 * (what a router's stream is), then an instance change (maintenance on, then
 * off) timed from the write to the feed's upsert event for it.
 */
async function registryPhase(o: Orchestrator): Promise<Goal> {
  const feed = o.ctx.registry;
  const waiting = new Map<string, () => void>();
  const unsubscribe = feed.subscribe((e) => {
    if (e.kind === 'upsert') waiting.get(e.backend.instanceId)?.();
  });
  try {
    let t = performance.now();
    const view = await feed.snapshot();
    const first = performance.now() - t;
    console.log(`  registry: first full view ${first.toFixed(0)} ms, ${view.backends.length} backends`);
    const times: number[] = [];
    const cpu = process.cpuUsage();
    for (let i = 0; i < REGISTRY_CHANGES; i++) {
      // Each instance twice: maintenance on, then off again.
      const id = `scale-i${String(BUFFER + 1 + Math.floor(i / 2)).padStart(5, '0')}`;
      const seen = new Promise<void>((resolve) => waiting.set(id, resolve));
      t = performance.now();
      await o.ctx.lifecycle.setInstanceMaintenance(id, i % 2 === 0, 'bench');
      await seen;
      times.push(performance.now() - t);
      waiting.delete(id);
    }
    const used = process.cpuUsage(cpu);
    const s = sortedCopy(times);
    const p99 = pct(s, 99);
    return {
      figure: `registry: an instance change seen by a subscribed router feed (${INSTANCES} instances)`,
      goal: '<= 100 ms',
      met: p99 <= 100,
      load: p99 / 100,
      measured: `p99 ${p99.toFixed(1)} ms, p50 ${pct(s, 50).toFixed(1)} ms (n=${times.length}; first full view ${first.toFixed(0)} ms; process CPU ${((used.user + used.system) / 1000 / times.length).toFixed(1)} ms per change)`,
    };
  } finally {
    unsubscribe();
  }
}

async function allocationPhase(baseUrl: string): Promise<Goal[]> {
  // The clients run in their own process (bench/allocation-clients.ts), as bench:fleet's do.
  const load = {
    baseUrl,
    token: TOKEN,
    groupId: 'arena',
    clients: benchConfig.fleetClients,
    total: ALLOCATIONS,
    warmup: ALLOCATION_WARMUP,
  };
  let cpu = process.cpuUsage();
  const run = await allocationLoadInChild(load, () => {
    cpu = process.cpuUsage();
  });
  const used = process.cpuUsage(cpu);
  if (run.overlaps.length > 0) throw new Error(`double allocation: ${run.overlaps.join('; ')}`);
  const ok = sortedCopy(run.answers.filter((a) => a.status === 201).map((a) => a.latencyMs));
  const perSecond = (ok.length * 1000) / run.elapsedMs;
  const paced = await allocationLoadInChild(
    { ...load, clients: benchConfig.fleetClients * 4, ratePerSecond: benchConfig.fleetRate },
    () => undefined,
  );
  const pacedOk = sortedCopy(paced.answers.filter((a) => a.status === 201).map((a) => a.latencyMs));
  const p99 = pct(pacedOk, 99);
  return [
    {
      figure: `allocation p99 at ${benchConfig.fleetRate}/s offered (open loop, buffer ${BUFFER})`,
      goal: '<= 20 ms',
      met: p99 <= 20,
      load: p99 / 20,
      measured: `${p99.toFixed(1)} ms (p50 ${pct(pacedOk, 50).toFixed(1)} ms, achieved ${((pacedOk.length * 1000) / paced.elapsedMs).toFixed(0)}/s, ${paced.late} late starts; the clients' own CPU ${paced.clientCpuMsPerAllocation.toFixed(2)} ms per allocate + release)`,
    },
    {
      figure: `allocation throughput (${benchConfig.fleetClients} clients back to back, allocate + release cycles)`,
      goal: '>= 500/s',
      met: perSecond >= 500,
      load: 500 / perSecond,
      measured: `${perSecond.toFixed(0)}/s (n=${ok.length}, 409s=${run.answers.length - ok.length}, p99 ${pct(ok, 99).toFixed(1)} ms at saturation; orchestrator CPU ${((used.user + used.system) / 1000 / Math.max(1, ok.length)).toFixed(2)} ms per allocate + release)`,
    },
  ];
}

async function main(): Promise<void> {
  console.log(
    `SIMULATION: ${HOSTS} simulated agents (in-process HTTP, no Docker) and ${INSTANCES} store-level instances against one real orchestrator on PostgreSQL`,
  );
  const databaseUrl = await tempDatabase();
  const sim = await startSimulatedAgents({ inventoryDigests: true });
  toClean.push(() => sim.close());
  const dataDir = mkdtempSync(join(tmpdir(), 'ec-bench-scale-'));
  toClean.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  // Loops off: each phase calls the production code itself (the supervisor's tick, the allocation route).
  const o = await buildOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_DATA_DIR: dataDir,
      ENDERCLOUD_LISTEN: '127.0.0.1:0',
      ENDERCLOUD_ADMIN_TOKEN: TOKEN,
      ENDERCLOUD_AGENT_TOKEN: AGENT_TOKEN,
      ENDERCLOUD_LOG_LEVEL: 'error',
      ENDERCLOUD_DATABASE_URL: databaseUrl,
      // The per-container stats loop (one call per host every 15 s) would poll the simulated agents inside this process.
      ENDERCLOUD_STATS_INTERVAL: '0',
    }),
    {
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      runProvisioner: false,
      runSupervisor: false,
      runOfflineDetector: false,
      runWorker: false,
      runBackupScheduler: false,
    },
  );
  toClean.push(() => o.stop());
  await o.app.listen({ host: '127.0.0.1', port: 0 });
  const port = (o.app.server.address() as AddressInfo).port;
  const baseUrl = `http://127.0.0.1:${port}`;

  let t = performance.now();
  await registerHosts(o, baseUrl, sim);
  await seedInstances(o.store, databaseUrl, dataDir, sim, Date.now());
  console.log(
    `setup: ${HOSTS} hosts registered (recovered to ONLINE) and ${INSTANCES} instances seeded in ${((performance.now() - t) / 1000).toFixed(1)} s; load average ${loadAverage()}`,
  );

  const results: Goal[] = [];
  const record = (goals: Goal[]): void => {
    results.push(...goals);
    for (const g of goals) console.log(`  ${g.figure}: ${g.measured}`);
  };
  t = performance.now();
  if (PHASES.has('heartbeat')) {
    const hb = await heartbeatPhase(port, sim);
    record([hb]);
    console.log(`  heartbeats: ${hb.detail}; the clients run in a child process`);
  }
  if (PHASES.has('reconcile')) record(await reconcilePhase(o));
  if (PHASES.has('placement')) record([await placementPhase(o.store)]);
  if (PHASES.has('registry')) record([await registryPhase(o)]);
  if (PHASES.has('allocation')) record(await allocationPhase(baseUrl));
  console.log(`phases took ${((performance.now() - t) / 1000).toFixed(1)} s; load average ${loadAverage()}\n`);

  const w = Math.max(...results.map((r) => r.figure.length));
  for (const r of results) console.log(`${r.figure.padEnd(w)}  ${r.measured}  goal ${r.goal}  ${r.met ? 'met' : 'NOT MET'}`);
  const worst = [...results].sort((a, b) => b.load - a.load)[0]!;
  console.log(
    `\nbreaks first: ${worst.figure} at ${(worst.load * 100).toFixed(0)} % of its goal's budget${worst.met ? ' (still within it)' : ''}`,
  );
}

function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
}

const limit = setTimeout(() => {
  console.error(`bench:scale: exceeded ${RUN_LIMIT_MS / 60_000} minutes; cleaning up`);
  void cleanup().finally(() => process.exit(1));
}, RUN_LIMIT_MS);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanup().finally(() => process.exit(130)));
main().then(
  async () => {
    clearTimeout(limit);
    await cleanup();
    process.exit(0);
  },
  async (err: unknown) => {
    console.error(err);
    await cleanup();
    process.exit(1);
  },
);
