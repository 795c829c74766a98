// The deterministic simulation (docs/testing.md "Deterministic simulation"):
// the real orchestrator against simulated agents and a simulated router on a
// manual clock. A bounded number of fresh seeds, and every regression seed. A
// failure names the invariant, the seed, the shrunk steps and the replay command.

import { describe, expect, it } from 'vitest';
import { runSteps } from '../../src/sim/harness.js';
import { DEFAULT_STEPS, formatFailure, runSeeds, selectSteps } from '../../src/sim/runner.js';
import { REGRESSION_SEEDS } from '../../src/sim/regressions.js';

/** Fresh seeds per CI run: 1–3 s each on a 2-core machine (with the regression seeds, about 2 minutes when loaded). */
const CI_SEEDS = 12;

describe('deterministic simulation', () => {
  it.each(REGRESSION_SEEDS)(
    'regression seed $seed ($note)',
    async (r) => {
      const result = await runSteps(r.seed, selectSteps(r.seed, r.steps, r.keep));
      expect(
        result.violation,
        result.violation ? formatFailure({ seed: r.seed, keep: r.keep ?? result.steps.map((_, i) => i), result }, r.steps) : '',
      ).toBeNull();
    },
    120_000,
  );

  it(`${CI_SEEDS} seeds without a violation`, async () => {
    const summary = await runSeeds(1, CI_SEEDS, DEFAULT_STEPS);
    expect(summary.failures.map((f) => formatFailure(f, DEFAULT_STEPS)).join('\n\n')).toBe('');
  }, 400_000);

  // Seed 3 draws a command batch of 4, seed 6 the production default (16), seed 7 two replicas and a database
  // cut in its first 12 steps: concurrent commands and the lease between replicas replay too.
  it.each([3, 6, 7])(
    'one seed is one run: seed %i replays the same trace and ends in the same state',
    async (seed) => {
      const a = await runSteps(seed, selectSteps(seed, 12));
      const b = await runSteps(seed, selectSteps(seed, 12));
      expect(b.trace).toEqual(a.trace);
      expect(b.digest).toBe(a.digest);
    },
    120_000,
  );
});
