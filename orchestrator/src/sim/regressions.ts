// SIMULATION: every seed (and the steps it kept when shrunk) that once broke an
// invariant, replayed by test/sim/simulation.test.ts; add one line per bug found.

export interface RegressionSeed {
  seed: number;
  steps: number;
  /** The shrunk steps (indexes into stepsOf(seed, steps)); absent = all of them. */
  keep?: number[];
  /** What it found, and the fix. */
  note: string;
}

export const REGRESSION_SEEDS: RegressionSeed[] = [
  {
    seed: 5,
    steps: 30,
    keep: [0, 1, 2, 3, 4, 5],
    note: "an update waited with real unref'd timers inside the command: the sim hung (OrchestratorDeps.sleep now reaches the action runner)",
  },
  {
    seed: 24,
    steps: 30,
    keep: [1, 15, 16, 17, 18, 19],
    note: 'a stop with a backup met a world the provisioner was waking (starting): starting → backup is no transition and the world ended in error; it now stops first and archives after (backup-runner.ts stopWithBackup)',
  },
  {
    seed: 20,
    steps: 30,
    keep: [23, 25],
    note: 'the simulated agent answered a no-op replace without starting the container, as the real one does (src/agent/replace.ts): two updates to the same image ended in intervention_required',
  },
  {
    seed: 36,
    steps: 30,
    keep: [6, 8],
    note: 'the same simulated-agent replace as seed 20, reached by an update to the image already running',
  },
  {
    seed: 67,
    steps: 30,
    note: 'the harness blamed the orchestrator for a join whose new world met an image pull failure armed on its host before it was placed (wake-bound now excuses a fault on the host too)',
  },
  {
    seed: 74,
    steps: 30,
    keep: [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 26, 27],
    note: "a join answered 'route' to an empty lobby world, and the autoscaler's scale-down (and its idle tier) took the world away before the router's batch reported the login; a join's answer now restarts the empty run (provisioning/idle.ts loginExpected, fleet-service.ts expectLogin)",
  },
  {
    seed: 21,
    steps: 30,
    keep: [3, 4, 6, 8, 9, 13],
    note: "the harness's own mistake, seen once the worker's batch was drawn from the seed: an operator's backup of a stopped, allocated world (stopped → backup → stopped) counted as putting it to sleep; a backup, restore or update now counts from the state before it",
  },
  {
    seed: 834,
    steps: 30,
    keep: [0, 1, 2, 3, 5, 6, 7, 8],
    note: "an operator's despawn was accepted but held back by a leader change, and an allocation took that world, which the despawn then archived with a session on it; a despawn or delete accepted and not begun now counts as draining for allocation (store instances.allocationRows). Found before the epoch announcement changed the step timing; the store contract test covers it directly",
  },
];
