// Benchmark knobs, read from the environment in one place (every benchmark
// runs with sensible defaults; these only shorten or lengthen a run).

const num = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name}: "${raw}" is not a positive number`);
  return value;
};

export const benchConfig = Object.freeze({
  /** PostgreSQL server the control-plane bench creates its temporary database on. */
  pgAdminUrl: process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  heartbeatPhaseMs: num('BENCH_PHASE_MS', 3000),
  routerPayloadBytes: num('BENCH_PAYLOAD_MB', 256) * 1024 * 1024,
  routerPings: num('BENCH_PINGS', 300),
  routerIdleConnections: num('BENCH_IDLE_CONNECTIONS', 5000),
  routerWakes: num('BENCH_WAKES', 3),
  /** Fleet bench: concurrent allocation clients, allocations measured, store-level buffer size, spawn/wake rounds. */
  fleetClients: num('BENCH_FLEET_CLIENTS', 16),
  fleetAllocations: num('BENCH_FLEET_ALLOCATIONS', 2000),
  /** The offered rate of the open-loop allocation measure (the goal's 500/s). */
  fleetRate: num('BENCH_FLEET_RATE', 500),
  fleetBuffer: num('BENCH_FLEET_BUFFER', 64),
  fleetRounds: num('BENCH_FLEET_ROUNDS', 3),
  /** Show the benchmarked router's own log. */
  routerLog: Boolean(process.env.BENCH_ROUTER_LOG),
  /** PATH for child processes the benchmarks start. */
  path: process.env.PATH,
});
