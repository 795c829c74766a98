// Guards the `log` readiness probe: it asks the agent for this run's output
// only (a previous run's ready line must not make a new start online).
import { describe, expect, it } from 'vitest';
import type { Host, Instance } from '../../src/domain/index.js';
import type { HostDriver } from '../../src/server/drivers/host-driver.js';
import { BridgeSignals, ReadinessProber } from '../../src/server/lifecycle-engine/readiness-prober.js';

describe('log readiness probe', () => {
  it('reads the log since the container start and matches the pattern there only', async () => {
    const calls: unknown[][] = [];
    // The host answers `sinceStart` with this run's lines; the whole log still holds run 1's ready line.
    const driver: Pick<HostDriver, 'logs'> = {
      logs: async (...args: unknown[]) => {
        calls.push(args);
        const sinceStart = (args[2] as { sinceStart?: boolean } | undefined)?.sinceStart === true;
        return sinceStart ? 'Starting run 2\n' : 'Starting run 1\nDone (1.0s)!\nStarting run 2\n';
      },
    };
    const prober = new ReadinessProber({ driver, fetch, bridge: new BridgeSignals() });
    const outcome = await prober.probe(
      { id: 'i-1', state: 'starting' } as Instance,
      { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 5000, intervalMs: 100, probeTimeoutMs: 1000, failureThreshold: 3 } as never,
      { id: 'h1', controlUrl: 'http://agent' } as Host,
    );
    expect(outcome.ready).toBe(false);
    expect(calls).toEqual([[{ id: 'h1', controlUrl: 'http://agent' }, 'i-1', { tail: 200, sinceStart: true }]]);
  });
});
