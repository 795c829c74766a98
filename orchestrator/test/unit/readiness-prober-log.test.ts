// Guards the `log` readiness probe: it asks the agent for this run's output
// only (a previous run's ready line must not make a new start online).
import { describe, expect, it } from 'vitest';
import type { Host, Instance } from '../../src/domain/index.js';
import type { AgentClient } from '../../src/server/agent-client.js';
import { BridgeSignals, ReadinessProber } from '../../src/server/lifecycle-engine/readiness-prober.js';

describe('log readiness probe', () => {
  it('reads the log since the container start and matches the pattern there only', async () => {
    const calls: unknown[][] = [];
    // The agent answers `since=start` with this run's lines; the whole log still holds run 1's ready line.
    const agents = {
      logs: async (...args: unknown[]) => {
        calls.push(args);
        const sinceStart = (args[4] as { sinceStart?: boolean } | undefined)?.sinceStart === true;
        return sinceStart ? 'Starting run 2\n' : 'Starting run 1\nDone (1.0s)!\nStarting run 2\n';
      },
    } as unknown as AgentClient;
    const prober = new ReadinessProber({ agents, fetch, bridge: new BridgeSignals() });
    const outcome = await prober.probe(
      { id: 'i-1', state: 'starting' } as Instance,
      { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 5000, intervalMs: 100, probeTimeoutMs: 1000, failureThreshold: 3 } as never,
      { controlUrl: 'http://agent' } as Host,
    );
    expect(outcome.ready).toBe(false);
    expect(calls).toEqual([['http://agent', 'i-1', 200, {}, { sinceStart: true }]]);
  });
});
