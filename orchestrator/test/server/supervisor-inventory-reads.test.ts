// The supervisor's pass over many hosts: every host's inventory is read, never
// more than 64 agent calls in flight at once (bench:scale runs the same code at
// 1,000 hosts), and the stored instances are judged against those inventories.

import { afterEach, describe, expect, it } from 'vitest';
import { startSimulatedAgents, type SimulatedAgents } from '../../bench/simulated-agents.js';
import { group, instance, templateVersion } from '../store/fixtures.js';
import { AGENT_TOKEN, testOrchestrator, type TestOrchestrator } from './support.js';

const HOSTS = 150;

describe('the supervisor pass over many hosts', () => {
  let t: TestOrchestrator | undefined;
  let sim: SimulatedAgents | undefined;
  afterEach(async () => {
    await t?.close();
    await sim?.close();
    t = undefined;
    sim = undefined;
  });

  it("reads every host's inventory with at most 64 calls in flight, and sees an instance missing from one", async () => {
    // 200 ms per answer: even on a loaded machine the supervisor issues 64 calls before the first answers.
    sim = await startSimulatedAgents({ inventoryDelayMs: 200 });
    t = await testOrchestrator();
    const ids = Array.from({ length: HOSTS }, (_, n) => `many-${String(n).padStart(3, '0')}`);
    for (const id of ids) {
      const res = await t.call('POST', `/api/v1/agents/${id}/heartbeat`, { body: sim.heartbeatBody(id), token: AGENT_TOKEN });
      expect(res.status).toBe(200);
    }
    await t.o.ctx.hosts.whenIdle();
    expect((await t.o.store.hosts.countByStatus()).ONLINE).toBe(HOSTS);

    // Two online instances: one whose container host many-007 lists, one missing from many-100's inventory.
    const store = t.o.store;
    const now = t.clock.now();
    await store.templates.create(templateVersion('paper', '1.0.0'));
    await store.groups.put(group('g1'));
    const online = {
      state: 'online',
      desiredState: 'running',
      stateChangedAt: now,
      observed: { container: 'running', observedAt: now },
      createdAt: now,
      updatedAt: now,
    } as const;
    const kept = await store.instances.create(
      instance('kept', { name: 'kept', hostId: 'many-007', endpoint: { host: '127.0.0.1', port: 30001 }, hostPort: 30001, ...online }),
    );
    await store.instances.create(
      instance('lost', { name: 'lost', hostId: 'many-100', endpoint: { host: '127.0.0.1', port: 30002 }, hostPort: 30002, ...online }),
    );
    sim.putContainer('many-007', {
      instanceId: 'kept',
      containerId: 'sim-kept',
      containerName: 'endercloud-sim-kept',
      hostPort: 30001,
      endpoint: '127.0.0.1:30001',
      state: 'running',
      groupId: 'g1',
      variantId: kept.variantId,
      sessionId: null,
      image: kept.containerConfig.image,
      labels: kept.containerConfig.labels,
    });
    t.clock.advance(10);

    const before = sim.inventoryCalls.total;
    sim.inventoryCalls.maxInFlight = 0;
    await t.o.supervisor.tick();
    expect(sim.inventoryCalls.total - before).toBe(HOSTS);
    expect(sim.inventoryCalls.inFlight).toBe(0);
    // Calls overlap: the bound is reached, never passed.
    expect(sim.inventoryCalls.maxInFlight).toBe(64);
    expect((await store.instances.get('kept'))?.state).toBe('online');
    expect((await store.instances.get('lost'))?.state).toBe('unknown');
  });
});
