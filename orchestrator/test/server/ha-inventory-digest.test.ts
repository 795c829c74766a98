// Heartbeats carry an inventory digest; the supervisor reads a host's full
// inventory only when the digest changed, when one of the host's instances
// changed since the last read, or when the periodic safety sweep comes round.

import { afterEach, describe, expect, it } from 'vitest';
import { inventoryDigest } from '../../src/agent/inventory-digest.js';
import type { InventoryEntry } from '../../src/contracts/agent-api.js';
import { mayReuseInventory } from '../../src/server/lifecycle-engine/inventory-cache.js';
import { seed } from './registry-support.js';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator, until, type FakeAgent, type TestOrchestrator } from './support.js';

const entry = (instanceId: string, state: InventoryEntry['state'] = 'running'): InventoryEntry =>
  ({
    instanceId,
    containerId: `c-${instanceId}`,
    containerName: `endercloud-v-${instanceId}`,
    state,
    hostPort: 31000,
    endpoint: { host: '127.0.0.1', port: 31000 },
    groupId: 'g',
    variantId: 'v',
    sessionId: null,
    image: 'img:1',
    user: null,
    labels: { b: '2', a: '1' },
    exitCode: null,
    oomKilled: false,
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: null,
    restartCount: 0,
  }) as unknown as InventoryEntry;

describe('inventoryDigest (pure)', () => {
  it('ignores entry and key order; any change of state gives another digest', () => {
    const a = inventoryDigest([entry('i1'), entry('i2')]);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(inventoryDigest([entry('i2'), entry('i1')])).toBe(a);
    expect(inventoryDigest([{ ...entry('i1'), labels: { a: '1', b: '2' } } as InventoryEntry, entry('i2')])).toBe(a);
    expect(inventoryDigest([entry('i1', 'exited'), entry('i2')])).not.toBe(a);
    expect(inventoryDigest([entry('i1')])).not.toBe(a);
    expect(inventoryDigest([])).not.toBe(a);
  });
});

describe('mayReuseInventory (pure)', () => {
  const base = { cached: { digest: 'd', readAt: 1000 }, reportedDigest: 'd', lastInstanceChangeAt: 999, now: 5000, sweepMs: 60_000 };
  it.each([
    ['same digest, nothing changed, sweep not due', {}, true],
    ['no cache yet', { cached: undefined }, false],
    ['the agent sends no digest', { reportedDigest: undefined }, false],
    ['feature off (no sweep interval)', { sweepMs: undefined }, false],
    ['the digest changed', { reportedDigest: 'e' }, false],
    ['the safety sweep is due', { now: 61_000 }, false],
    ['an instance of the host changed since the read', { lastInstanceChangeAt: 1000 }, false],
  ] as const)('%s → %s', (_name, patch, expected) => {
    expect(mayReuseInventory({ ...base, ...patch })).toBe(expected);
  });
});

describe('the supervisor with digests', () => {
  let t: TestOrchestrator | undefined;
  let agent: FakeAgent | undefined;
  afterEach(async () => {
    await t?.close();
    await agent?.close();
    t = undefined;
    agent = undefined;
  });

  it('skips the inventory while the digest and the instances are unchanged; re-reads on a new digest, an instance change and the sweep', async () => {
    agent = await startFakeAgent({ agentId: 'dg' });
    t = await testOrchestrator({ env: { ENDERCLOUD_INVENTORY_SWEEP_INTERVAL: '60s' } });
    const beat = (digest: string) =>
      t!.call('POST', '/api/v1/agents/dg/heartbeat', { body: heartbeatBody(agent!.url, { inventoryDigest: digest }), token: AGENT_TOKEN });
    expect((await beat('a'.repeat(64))).status).toBe(200);
    await until(async () => (await t!.o.store.hosts.get('dg'))?.status === 'ONLINE', 'host ONLINE');
    expect((await t.o.store.hosts.get('dg'))?.inventoryDigest).toBe('a'.repeat(64));
    const reads = () => agent!.calls.filter((c) => c.method === 'GET' && c.path === '/instances').length;
    const tickReads = async () => {
      const before = reads();
      await t!.o.supervisor.tick();
      return reads() - before;
    };
    t.clock.advance(10);
    expect(await tickReads()).toBe(1); // first read
    t.clock.advance(10);
    expect(await tickReads()).toBe(0); // quiet host: nothing to read
    await beat('b'.repeat(64));
    t.clock.advance(10);
    expect(await tickReads()).toBe(1); // the digest changed
    t.clock.advance(10);
    expect(await tickReads()).toBe(0);
    const seeded = await seed(t, agent.url, 'dg'); // (its fixture heartbeat carries no digest: send ours again)
    await beat('b'.repeat(64));
    await seeded.add('dg-i1', 'stopped', { createdAt: t.clock.now(), updatedAt: t.clock.now() });
    t.clock.advance(10);
    expect(await tickReads()).toBe(1); // one of the host's instances changed since the read
    // The supervisor's own writes (the observation, the missing container's state) count as changes: it settles in a few ticks.
    let settledAfter = 0;
    for (; settledAfter < 5; settledAfter++) {
      t.clock.advance(10);
      if ((await tickReads()) === 0) break;
    }
    expect(settledAfter).toBeLessThan(4);
    t.clock.advance(10);
    expect(await tickReads()).toBe(0);
    t.clock.advance(60_000);
    expect(await tickReads()).toBe(1); // the safety sweep
    // An agent that stops sending digests is read on every tick again.
    await t.call('POST', '/api/v1/agents/dg/heartbeat', { body: heartbeatBody(agent.url), token: AGENT_TOKEN });
    expect((await t.o.store.hosts.get('dg'))?.inventoryDigest).toBeUndefined();
    expect(await tickReads()).toBe(1);
    expect(await tickReads()).toBe(1);
  });
});
