// Where the output of a container's current run begins, for `logs?since=start`
// (a log readiness probe must never match a previous run's "ready" line). Pure.
//
// Docker stamps a line when its log copier reads it, and records StartedAt only
// after the process already runs: a fast process's first line can be stamped
// ~1 ms BEFORE StartedAt (measured on Docker 20.10). FinishedAt is the exit
// time from containerd, which a quick exit can even put before StartedAt. So:
// - running (or paused) and never finished before: every line is this run's;
// - running after an earlier run: cut halfway between that run's FinishedAt and
//   this StartedAt, at most RUN_START_MARGIN_NS before StartedAt;
// - exited / created: FinishedAt is the last run's own, so cut RUN_START_MARGIN_NS
//   before StartedAt (a previous run that ended closer than that may show).

import { AppError } from '../shared/errors.js';
import type { ContainerState } from './runtime.js';

export const RUN_START_MARGIN_NS = 200_000_000n;

/** Epoch nanoseconds of an RFC 3339 time with up to nine fraction digits. */
export function epochNanos(rfc3339: string): bigint {
  const m = /^(.+T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(rfc3339);
  const ms = m ? Date.parse(`${m[1]}${m[3]}`) : Number.NaN;
  if (!m || !Number.isFinite(ms)) throw new AppError('VALIDATION_FAILED', `${JSON.stringify(rfc3339)} is not an RFC 3339 time`);
  return BigInt(ms) * 1_000_000n + BigInt((m[2] ?? '').padEnd(9, '0'));
}

/** The Engine's `since` log filter format: "<seconds>.<nanoseconds>". */
export function engineTimestamp(nanos: bigint): string {
  return `${nanos / 1_000_000_000n}.${(nanos % 1_000_000_000n).toString().padStart(9, '0')}`;
}

export interface RunTimes {
  state: ContainerState;
  startedAt: string | null;
  finishedAt: string | null;
}

/**
 * Epoch nanoseconds from which lines belong to the current (or, when stopped,
 * the last) run; `null` = never started (no run output at all); `undefined` = all lines.
 */
export function currentRunSince(c: RunTimes): bigint | null | undefined {
  if (c.startedAt === null) return null;
  const start = epochNanos(c.startedAt);
  const live = c.state === 'running' || c.state === 'paused' || c.state === 'restarting';
  if (!live) return start - RUN_START_MARGIN_NS;
  if (c.finishedAt === null) return undefined;
  const gap = start - epochNanos(c.finishedAt);
  const margin = gap <= 0n ? 0n : gap / 2n < RUN_START_MARGIN_NS ? gap / 2n : RUN_START_MARGIN_NS;
  return start - margin;
}
