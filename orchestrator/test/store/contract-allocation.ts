// Contract tests: allocation's claim (instances.claimForSession) — one
// conditional statement that never doubles and never waits for a row another
// transaction holds.

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { instance, T0 } from './fixtures.js';

export function allocationContract(handle: StoreHandle): void {
  describe('instances.claimForSession', () => {
    it('claims an unallocated instance at the expected version, bumping the version; a second claim gets nothing', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      const got = await store.instances.claimForSession('i1', 's1', { now: T0 + 5, expectedVersion: 1 });
      expect(got).toMatchObject({ id: 'i1', sessionId: 's1', version: 2, updatedAt: T0 + 5 });
      expect(await store.instances.claimForSession('i1', 's2', { now: T0 + 6, expectedVersion: 2 })).toBeUndefined();
      expect((await store.instances.get('i1'))?.sessionId).toBe('s1');
    });

    it('a stale expectedVersion or an unknown id claims nothing', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      await store.instances.update('i1', { players: { online: 1, max: 20, at: T0 } }, { now: T0 });
      expect(await store.instances.claimForSession('i1', 's1', { now: T0, expectedVersion: 1 })).toBeUndefined();
      expect(await store.instances.claimForSession('nope', 's1', { now: T0, expectedVersion: 1 })).toBeUndefined();
      expect((await store.instances.get('i1'))?.sessionId).toBeNull();
    });

    it('20 parallel claims of one instance (from two connections on PostgreSQL): exactly one wins', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      // Two SQLite connections in one process would block each other's synchronous driver; one connection serializes anyway.
      const second = store.dialect === 'postgres' ? handle.second() : store;
      const results = await Promise.all(Array.from({ length: 20 }, (_, n) => (n % 2 ? second : store).transaction((tx) => tx.instances.claimForSession('i1', `s${n}`, { now: T0, expectedVersion: 1 }))));
      const winners = results.filter((r) => r !== undefined);
      expect(winners).toHaveLength(1);
      expect((await store.instances.get('i1'))?.sessionId).toBe(winners[0]!.sessionId);
    });

    it('does not wait for a row another transaction holds: it answers nothing while that transaction is open', async () => {
      const store = handle.store();
      if (store.dialect === 'sqlite') return; // SQLite transactions are serial: nothing can hold a row during another's claim.
      await store.instances.create(instance('i1', { state: 'online' }));
      const second = handle.second();
      let release!: () => void;
      const held = new Promise<void>((r) => { release = r; });
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => { locked = r; });
      const holder = store.transaction(async (tx) => {
        await tx.instances.update('i1', { desiredState: 'running' }, { now: T0 });
        locked();
        await held;
      });
      await isLocked;
      const t = Date.now();
      expect(await second.instances.claimForSession('i1', 's1', { now: T0, expectedVersion: 2 })).toBeUndefined();
      expect(Date.now() - t).toBeLessThan(1000);
      release();
      await holder;
      expect(await second.instances.claimForSession('i1', 's1', { now: T0, expectedVersion: 2 })).toMatchObject({ sessionId: 's1', version: 3 });
    });

    it('with a session, the claim records the allocated session row atomically; a lost claim records none', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      const got = await store.instances.claimForSession('i1', 's1', { now: T0 + 5, expectedVersion: 1, session: { groupId: 'g1', metadata: { allocatedBy: 'me' } } });
      expect(got).toMatchObject({ id: 'i1', sessionId: 's1', version: 2 });
      expect(await store.sessions.get('s1')).toMatchObject({ id: 's1', groupId: 'g1', instanceId: 'i1', status: 'allocated', metadata: { allocatedBy: 'me' }, createdAt: T0 + 5, releasedAt: null });
      expect(await store.instances.claimForSession('i1', 's2', { now: T0 + 6, expectedVersion: 2, session: { groupId: 'g1', metadata: {} } })).toBeUndefined();
      expect(await store.sessions.get('s2')).toBeUndefined();
    });

    it('with a session, 20 parallel claims of one instance: one winner, one session row', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      const second = store.dialect === 'postgres' ? handle.second() : store;
      const results = await Promise.all(Array.from({ length: 20 }, (_, n) => (n % 2 ? second : store).instances.claimForSession('i1', `s${n}`, { now: T0, expectedVersion: 1, session: { groupId: 'g1', metadata: {} } })));
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
      expect(await store.sessions.list({ instanceId: 'i1' })).toHaveLength(1);
    });
  });
}
