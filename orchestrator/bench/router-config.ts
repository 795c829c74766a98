// Knobs of `npm run bench:router` beyond bench-config.ts (the data-path run
// against HAProxy): read from the environment here only.

const int = (name: string, fallback: number, min = 1): number => {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name}: "${raw}" must be an integer ≥ ${min}`);
  return value;
};

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
  skipWake: process.env.BENCH_SKIP_WAKE === '1',
  /** A directory: the router child runs with `--cpu-prof` and writes its profile there. */
  cpuProfDir: process.env.BENCH_ROUTER_CPU_PROF || undefined,
  /** Set by the bench when it re-executed itself under a raised `ulimit -n` (prevents a loop). */
  reexecuted: process.env.BENCH_ROUTER_REEXEC === '1',
  /** The HAProxy binary (Debian `haproxy`, installed by scripts/prepare-host.sh). */
  haproxy: process.env.BENCH_HAPROXY ?? 'haproxy',
});
