// Bench part (a): allocation latency and allocations/s over the HTTP API from
// a warm buffer. A LABELLED SIMULATION: the buffer is store-level online
// instances (no containers), which is all allocation reads. The clients run in
// a child process (bench/allocation-clients.ts); this process only serves.
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { systemClock } from '../src/server/clock.js';
import { orchestratorConfig } from '../src/server/config.js';
import { buildOrchestrator } from '../src/server/orchestrator.js';
import { seedOnlineBuffer } from '../test/support/fleet-buffer.js';
import { freshDatabase } from '../test/support/postgres.js';
import { allocationLoadInChild } from './allocation-clients.js';
import { benchConfig } from './bench-config.js';

const TOKEN = 'bench-fleet-admin-0123456789abcdef';
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

export interface AllocationFigures {
  dialect: string;
  /** Closed loop (fleetClients clients back to back): the most allocations/s, and latency at saturation. */
  saturated: {
    p50: number;
    p99: number;
    perSecond: number;
    count: number;
    conflicts: number;
    cpuMsPerCycle: number;
    clientCpuMsPerCycle: number;
  };
  /** Open loop at fleetRate allocations/s: latency at that offered rate. */
  paced: {
    rate: number;
    p50: number;
    p99: number;
    perSecond: number;
    count: number;
    conflicts: number;
    late: number;
    clientCpuMsPerCycle: number;
  };
}

async function withPostgres<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const db = await freshDatabase('ec_bench_fleet', benchConfig.pgAdminUrl);
  try {
    return await fn(db.url);
  } finally {
    await db.drop();
  }
}

async function measure(dialect: 'sqlite' | 'postgres', databaseUrl?: string): Promise<AllocationFigures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ec-bench-fleet-'));
  const o = await buildOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_DATA_DIR: dataDir,
      ENDERCLOUD_LISTEN: '127.0.0.1:0',
      ENDERCLOUD_ADMIN_TOKEN: TOKEN,
      ENDERCLOUD_LOG_LEVEL: 'error',
      ...(databaseUrl ? { ENDERCLOUD_DATABASE_URL: databaseUrl } : {}),
    }),
    {
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      runProvisioner: false,
      runSupervisor: false,
      runOfflineDetector: false,
      runWorker: false,
    },
  );
  try {
    await o.app.listen({ host: '127.0.0.1', port: 0 });
    const baseUrl = `http://127.0.0.1:${(o.app.server.address() as AddressInfo).port}`;
    await seedOnlineBuffer(o.store, { groupId: 'bench', size: benchConfig.fleetBuffer, now: Date.now() });
    const load = {
      baseUrl,
      token: TOKEN,
      groupId: 'bench',
      clients: benchConfig.fleetClients,
      total: benchConfig.fleetAllocations,
      warmup: 100,
    };
    let cpu = process.cpuUsage();
    const run = await allocationLoadInChild(load, () => {
      cpu = process.cpuUsage();
    });
    const used = process.cpuUsage(cpu);
    if (run.overlaps.length > 0) throw new Error(`double allocation: ${run.overlaps.join('; ')}`);
    const ok = run.answers.filter((a) => a.status === 201).map((a) => a.latencyMs);
    // Open loop: at most 4x the closed loop's clients in flight, so a server slower than the rate shows as late starts.
    const paced = await allocationLoadInChild(
      { ...load, clients: benchConfig.fleetClients * 4, ratePerSecond: benchConfig.fleetRate },
      () => undefined,
    );
    const pacedOk = paced.answers.filter((a) => a.status === 201).map((a) => a.latencyMs);
    return {
      dialect,
      saturated: {
        p50: pct(ok, 50),
        p99: pct(ok, 99),
        perSecond: (ok.length * 1000) / run.elapsedMs,
        count: ok.length,
        conflicts: run.answers.length - ok.length,
        cpuMsPerCycle: (used.user + used.system) / 1000 / ok.length,
        clientCpuMsPerCycle: run.clientCpuMsPerAllocation,
      },
      paced: {
        rate: benchConfig.fleetRate,
        p50: pct(pacedOk, 50),
        p99: pct(pacedOk, 99),
        perSecond: (pacedOk.length * 1000) / paced.elapsedMs,
        count: pacedOk.length,
        conflicts: paced.answers.length - pacedOk.length,
        late: paced.late,
        clientCpuMsPerCycle: paced.clientCpuMsPerAllocation,
      },
    };
  } finally {
    await o.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function allocationBench(): Promise<AllocationFigures[]> {
  const figures = [await measure('sqlite')];
  figures.push(await withPostgres((url) => measure('postgres', url)));
  console.log(
    `(a) allocation over the HTTP API from a warm buffer — SIMULATION: the buffer is ${benchConfig.fleetBuffer} store-level online instances (no containers; allocation reads only the store)`,
  );
  console.log(
    `    ${benchConfig.fleetClients} concurrent clients on 127.0.0.1 in a separate process (bench/allocation-clients.ts), each POST /allocations then DELETE /allocations/:id; allocations/s counts allocations over the whole run (releases included)`,
  );
  console.log(
    `    saturated (${benchConfig.fleetClients} clients back to back): the most allocations/s; latency here is queueing (clients / rate)`,
  );
  for (const f of figures) {
    const x = f.saturated;
    console.log(
      `    ${f.dialect.padEnd(9)} ${x.perSecond.toFixed(0)} allocations/s (goal >= 500)  p50 ${x.p50.toFixed(1)} ms  p99 ${x.p99.toFixed(1)} ms  n=${x.count}  409s=${x.conflicts}  server CPU ${x.cpuMsPerCycle.toFixed(2)} ms per allocate+release  client CPU ${x.clientCpuMsPerCycle.toFixed(2)} ms`,
    );
  }
  console.log(
    `    paced (open loop: an allocation starts every ${(1000 / benchConfig.fleetRate).toFixed(1)} ms whatever the answers, released when answered): latency at ${benchConfig.fleetRate}/s offered`,
  );
  for (const f of figures) {
    const x = f.paced;
    console.log(
      `    ${f.dialect.padEnd(9)} p50 ${x.p50.toFixed(1)} ms  p99 ${x.p99.toFixed(1)} ms (goal <= 20)  achieved ${x.perSecond.toFixed(0)}/s  n=${x.count}  409s=${x.conflicts}  late starts ${x.late}  client CPU ${x.clientCpuMsPerCycle.toFixed(2)} ms per allocate+release`,
    );
  }
  console.log(
    '    server CPU is the orchestrator process alone (the clients run in their own process; PostgreSQL itself not counted): 1000 / it bounds allocations/s on one core, whatever the load of the machine',
  );
  console.log(
    "    client CPU is the load generator's own (node:http keep-alive clients; with fetch it was ≈ 1 ms, more than the server's), taken from the same two cores",
  );
  console.log('    reference: Agones documents a 500 ms batch wait for allocation and 77-150 allocations/s');
  return figures;
}
