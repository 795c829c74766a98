// Contract tests: the leader lease (database clock, fencing epoch) and the
// quick reclaim of a restarted node's own earlier command claims.

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { heartbeat, instance, T0 } from './fixtures.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function leaseContract(handle: StoreHandle): void {
  describe('leases', () => {
    it('the first holder gets epoch 1 and keeps it on renewal; expiry is the database clock + ttl', async () => {
      const store = handle.store();
      const before = Date.now();
      const first = await store.leases.acquire('reconciler', 'node-a', 10_000);
      expect(first).toMatchObject({ name: 'reconciler', holder: 'node-a', epoch: 1 });
      // The database's clock on this machine is the test's clock (give or take scheduling).
      expect(first!.expiresAt).toBeGreaterThanOrEqual(before + 10_000 - 1000);
      expect(first!.expiresAt).toBeLessThanOrEqual(Date.now() + 10_000 + 1000);
      const renewed = await store.leases.acquire('reconciler', 'node-a', 10_000);
      expect(renewed?.epoch).toBe(1);
      expect(renewed!.expiresAt).toBeGreaterThanOrEqual(first!.expiresAt);
    });

    it('another holder cannot take a live lease; after a resignation or expiry it can, and the epoch rises by one per new holder', async () => {
      const store = handle.store();
      await store.leases.acquire('l', 'node-a', 60_000);
      expect(await handle.second().leases.acquire('l', 'node-b', 60_000)).toBeUndefined();
      expect((await store.leases.get('l'))?.holder).toBe('node-a');
      expect(await store.leases.release('l', 'node-b')).toBe(false);
      expect(await store.leases.release('l', 'node-a')).toBe(true);
      const b = await handle.second().leases.acquire('l', 'node-b', 50);
      expect(b).toMatchObject({ holder: 'node-b', epoch: 2 });
      await sleep(120);
      const a = await store.leases.acquire('l', 'node-a', 60_000);
      expect(a).toMatchObject({ holder: 'node-a', epoch: 3 });
      expect(await store.leases.get('other')).toBeUndefined();
    });

    it('parallel candidates: exactly one holds the lease', async () => {
      const stores = [handle.store(), handle.second()];
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => stores[i % 2]!.leases.acquire('race', `node-${i}`, 60_000)));
      const winners = results.filter((r) => r !== undefined);
      expect(winners).toHaveLength(1);
      expect(winners[0]?.epoch).toBe(1);
    });
  });

  describe('hosts.inventoryDigest', () => {
    it('each heartbeat stores the digest it carries; one without clears it', async () => {
      const store = handle.store();
      const d = 'd'.repeat(64);
      expect((await store.hosts.upsertHeartbeat(heartbeat('hd', { inventoryDigest: d }), T0)).host.inventoryDigest).toBe(d);
      expect((await handle.second().hosts.get('hd'))?.inventoryDigest).toBe(d);
      await store.hosts.upsertHeartbeat(heartbeat('hd', { inventoryDigest: 'e'.repeat(64) }), T0 + 1);
      expect((await store.hosts.get('hd'))?.inventoryDigest).toBe('e'.repeat(64));
      await store.hosts.upsertHeartbeat(heartbeat('hd'), T0 + 2);
      expect((await store.hosts.get('hd'))?.inventoryDigest).toBeUndefined();
    });
  });

  describe('coalesced heartbeats', () => {
    const slow = { heartbeatIntervalMs: 2000 };
    it('an unchanged beat of an ONLINE host is answered without a write until the flush; reads through the store see its time; markStaleOffline counts it', async () => {
      const store = handle.store();
      await store.hosts.upsertHeartbeat(heartbeat('hc', slow), T0);
      await store.hosts.setStatus('hc', 'ONLINE', { now: T0 });
      await store.hosts.upsertHeartbeat(heartbeat('hc', slow), T0 + 2000); // full write: learns ONLINE
      const quiet = await store.hosts.upsertHeartbeat(heartbeat('hc', slow), T0 + 4000);
      expect(quiet).toMatchObject({ created: false, startedRecovery: false, host: { status: 'ONLINE', lastHeartbeatAt: T0 + 4000 } });
      expect((await store.hosts.get('hc'))?.lastHeartbeatAt).toBe(T0 + 4000);
      expect((await handle.second().hosts.get('hc'))?.lastHeartbeatAt).toBe(T0 + 2000); // not written yet
      // Interval 2 s, 3 missed beats: stale only 6 s after the coalesced beat, which the sweep flushes first.
      expect(await store.hosts.markStaleOffline(T0 + 9000, 3)).toEqual([]);
      expect((await handle.second().hosts.get('hc'))?.lastHeartbeatAt).toBe(T0 + 4000);
      expect(await store.hosts.markStaleOffline(T0 + 10_500, 3)).toEqual(['hc']);
      // The next beat is a full write again: the OFFLINE host returns RECOVERING.
      expect(await store.hosts.upsertHeartbeat(heartbeat('hc', slow), T0 + 11_000)).toMatchObject({
        startedRecovery: true,
        host: { status: 'RECOVERING' },
      });
    });

    it("a host beating faster than every 2 s is always written in full (another replica's detector reads the database)", async () => {
      const store = handle.store();
      const fast = { heartbeatIntervalMs: 300 };
      await store.hosts.upsertHeartbeat(heartbeat('hf', fast), T0);
      await store.hosts.setStatus('hf', 'ONLINE', { now: T0 });
      await store.hosts.upsertHeartbeat(heartbeat('hf', fast), T0 + 300);
      await store.hosts.upsertHeartbeat(heartbeat('hf', fast), T0 + 600);
      expect((await handle.second().hosts.get('hf'))?.lastHeartbeatAt).toBe(T0 + 600);
    });

    it('a changed report is written at once, and a status changed elsewhere is seen at the flush', async () => {
      const store = handle.store();
      await store.hosts.upsertHeartbeat(heartbeat('hx', slow), T0);
      await store.hosts.setStatus('hx', 'ONLINE', { now: T0 });
      await store.hosts.upsertHeartbeat(heartbeat('hx', slow), T0 + 1);
      await store.hosts.upsertHeartbeat(heartbeat('hx', { ...slow, version: '0.2.0' }), T0 + 2);
      expect((await handle.second().hosts.get('hx'))?.version).toBe('0.2.0');
      if (store.dialect !== 'postgres') return; // one SQLite connection: nothing else changes the row
      await handle.second().hosts.setMaintenance('hx', { enabled: true, message: 'm', since: T0 }, T0 + 3);
      await handle.second().hosts.setStatus('hx', 'MAINTENANCE', { now: T0 + 3 });
      expect((await store.hosts.upsertHeartbeat(heartbeat('hx', { ...slow, version: '0.2.0' }), T0 + 4)).host.status).toBe('ONLINE'); // coalesced, as last written
      await store.hosts.markStaleOffline(T0 + 5, 1000); // flushes: the status differs, the host is forgotten
      expect((await store.hosts.upsertHeartbeat(heartbeat('hx', { ...slow, version: '0.2.0' }), T0 + 6)).host.status).toBe('MAINTENANCE');
    });
  });

  describe('slim fleet reads', () => {
    it('lastChangeByHost answers the latest instance change per host; list by hostIds only those hosts', async () => {
      const store = handle.store();
      for (const id of ['sa', 'sb', 'sc']) await store.hosts.upsertHeartbeat(heartbeat(id), T0);
      await store.hosts.setStatus('sb', 'ONLINE', { now: T0 });
      await store.instances.create(instance('sl-1', { hostId: 'sa', updatedAt: T0 + 5 }));
      await store.instances.create(instance('sl-2', { name: 'sl-2', hostId: 'sa', updatedAt: T0 + 9 }));
      expect((await store.instances.lastChangeByHost()).sa).toBe(T0 + 9);
      expect((await store.instances.list({ hostIds: ['sa', 'sc'] })).map((i) => i.id).sort()).toEqual(['sl-1', 'sl-2']);
      expect(await store.instances.list({ hostIds: [] })).toEqual([]);
    });
  });

  describe('releaseClaimsOf (quick reclaim)', () => {
    it("expires only the node's other incarnations' dispatched claims, so they are claimable at once", async () => {
      const store = handle.store();
      for (const id of ['c1', 'c2', 'c3', 'c4'])
        await store.commands.create({ id, kind: 'start', payload: {}, requestId: 'r', instanceId: `i-${id}` }, T0);
      const claim = async (claimer: string) => (await store.commands.claimDue(T0, 1, { claimer, leaseMs: 30_000 }))[0]!.id;
      const old = await claim('node-1:boot-a');
      const mine = await claim('node-1:boot-b');
      const other = await claim('node-10:boot-a');
      expect(await store.commands.releaseClaimsOf('node-1', 'boot-b', T0 + 100)).toBe(1);
      const reclaimed = await store.commands.claimDue(T0 + 100, 10, { claimer: 'node-1:boot-b', leaseMs: 30_000 });
      expect(reclaimed.map((c) => c.id).sort()).toEqual([old, 'c4'].sort());
      expect(reclaimed.find((c) => c.id === old)?.attempts).toBe(2);
      expect((await store.commands.get(mine))?.leaseUntil).toBe(T0 + 30_000);
      expect((await store.commands.get(other))?.claimedBy).toBe('node-10:boot-a');
      expect(await store.commands.releaseClaimsOf('node-1', 'boot-b', T0 + 200)).toBe(0);
    });
  });
}
