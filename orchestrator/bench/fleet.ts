// Benchmark `npm run bench:fleet`: (a) allocation latency and allocations/s over
// the HTTP API from a warm buffer (a labelled simulation: store-level online
// instances), SQLite and PostgreSQL; (b) spawn-to-allocatable vs raw
// create+start+ping; (c) paused → Login Success through the router vs raw
// unpause + login; (d) stopped → Login Success through the router vs raw
// start + login. Every ratio is measured in this run.
//   npx tsx bench/fleet.ts [all|alloc|containers]
// Knobs: BENCH_FLEET_CLIENTS, BENCH_FLEET_ALLOCATIONS, BENCH_FLEET_BUFFER,
// BENCH_FLEET_ROUNDS, BENCH_PG_URL (bench/bench-config.ts). 127.0.0.1 only;
// (b)–(d) need the Docker engine, build the test server image if missing,
// and remove their containers (by label) also on failure. Bounded: 10 minutes.
import { allocationBench } from './fleet-allocation.js';
import { removeNetwork } from '../test/support/agent-harness.js';
import { removeContainersByLabel } from '../test/support/docker.js';
import { containerBench, openStacks } from './fleet-containers.js';

const part = process.argv[2] ?? 'all';
if (!['all', 'alloc', 'containers'].includes(part)) {
  console.error(`bench:fleet: unknown part "${part}" (all, alloc or containers)`);
  process.exit(2);
}

async function main(): Promise<void> {
  if (part !== 'containers') await allocationBench();
  if (part !== 'alloc') await containerBench();
}

/** Removes what a run still holds (the stack's containers by label), then exits. */
async function abort(message: string, code: number): Promise<never> {
  console.error(message);
  // A graceful close waits for in-flight requests (a spawn may wait 60 s): bound it, then remove by label regardless.
  await Promise.allSettled(
    [...openStacks].map(async (s) => {
      await Promise.race([s.close(), new Promise((r) => setTimeout(r, 5000))]);
      await removeContainersByLabel({ 'orchestrator.host': s.hostId });
      await removeNetwork(`${s.run}-net`);
    }),
  );
  process.exit(code);
}

const deadline = setTimeout(() => void abort('bench:fleet: exceeded 10 minutes; aborting', 1), 10 * 60_000);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void abort(`bench:fleet: ${signal}; cleaning up`, 130));
main().then(
  () => {
    clearTimeout(deadline);
    process.exit(0);
  },
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
