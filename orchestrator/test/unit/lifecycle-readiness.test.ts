// Guards readiness: probe specs are validated field by field, and probe
// results move starting/paused/online/degraded instances exactly as documented.

import { describe, expect, it } from 'vitest';
import {
  evaluateReadiness,
  logLinesReady,
  minecraftStatusReady,
  readinessContainerStatus,
  validateReadinessSpec,
  type ReadinessInput,
} from '../../src/lifecycle/readiness.js';

describe('validateReadinessSpec', () => {
  it.each([
    [
      { kind: 'minecraft', startupTimeoutMs: 120_000 },
      { kind: 'minecraft', startupTimeoutMs: 120_000, intervalMs: 2_000, probeTimeoutMs: 2_000, failureThreshold: 3 },
    ],
    [{ kind: 'tcp', startupTimeoutMs: 5_000, port: 25565 }, { port: 25565 }],
    [
      { kind: 'http', startupTimeoutMs: 5_000, path: '/health', expectStatus: 204, intervalMs: 500 },
      { path: '/health', expectStatus: 204, intervalMs: 500 },
    ],
    [{ kind: 'log', startupTimeoutMs: 5_000, pattern: 'Done \\(\\d+\\.\\d+s\\)!' }, { pattern: 'Done \\(\\d+\\.\\d+s\\)!' }],
    [
      { kind: 'bridge', startupTimeoutMs: 60_000, failureThreshold: 5 },
      { kind: 'bridge', failureThreshold: 5 },
    ],
  ])('accepts %j', (input, expected) => {
    const result = validateReadinessSpec(input);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.value).toMatchObject(expected);
  });

  it.each([
    [null, 'readiness'],
    [{ startupTimeoutMs: 1000 }, 'readiness.kind'],
    [{ kind: 'ping', startupTimeoutMs: 1000 }, 'readiness.kind'],
    [{ kind: 'tcp' }, 'readiness.startupTimeoutMs'],
    [{ kind: 'tcp', startupTimeoutMs: -1 }, 'readiness.startupTimeoutMs'],
    [{ kind: 'tcp', startupTimeoutMs: 1.5 }, 'readiness.startupTimeoutMs'],
    [{ kind: 'tcp', startupTimeoutMs: 1000, port: 0 }, 'readiness.port'],
    [{ kind: 'tcp', startupTimeoutMs: 1000, port: 70000 }, 'readiness.port'],
    [{ kind: 'tcp', startupTimeoutMs: 1000, intervalMs: 10 }, 'readiness.intervalMs'],
    [{ kind: 'tcp', startupTimeoutMs: 1000, failureThreshold: 0 }, 'readiness.failureThreshold'],
    [{ kind: 'tcp', startupTimeoutMs: 1000, probeTimeoutMs: 5000 }, 'readiness.probeTimeoutMs'],
    [{ kind: 'http', startupTimeoutMs: 1000 }, 'readiness.path'],
    [{ kind: 'http', startupTimeoutMs: 1000, path: 'health' }, 'readiness.path'],
    [{ kind: 'http', startupTimeoutMs: 1000, path: '/a b' }, 'readiness.path'],
    [{ kind: 'http', startupTimeoutMs: 1000, path: '/', expectStatus: 42 }, 'readiness.expectStatus'],
    [{ kind: 'log', startupTimeoutMs: 1000, pattern: 'Done (' }, 'readiness.pattern'],
    [{ kind: 'log', startupTimeoutMs: 1000, pattern: '' }, 'readiness.pattern'],
    [{ kind: 'log', startupTimeoutMs: 1000, patern: 'Done' }, 'readiness.patern'],
    [{ kind: 'bridge', startupTimeoutMs: 1000, port: 80 }, 'readiness.port'],
  ])('refuses %j naming %s', (input, field) => {
    const result = validateReadinessSpec(input);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe('VALIDATION_FAILED');
      expect(result.error.message.startsWith(field)).toBe(true);
      expect(result.error.details).toEqual({ field });
    }
  });
});

describe('probe helpers', () => {
  it.each([
    [{ players: { max: 20, online: 0 } }, true],
    [{ players: { max: 0, online: 0 } }, false],
    [{ version: { name: 'x' } }, false],
    [null, false],
    ['ok', false],
  ])('minecraft status %j ready=%s', (status, ready) => expect(minecraftStatusReady(status)).toBe(ready));

  // The supervisor (observed state) and the update runner (inspect) read containers through this one mapping.
  it.each([
    ['running', 'running'],
    ['paused', 'paused'],
    ['created', 'created'],
    ['exited', 'exited'],
    ['dead', 'exited'],
    ['restarting', 'running'],
    ['unknown', 'running'],
    [undefined, 'running'],
  ] as const)('container state %s reads as %s', (state, status) => expect(readinessContainerStatus(state)).toBe(status));

  it('matches log lines with the template pattern', () => {
    expect(logLinesReady('Done \\(', ['Loading', '[12:00] Done (3.2s)! For help'])).toBe(true);
    expect(logLinesReady('Done \\(', ['Loading'])).toBe(false);
  });
});

describe('evaluateReadiness', () => {
  const base: ReadinessInput = {
    state: 'starting',
    waitStartedAt: 1_000,
    now: 2_000,
    timeoutMs: 10_000,
    failureThreshold: 3,
    container: { status: 'running' },
    probe: null,
  };
  const at = (over: Partial<ReadinessInput>): ReadinessInput => ({ ...base, ...over });

  it.each([
    [
      'starting + ready within timeout → online',
      at({ probe: { ready: true, consecutiveFailures: 0 } }),
      { kind: 'transition', to: 'online', event: 'ready' },
    ],
    ['starting + not ready within timeout → wait', at({ probe: { ready: false, consecutiveFailures: 2 } }), { kind: 'stay' }],
    ['starting + no probe yet → wait', at({}), { kind: 'stay' }],
    [
      'starting + timeout passed + running + not ready → degraded',
      at({ now: 11_000, probe: { ready: false, consecutiveFailures: 9 } }),
      { kind: 'transition', to: 'degraded', event: 'startup_timeout' },
    ],
    ['starting + timeout passed + never probed → degraded, never online', at({ now: 50_000 }), { kind: 'transition', to: 'degraded' }],
    [
      'starting + container never ran past the timeout → error',
      at({ now: 11_000, container: { status: 'created' } }),
      { kind: 'transition', to: 'error', event: 'fail' },
    ],
    [
      'starting + container exited → crash path',
      at({ container: { status: 'exited', exitCode: 137, oomKilled: true } }),
      { kind: 'exited', exitCode: 137, oomKilled: true },
    ],
    ['starting + container missing → unknown', at({ container: { status: 'missing' } }), { kind: 'transition', to: 'unknown' }],
    [
      'online + 2 failures (threshold 3) → stay online',
      at({ state: 'online', probe: { ready: false, consecutiveFailures: 2 } }),
      { kind: 'stay' },
    ],
    [
      'online + 3 consecutive failures → degraded',
      at({ state: 'online', probe: { ready: false, consecutiveFailures: 3 } }),
      { kind: 'transition', to: 'degraded', event: 'probe_failed' },
    ],
    [
      'online + exited → crash path',
      at({ state: 'online', container: { status: 'exited', exitCode: 1 } }),
      { kind: 'exited', exitCode: 1, oomKilled: false },
    ],
    [
      'degraded + ready → online again',
      at({ state: 'degraded', probe: { ready: true, consecutiveFailures: 0 } }),
      { kind: 'transition', to: 'online', event: 'recovered' },
    ],
    ['degraded + still failing → stay', at({ state: 'degraded', probe: { ready: false, consecutiveFailures: 40 } }), { kind: 'stay' }],
    [
      'paused (resume) + unpaused + ready → online',
      at({ state: 'paused', probe: { ready: true, consecutiveFailures: 0 } }),
      { kind: 'transition', to: 'online', event: 'resumed' },
    ],
    [
      'paused (resume) + not ready after the check bound → degraded',
      at({ state: 'paused', now: 20_000, probe: { ready: false, consecutiveFailures: 1 } }),
      { kind: 'transition', to: 'degraded', event: 'resumed_not_ready' },
    ],
    ['paused + container still paused → stay', at({ state: 'paused', container: { status: 'paused' } }), { kind: 'stay' }],
    ['stopping is not probed', at({ state: 'stopping', container: { status: 'exited', exitCode: 0 } }), { kind: 'stay' }],
  ])('%s', (_name, input, expected) => {
    expect(evaluateReadiness(input)).toMatchObject(expected);
  });
});
