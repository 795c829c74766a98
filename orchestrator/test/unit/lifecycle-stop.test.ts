// Graceful stop planning (pure): RCON where the template declares it and the
// instance has its password, else the signal; the recorded path; and the
// crash-loop storage conversion and policy overrides.

import { describe, expect, it } from 'vitest';
import { crashLoopPolicy, DEFAULT_CRASH_LOOP_POLICY, fromStored, recordExit, toStored } from '../../src/lifecycle/crash-loop.js';
import { reconcileInstance } from '../../src/lifecycle/reconcile.js';
import { describeStop, planStop, stopPath } from '../../src/lifecycle/stop.js';

describe('planStop', () => {
  const rcon = { port: 25575, passwordVariable: 'RCON_PASSWORD' };
  it('uses RCON `stop` when the template declares RCON and the password exists', () => {
    expect(planStop({ signal: 'SIGTERM', timeoutMs: 30_000, rcon }, { RCON_PASSWORD: 'pw' })).toEqual({
      timeoutSeconds: 30,
      signal: 'SIGTERM',
      rcon: { port: 25575, password: 'pw', command: 'stop' },
    });
    expect(planStop({ signal: 'SIGINT', timeoutMs: 1_500, rcon: { ...rcon, command: 'end' } }, { RCON_PASSWORD: 'pw' }).rcon?.command).toBe(
      'end',
    );
  });
  it('falls back to the stop signal without RCON or without a password; rounds the timeout up to whole seconds', () => {
    expect(planStop({ signal: 'SIGINT', timeoutMs: 500 }, {})).toEqual({ timeoutSeconds: 1, signal: 'SIGINT' });
    expect(planStop({ signal: 'SIGTERM', timeoutMs: 2000, rcon }, {})).toEqual({ timeoutSeconds: 2, signal: 'SIGTERM' });
  });
  it('records killed over the graceful method, and describes each path', () => {
    expect(stopPath({ method: 'rcon', killed: false })).toBe('rcon');
    expect(stopPath({ method: 'signal', killed: true })).toBe('killed');
    expect(stopPath({ method: 'none', killed: false })).toBe('none');
    expect(describeStop('killed', 2, 137)).toBe('killed: no exit within the 2 s stop timeout (exit code 137)');
    expect(describeStop('rcon', 2, 0)).toContain('over RCON');
  });
});

describe('crash-loop storage and policy', () => {
  it('round-trips the stored form and keeps trips', () => {
    const policy = crashLoopPolicy(DEFAULT_CRASH_LOOP_POLICY, { maxExits: 2, windowMs: 60_000 });
    let state = fromStored({ exits: [], windowMs: 60_000, tripped: false, trippedAt: null });
    state = recordExit(state, { at: 1000, exitCode: 1, oomKilled: false }, policy).state;
    const tripped = recordExit(state, { at: 2000, exitCode: 137, oomKilled: true }, policy);
    expect(tripped.justTripped).toBe(true);
    expect(toStored(tripped.state, policy)).toEqual({ exits: [1000, 2000], windowMs: 60_000, tripped: true, trippedAt: 2000 });
  });
  it('template overrides win over the defaults; undefined overrides are ignored; max backoff never below the initial', () => {
    expect(crashLoopPolicy(DEFAULT_CRASH_LOOP_POLICY, { backoffInitialMs: 100, windowMs: undefined })).toMatchObject({
      backoffInitialMs: 100,
      windowMs: 600_000,
      maxExits: 5,
    });
    expect(crashLoopPolicy({ ...DEFAULT_CRASH_LOOP_POLICY, backoffMaxMs: 10 }, { backoffInitialMs: 500 }).backoffMaxMs).toBe(500);
  });
});

describe('reconcile: image check', () => {
  const stored = {
    id: 'i',
    state: 'online' as const,
    desiredState: 'running' as const,
    stateChangedAt: 0,
    expectedLabels: {},
    expectedImage: 'mc',
  };
  it('accepts the same reference with an implicit :latest, refuses another image without adopting it', () => {
    expect(
      reconcileInstance(stored, { status: 'running', labels: {}, image: 'mc:latest' }, 'ONLINE', { now: 1, unknownGraceMs: 10 }).action,
    ).toBe('none');
    expect(
      reconcileInstance(stored, { status: 'running', labels: {}, image: 'other:1' }, 'ONLINE', { now: 1, unknownGraceMs: 10 }),
    ).toMatchObject({
      action: 'set_state',
      to: 'intervention_required',
    });
  });
});
