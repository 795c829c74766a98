// `npm run sim -- [--seeds N] [--first S] [--steps K] [--seed S [--keep i,j,…]] [--no-shrink]`:
// the deterministic simulation (docs/testing.md). --seeds runs N seeds and prints
// a summary; --seed replays one seed (or only its kept steps) and prints its trace.

import { parseArgs } from 'node:util';
import { DEFAULT_STEPS, formatFailure, replayCommand, runSeeds, selectSteps, shrink } from './runner.js';
import { runSteps } from './harness.js';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string' },
    first: { type: 'string' },
    steps: { type: 'string' },
    seed: { type: 'string' },
    keep: { type: 'string' },
    'no-shrink': { type: 'boolean' },
    trace: { type: 'boolean' },
  },
});
const count = values.steps ? Number(values.steps) : DEFAULT_STEPS;
const int = (v: string, name: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return n;
};

if (values.seed !== undefined) {
  const seed = int(values.seed, 'seed');
  const keep = values.keep ? values.keep.split(',').map((x) => int(x, 'keep')) : undefined;
  const r = await runSteps(seed, selectSteps(seed, count, keep));
  if (values.trace || r.violation) console.log(r.trace.join('\n'));
  if (!r.violation) {
    console.log(`seed ${seed}: ${r.steps.length} steps, no violation`);
  } else if (values['no-shrink'] || keep) {
    console.log(formatFailure({ seed, keep: keep ?? r.steps.map((_, i) => i), result: r }, count));
    process.exitCode = 1;
  } else {
    console.log(formatFailure(await shrink(seed, count, r), count));
    process.exitCode = 1;
  }
} else {
  const n = int(values.seeds ?? '20', 'seeds');
  const first = int(values.first ?? '1', 'first');
  let done = 0;
  const summary = await runSeeds(first, n, count, {
    shrinkFailures: !values['no-shrink'],
    onSeed: (seed, r) => {
      done++;
      if (r.violation) console.log(`seed ${seed}: VIOLATION ${r.violation.invariant}: ${r.violation.message}`);
      else if (done % 50 === 0) console.log(`… ${done}/${n} seeds`);
    },
  });
  for (const f of summary.failures) console.log(`\n${formatFailure(f, count)}`);
  const violations = summary.failures.length;
  const perSeed = (ms: number) => (n > 0 ? (ms / n / 1000).toFixed(2) : '0');
  console.log(
    `\nsim summary: ${summary.seeds} seeds (${first}..${first + n - 1}) × ${count} steps, ${violations} with a violation, ${(summary.elapsedMs / 1000).toFixed(1)} s (${perSeed(summary.elapsedMs)} s a seed, ${perSeed(summary.cpuMs)} s CPU)`,
  );
  if (violations > 0) {
    console.log(`replay: ${summary.failures.map((f) => replayCommand(f.seed, count, f.keep)).join('\n        ')}`);
    process.exitCode = 1;
  }
}
