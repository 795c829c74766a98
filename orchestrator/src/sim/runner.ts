// SIMULATION: runs seeds, shrinks a failing one to the shortest sequence of
// steps that still fails (delta debugging over the step list: drop chunks, then
// single steps, while the same invariant still breaks), and prints the command
// that replays it.

import { describeStep, stepsOf, type Step } from './actions.js';
import { runSteps, type RunResult } from './harness.js';

export const DEFAULT_STEPS = 30;

export interface Failure {
  seed: number;
  /** Indexes into stepsOf(seed, steps) that still fail. */
  keep: number[];
  result: RunResult;
}

/** The steps of a seed, or only the kept ones. */
export function selectSteps(seed: number, count: number, keep?: readonly number[]): Step[] {
  const all = stepsOf(seed, count);
  return keep ? keep.map((i) => all[i]!).filter((s) => s !== undefined) : all;
}

/** Shrinks a failing seed's steps to a smaller list that breaks the same invariant. */
export async function shrink(seed: number, count: number, failing: RunResult, budget = 60): Promise<Failure> {
  const invariant = failing.violation!.invariant;
  let keep = Array.from({ length: Math.min(count, failing.violation!.step + 1) }, (_, i) => i);
  let best = failing;
  let runs = 0;
  const tryKeep = async (candidate: number[]): Promise<boolean> => {
    if (runs++ >= budget) return false;
    const r = await runSteps(seed, selectSteps(seed, count, candidate));
    if (r.violation?.invariant !== invariant) return false;
    keep = candidate.slice(0, r.violation.step + 1);
    best = r;
    return true;
  };
  for (let chunk = Math.max(1, Math.floor(keep.length / 2)); chunk >= 1; chunk = Math.floor(chunk / 2)) {
    for (let start = 0; start < keep.length && runs < budget;) {
      const candidate = [...keep.slice(0, start), ...keep.slice(start + chunk)];
      if (candidate.length > 0 && (await tryKeep(candidate))) continue;
      start += chunk;
    }
    if (chunk === 1) break;
  }
  return { seed, keep, result: best };
}

export function replayCommand(seed: number, count: number, keep?: readonly number[]): string {
  return `npm run sim -- --seed ${seed}${count !== DEFAULT_STEPS ? ` --steps ${count}` : ''}${keep ? ` --keep ${keep.join(',')}` : ''}`;
}

export function formatFailure(f: Failure, count: number): string {
  const v = f.result.violation!;
  return [
    `VIOLATION of "${v.invariant}" with seed ${f.seed}: ${v.message}`,
    `shortest failing sequence (${f.keep.length} steps):`,
    ...f.keep.map((i) => `  [${i}] ${describeStep(stepsOf(f.seed, count)[i]!)}`),
    'trace:',
    ...f.result.trace.map((l) => `  ${l}`),
    'state at the failure:',
    ...f.result.state.map((l) => `  ${l}`),
    `replay: ${replayCommand(f.seed, count, f.keep)}`,
  ].join('\n');
}

export interface SeedsSummary {
  seeds: number;
  failures: Failure[];
  elapsedMs: number;
  /** CPU time of this process over the run (on a shared machine, the figure to compare). */
  cpuMs: number;
}

/** Runs seeds first..first+n-1; each failure is shrunk (when `shrinkFailures`). */
export async function runSeeds(
  first: number,
  n: number,
  count: number,
  opts: { shrinkFailures?: boolean; onSeed?: (seed: number, r: RunResult) => void } = {},
): Promise<SeedsSummary> {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const failures: Failure[] = [];
  for (let seed = first; seed < first + n; seed++) {
    const r = await runSteps(seed, stepsOf(seed, count));
    opts.onSeed?.(seed, r);
    if (!r.violation) continue;
    failures.push(
      opts.shrinkFailures === false
        ? { seed, keep: Array.from({ length: r.violation.step + 1 }, (_, i) => i), result: r }
        : await shrink(seed, count, r),
    );
  }
  const cpu = process.cpuUsage(cpu0);
  return { seeds: n, failures, elapsedMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 };
}
