// Crash-loop circuit breaker (Nomad restarts-style, pure): records unexpected
// exits, trips after too many in a window, and spaces automatic restarts out.

export type RestartPolicy = 'never' | 'on-failure' | 'always';

export interface CrashLoopPolicy {
  /** Unexpected exits inside the window that trip the breaker (default 5). */
  maxExits: number;
  /** Sliding window in ms (default 10 minutes). */
  windowMs: number;
  /** Delay before the first automatic restart; doubles with each exit in the window. */
  backoffInitialMs: number;
  /** Ceiling for that delay. */
  backoffMaxMs: number;
}

export const DEFAULT_CRASH_LOOP_POLICY: CrashLoopPolicy = {
  maxExits: 5,
  windowMs: 10 * 60_000,
  backoffInitialMs: 1_000,
  backoffMaxMs: 60_000,
};

export interface ExitRecord {
  at: number;
  exitCode: number | null;
  oomKilled: boolean;
}

export interface CrashLoopState {
  /** Unexpected exits still inside the window, oldest first (at most maxExits kept). */
  exits: ExitRecord[];
  tripped: boolean;
  trippedAt: number | null;
}

export const EMPTY_CRASH_LOOP: CrashLoopState = { exits: [], tripped: false, trippedAt: null };

/** An exit the template's policy counts as a failure: non-zero code or OOM kill. */
export function isFailureExit(exit: Pick<ExitRecord, 'exitCode' | 'oomKilled'>): boolean {
  return exit.oomKilled || exit.exitCode !== 0;
}

function inWindow(exits: readonly ExitRecord[], policy: CrashLoopPolicy, now: number): ExitRecord[] {
  return exits.filter((e) => e.at > now - policy.windowMs && e.at <= now);
}

/**
 * Records one unexpected exit (the caller decides "unexpected": the desired
 * state was running and no stop was asked for). Trips the breaker when the
 * window now holds `maxExits` exits; a tripped breaker stays tripped until reset.
 */
export function recordExit(
  state: CrashLoopState,
  exit: ExitRecord,
  policy: CrashLoopPolicy = DEFAULT_CRASH_LOOP_POLICY,
): {
  state: CrashLoopState;
  justTripped: boolean;
} {
  const exits = inWindow([...state.exits, exit], policy, exit.at).slice(-policy.maxExits);
  if (state.tripped) return { state: { ...state, exits }, justTripped: false };
  const tripped = exits.length >= policy.maxExits;
  return { state: { exits, tripped, trippedAt: tripped ? exit.at : null }, justTripped: tripped };
}

/** Delay before the n-th automatic restart in a window (n ≥ 1): initial · 2^(n−1), capped. */
export function backoffDelay(n: number, policy: CrashLoopPolicy = DEFAULT_CRASH_LOOP_POLICY): number {
  const exponent = Math.max(0, Math.min(n - 1, 30));
  return Math.min(policy.backoffMaxMs, policy.backoffInitialMs * 2 ** exponent);
}

export type AutoRestartDecision =
  { restart: true; delayMs: number; notBefore: number; attempt: number } | { restart: false; reason: string };

/**
 * Whether the orchestrator should restart an instance that just exited
 * unexpectedly. `lastExit` is the exit being handled (already recorded).
 * Docker's own restart policy stays `no`; this is the only restart path.
 */
export function shouldAutoRestart(
  state: CrashLoopState,
  restartPolicy: RestartPolicy,
  lastExit: Pick<ExitRecord, 'exitCode' | 'oomKilled'>,
  now: number,
  policy: CrashLoopPolicy = DEFAULT_CRASH_LOOP_POLICY,
): AutoRestartDecision {
  if (state.tripped) {
    return {
      restart: false,
      reason: `crash loop tripped: ${policy.maxExits} unexpected exits within ${policy.windowMs / 60_000} min; an admin must reset it`,
    };
  }
  if (restartPolicy === 'never') return { restart: false, reason: 'the template restart policy is never' };
  if (restartPolicy === 'on-failure' && !isFailureExit(lastExit)) {
    return { restart: false, reason: 'the server exited cleanly (code 0) and the restart policy is on-failure' };
  }
  const recent = inWindow(state.exits, policy, now);
  const attempt = Math.max(1, recent.length);
  const delayMs = backoffDelay(attempt, policy);
  const last = recent.at(-1)?.at ?? now;
  const notBefore = last + delayMs;
  return { restart: true, delayMs: Math.max(0, notBefore - now), notBefore, attempt };
}

/** Admin reset after diagnosis: clears the history and re-enables automatic restarts. */
export function resetCrashLoop(): CrashLoopState {
  return { exits: [], tripped: false, trippedAt: null };
}

/** The `crashLoop` block of `GET /instances/:id`. */
export function crashLoopView(
  state: CrashLoopState,
  now: number,
  policy: CrashLoopPolicy = DEFAULT_CRASH_LOOP_POLICY,
): {
  count: number;
  windowMs: number;
  maxExits: number;
  tripped: boolean;
  trippedAt: number | null;
} {
  return {
    count: state.tripped ? state.exits.length : inWindow(state.exits, policy, now).length,
    windowMs: policy.windowMs,
    maxExits: policy.maxExits,
    tripped: state.tripped,
    trippedAt: state.trippedAt,
  };
}

/** The stored form (exit timestamps only) ↔ the breaker's state. */
export interface StoredCrashLoop {
  exits: number[];
  windowMs: number;
  tripped: boolean;
  trippedAt: number | null;
}

export function fromStored(stored: StoredCrashLoop): CrashLoopState {
  return {
    exits: stored.exits.map((at) => ({ at, exitCode: null, oomKilled: false })),
    tripped: stored.tripped,
    trippedAt: stored.trippedAt,
  };
}

export function toStored(state: CrashLoopState, policy: CrashLoopPolicy): StoredCrashLoop {
  return { exits: state.exits.map((e) => e.at), windowMs: policy.windowMs, tripped: state.tripped, trippedAt: state.trippedAt };
}

/** Defaults (the orchestrator's configuration) with a template's overrides on top. */
export function crashLoopPolicy(defaults: CrashLoopPolicy, overrides: Partial<CrashLoopPolicy> | undefined): CrashLoopPolicy {
  const p = { ...defaults, ...Object.fromEntries(Object.entries(overrides ?? {}).filter(([, v]) => v !== undefined)) };
  return { ...p, backoffMaxMs: Math.max(p.backoffMaxMs, p.backoffInitialMs) };
}
