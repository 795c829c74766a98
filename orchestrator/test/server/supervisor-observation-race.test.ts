// A start requested while the supervisor's pass is under way (bench:fleet (d)
// found it: a router join starting a stopped world right after its stop): the
// pass read the instance `stopped`, then writes the container's observation.
// It must not judge the row the write returns (`starting`, desired running)
// against the older inventory (container exited) as a crash — that stopped the
// world with desired `stopped`, and the start itself then ran into a drift stop.
// The interleaving is a labelled simulation: the request runs inside the pass's
// stored read, right after the rows were read. The agent is a simulated one.

import { afterEach, describe, expect, it } from 'vitest';
import { startSimulatedAgents, type SimulatedAgents } from '../../bench/simulated-agents.js';
import { SYSTEM_ACTOR } from '../../src/server/services/lifecycle-service.js';
import { group, instance, templateVersion } from '../store/fixtures.js';
import { AGENT_TOKEN, testOrchestrator, type TestOrchestrator } from './support.js';

describe('the supervisor pass and a start requested during it', () => {
  let t: TestOrchestrator | undefined;
  let sim: SimulatedAgents | undefined;
  afterEach(async () => {
    await t?.close();
    await sim?.close();
    t = undefined;
    sim = undefined;
  });

  it('leaves the starting instance to its start command (judged next pass), not stopped as crashed', async () => {
    sim = await startSimulatedAgents();
    t = await testOrchestrator();
    const host = 'race-1';
    expect((await t.call('POST', `/api/v1/agents/${host}/heartbeat`, { body: sim.heartbeatBody(host), token: AGENT_TOKEN })).status).toBe(
      200,
    );
    await t.o.ctx.hosts.whenIdle();
    const store = t.o.store;
    const now = t.clock.now();
    await store.templates.create(templateVersion('paper', '1.0.0'));
    await store.groups.put(group('g1'));
    // Stopped, as its stop left it; never observed since, so this pass writes the observation.
    const cold = await store.instances.create(
      instance('cold', {
        name: 'cold',
        hostId: host,
        endpoint: { host: '127.0.0.1', port: 30001 },
        hostPort: 30001,
        state: 'stopped',
        desiredState: 'stopped',
        stateChangedAt: now,
        observed: null,
        createdAt: now,
        updatedAt: now,
      }),
    );
    sim.putContainer(host, {
      instanceId: 'cold',
      containerId: 'sim-cold',
      containerName: 'endercloud-sim-cold',
      hostPort: 30001,
      endpoint: '127.0.0.1:30001',
      state: 'exited',
      groupId: 'g1',
      variantId: cold.variantId,
      sessionId: null,
      image: cold.containerConfig.image,
      labels: cold.containerConfig.labels,
    });
    t.clock.advance(10);

    // Simulated interleaving: the pass's stored read returns, then the start is requested (state starting, activeAction set).
    const repo = store.instances;
    const list = repo.list.bind(repo);
    let requested: string | null | undefined;
    repo.list = async (filter) => {
      const rows = await list(filter);
      if (filter?.hostIds && requested === undefined) {
        requested = null;
        requested = (
          await t!.o.ctx.lifecycle.request('cold', 'start', SYSTEM_ACTOR, { requestId: 'race-start', reason: 'a login through the router' })
        ).commandId;
      }
      return rows;
    };
    try {
      await t.o.supervisor.tick();
    } finally {
      repo.list = list;
    }

    expect(requested).toMatch(/^cmd-/);
    const after = await store.instances.get('cold');
    expect(after?.state).toBe('starting');
    expect(after?.desiredState).toBe('running');
    expect(after?.activeAction?.commandId).toBe(requested);
    expect((await store.history.list('cold', { limit: 5 })).map((h) => h.reason).join('\n')).not.toMatch(/exited unexpectedly/);

    // The next pass sees the start in flight and leaves it alone.
    t.clock.advance(10);
    await t.o.supervisor.tick();
    expect((await store.instances.get('cold'))?.state).toBe('starting');
  });
});
