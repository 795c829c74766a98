// SIMULATION: the seeded sequence of steps one run applies (docs/testing.md
// "Deterministic simulation"). A step is plain data: what happens, plus the
// random numbers it resolves against the state it meets (`pick` chooses among
// the instances that exist then), so removing steps while shrinking keeps every
// other step meaningful.

/** A small, fast, seedable generator (mulberry32): the same seed gives the same run. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const STEP_KINDS = [
  // operator
  'create',
  'start',
  'stop',
  'stop-backup',
  'pause',
  'resume',
  'restart',
  'delete',
  'update',
  'backup',
  'restore',
  'settings',
  'idle-tiers',
  'group-idle-tiers',
  'system-idle-tiers',
  'scaling',
  'spawn',
  'despawn',
  // clients
  'join',
  'leave',
  'allocate',
  'release',
  // faults
  'kill-agent',
  'slow-agent',
  'lose-answers',
  'lose-host',
  'port-taken',
  'pull-fails',
  'disk-full',
  'crash',
  'restart-orchestrator',
  // nothing but time
  'wait',
] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/**
 * A fault between the orchestrator replicas, applied before the step (seeds that run two replicas):
 * the leader's process restarts (a leader change), or one replica loses the database for some rounds.
 */
export interface ReplicaFault {
  kind: 'leader-change' | 'db-cut';
  /** db-cut: the leader (< 0.6) or the standby. */
  pick: number;
  /** db-cut: for this many rounds. */
  rounds: number;
}

export interface Step {
  /** Drawn from a stream of its own, so the steps of a seed are the same with or without it. */
  replica?: ReplicaFault;
  kind: StepKind;
  /** Chooses the target among what exists when the step runs. */
  pick: number;
  /** A second free choice (scope, tier set, duration). */
  variant: number;
  /** Simulated time that passes after the step, ms. */
  advanceMs: number;
}

const WEIGHTS: Record<StepKind, number> = {
  create: 4,
  start: 3,
  stop: 3,
  'stop-backup': 2,
  pause: 2,
  resume: 2,
  restart: 1,
  delete: 2,
  update: 1,
  backup: 2,
  restore: 1,
  settings: 1,
  'idle-tiers': 1,
  'group-idle-tiers': 1,
  'system-idle-tiers': 1,
  scaling: 2,
  spawn: 2,
  despawn: 2,
  join: 8,
  leave: 6,
  allocate: 4,
  release: 3,
  'kill-agent': 1,
  'slow-agent': 1,
  'lose-answers': 1,
  'lose-host': 1,
  'port-taken': 1,
  'pull-fails': 1,
  'disk-full': 1,
  crash: 1,
  'restart-orchestrator': 1,
  wait: 14,
};
const TOTAL = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);

/** The steps of one seed. */
export function stepsOf(seed: number, count: number): Step[] {
  const r = rng(seed);
  const faults = rng(seed ^ 0x2e91ca);
  const steps: Step[] = [];
  for (let i = 0; i < count; i++) {
    let x = r() * TOTAL;
    let kind: StepKind = 'wait';
    for (const k of STEP_KINDS) {
      x -= WEIGHTS[k];
      if (x < 0) {
        kind = k;
        break;
      }
    }
    const advance = r();
    const [f, pick, rounds] = [faults(), faults(), faults()];
    const replica: ReplicaFault | undefined =
      f < 0.03
        ? { kind: 'leader-change', pick, rounds: 0 }
        : f < 0.06
          ? { kind: 'db-cut', pick, rounds: 2 + Math.floor(rounds * 14) }
          : undefined;
    steps.push({
      ...(replica ? { replica } : {}),
      kind,
      pick: r(),
      variant: r(),
      advanceMs: kind === 'wait' ? 2000 + Math.floor(advance * 20_000) : 500 + Math.floor(advance * 2500),
    });
  }
  return steps;
}

export function describeStep(s: Step): string {
  const replica = s.replica
    ? `${s.replica.kind}${s.replica.kind === 'db-cut' ? `(pick=${s.replica.pick.toFixed(3)}, ${s.replica.rounds} rounds)` : ''} then `
    : '';
  return `${replica}${s.kind}(pick=${s.pick.toFixed(3)}, variant=${s.variant.toFixed(3)}, +${s.advanceMs}ms)`;
}
