// Guards where a container's current run begins in its log (logs?since=start):
// a previous run's lines are cut, a fast first line stamped before StartedAt is kept.
import { describe, expect, it } from 'vitest';
import { RUN_START_MARGIN_NS, currentRunSince, engineTimestamp, epochNanos } from '../../src/agent/log-window.js';

const T = '2026-11-30T09:05:12.215069465Z';
const start = epochNanos(T);

describe('log window of the current run', () => {
  it('parses RFC 3339 with nanoseconds exactly and formats the Engine since value', () => {
    expect(start).toBe(1_796_029_512_215_069_465n);
    expect(epochNanos('2026-11-30T09:05:12Z')).toBe(1_796_029_512_000_000_000n);
    expect(epochNanos('2026-11-30T10:05:12.5+01:00')).toBe(1_796_029_512_500_000_000n);
    expect(engineTimestamp(1_796_029_512_000_000_042n)).toBe('1796029512.000000042');
    expect(() => epochNanos('yesterday')).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED' }));
  });

  it('never started → null (no output); first run still running → every line', () => {
    expect(currentRunSince({ state: 'created', startedAt: null, finishedAt: null })).toBeNull();
    expect(currentRunSince({ state: 'running', startedAt: T, finishedAt: null })).toBeUndefined();
  });

  it('running after an earlier run: halfway into the gap, at most the margin before StartedAt', () => {
    expect(currentRunSince({ state: 'running', startedAt: T, finishedAt: '2026-11-30T09:05:12.115069465Z' })).toBe(start - 50_000_000n);
    expect(currentRunSince({ state: 'paused', startedAt: T, finishedAt: '2026-11-30T08:00:00Z' })).toBe(start - RUN_START_MARGIN_NS);
    expect(currentRunSince({ state: 'running', startedAt: T, finishedAt: '2026-11-30T09:05:13Z' })).toBe(start);
  });

  it('exited: the last run, from the margin before its StartedAt (FinishedAt may precede StartedAt)', () => {
    expect(currentRunSince({ state: 'exited', startedAt: T, finishedAt: '2026-11-30T09:05:12.214Z' })).toBe(start - RUN_START_MARGIN_NS);
  });
});
