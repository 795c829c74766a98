// Benchmark knobs, read from the environment in one place (every benchmark
// runs with sensible defaults; these only shorten or lengthen a run). Nothing
// else under bench/ reads process.env.

const num = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name}: "${raw}" is not a positive number`);
  return value;
};

const int = (name: string, fallback: number, min = 1): number => {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name}: "${raw}" must be an integer ≥ ${min}`);
  return value;
};

const oneOf = <T extends string>(name: string, values: readonly T[], fallback: T): T => {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) throw new Error(`${name}: "${raw}" must be one of ${values.join(', ')}`);
  return raw as T;
};

const flag = (name: string): boolean => {
  const raw = process.env[name];
  if (raw === undefined || raw === '' || raw === '0') return false;
  if (raw === '1') return true;
  throw new Error(`${name}: "${raw}" must be 1 or 0`);
};

/** Set by `npm run bench:router` when it re-executed itself under a raised `ulimit -n` (prevents a loop). */
const ROUTER_REEXEC = 'BENCH_ROUTER_REEXEC';

export const benchConfig = Object.freeze({
  /** PostgreSQL server the control-plane bench creates its temporary database on. */
  pgAdminUrl: process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  heartbeatPhaseMs: num('BENCH_PHASE_MS', 3000),
  routerPayloadBytes: num('BENCH_PAYLOAD_MB', 256) * 1024 * 1024,
  routerPings: num('BENCH_PINGS', 300),
  routerWakes: num('BENCH_WAKES', 3),
  /** Fleet bench: concurrent allocation clients, allocations measured, store-level buffer size, spawn/wake rounds. */
  fleetClients: num('BENCH_FLEET_CLIENTS', 16),
  fleetAllocations: num('BENCH_FLEET_ALLOCATIONS', 2000),
  /** The offered rate of the open-loop allocation measure (the goal's 500/s). */
  fleetRate: num('BENCH_FLEET_RATE', 500),
  fleetBuffer: num('BENCH_FLEET_BUFFER', 64),
  fleetRounds: num('BENCH_FLEET_ROUNDS', 5),
  /**
   * A file: bench:fleet writes the monotonic-clock windows (µs, the clock of a `--cpu-prof`
   * profile's samples) of each counted (c) and (d) login there, to read a profile per window.
   */
  fleetWindows: process.env.BENCH_FLEET_WINDOWS || undefined,
  /** Show the benchmarked router's own log. */
  routerLog: Boolean(process.env.BENCH_ROUTER_LOG),
  /** PATH for child processes the benchmarks start. */
  path: process.env.PATH,
});

/** Knobs of `npm run bench:router` beyond the ones above (the data-path run against HAProxy). */
export const routerBenchConfig = Object.freeze({
  /** Concurrent players in the load phase (each sends 20 small packets a second). */
  players: int('BENCH_PLAYERS', 10_000),
  /** Length of the load phase, seconds. */
  playerSeconds: int('BENCH_PLAYER_SECONDS', 10),
  /** Alternating bulk rounds (one upload and one download of BENCH_PAYLOAD_MB per proxy each). */
  bulkRounds: int('BENCH_BULK_ROUNDS', 5),
  /** Small-packet round trips per proxy. */
  rttSamples: int('BENCH_RTT_SAMPLES', 2000),
  /** `1` skips the container wake measurement (the data path alone; BENCH_WAKES must stay ≥ 1). */
  skipWake: flag('BENCH_SKIP_WAKE'),
  /** A directory: the router child runs with `--cpu-prof` and writes its profile there. */
  cpuProfDir: process.env.BENCH_ROUTER_CPU_PROF || undefined,
  /**
   * How the benchmarked router runs: `tsc` (default) compiles it as the image does and runs the
   * JavaScript with node; `tsx` runs the TypeScript source through tsx, as `npm run router` does
   * (tsx keeps function names with a helper that costs every named closure ~0.25 KiB).
   */
  routerRuntime: oneOf('BENCH_ROUTER_RUNTIME', ['tsc', 'tsx'] as const, 'tsc'),
  reexecuted: process.env[ROUTER_REEXEC] === '1',
  /** The environment of the bench's re-execution of itself. */
  reexecEnv: (): NodeJS.ProcessEnv => ({ ...process.env, [ROUTER_REEXEC]: '1' }),
  /** The HAProxy binary (Debian `haproxy`, installed by scripts/prepare-host.sh). */
  haproxy: process.env.BENCH_HAPROXY ?? 'haproxy',
});
