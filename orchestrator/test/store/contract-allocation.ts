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
      const got = await store.instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], 's1', { now: T0 + 5 });
      expect(got).toMatchObject({ id: 'i1', sessionId: 's1', version: 2, updatedAt: T0 + 5 });
      expect(await store.instances.claimForSession([{ id: 'i1', expectedVersion: 2 }], 's2', { now: T0 + 6 })).toBeUndefined();
      expect((await store.instances.get('i1'))?.sessionId).toBe('s1');
    });

    it('a stale expectedVersion or an unknown id claims nothing', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      await store.instances.update('i1', { players: { online: 1, max: 20, at: T0 } }, { now: T0 });
      expect(await store.instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], 's1', { now: T0 })).toBeUndefined();
      expect(await store.instances.claimForSession([{ id: 'nope', expectedVersion: 1 }], 's1', { now: T0 })).toBeUndefined();
      expect((await store.instances.get('i1'))?.sessionId).toBeNull();
    });

    it('20 parallel claims of one instance (from two connections on PostgreSQL): exactly one wins', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      // Two SQLite connections in one process would block each other's synchronous driver; one connection serializes anyway.
      const second = store.dialect === 'postgres' ? handle.second() : store;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          (n % 2 ? second : store).transaction((tx) =>
            tx.instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], `s${n}`, { now: T0 }),
          ),
        ),
      );
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
      const held = new Promise<void>((r) => {
        release = r;
      });
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => {
        locked = r;
      });
      const holder = store.transaction(async (tx) => {
        await tx.instances.update('i1', { desiredState: 'running' }, { now: T0 });
        locked();
        await held;
      });
      await isLocked;
      const t = Date.now();
      expect(await second.instances.claimForSession([{ id: 'i1', expectedVersion: 2 }], 's1', { now: T0 })).toBeUndefined();
      expect(Date.now() - t).toBeLessThan(1000);
      release();
      await holder;
      expect(await second.instances.claimForSession([{ id: 'i1', expectedVersion: 2 }], 's1', { now: T0 })).toMatchObject({
        sessionId: 's1',
        version: 3,
      });
    });

    it('with a session, the claim records the allocated session row atomically; a lost claim records none', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      const got = await store.instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], 's1', {
        now: T0 + 5,
        session: { groupId: 'g1', metadata: { allocatedBy: 'me' } },
      });
      expect(got).toMatchObject({ id: 'i1', sessionId: 's1', version: 2 });
      expect(await store.sessions.get('s1')).toMatchObject({
        id: 's1',
        groupId: 'g1',
        instanceId: 'i1',
        status: 'allocated',
        metadata: { allocatedBy: 'me' },
        createdAt: T0 + 5,
        releasedAt: null,
      });
      expect(
        await store.instances.claimForSession([{ id: 'i1', expectedVersion: 2 }], 's2', {
          now: T0 + 6,
          session: { groupId: 'g1', metadata: {} },
        }),
      ).toBeUndefined();
      expect(await store.sessions.get('s2')).toBeUndefined();
    });

    it('with a session, 20 parallel claims of one instance: one winner, one session row', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      const second = store.dialect === 'postgres' ? handle.second() : store;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          (n % 2 ? second : store).instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], `s${n}`, {
            now: T0,
            session: { groupId: 'g1', metadata: {} },
          }),
        ),
      );
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
      expect(await store.sessions.list({ instanceId: 'i1' })).toHaveLength(1);
    });
  });

  describe('instances.allocationRows', () => {
    it('reads per instance what an allocation chooses by, in creation order (host status and load come from the hosts, read apart)', async () => {
      const store = handle.store();
      await store.instances.create(instance('a', { state: 'online', hostId: 'h1', createdAt: T0 }));
      await store.instances.create(
        instance('b', {
          state: 'online',
          hostId: 'h1',
          createdAt: T0 + 1,
          variantId: 'big',
          containerConfig: { ...instance('x').containerConfig, labels: {} },
        }),
      );
      await store.instances.create(
        instance('c', { state: 'paused', hostId: 'h2', createdAt: T0 + 2, fleet: { draining: { since: T0, reason: 'despawn' } } as never }),
      );
      await store.instances.create(instance('d', { state: 'draft', hostId: null, createdAt: T0 + 3 }));
      await store.instances.create(instance('other', { state: 'online', hostId: 'h2', groupId: 'g2', createdAt: T0 }));
      await store.instances.claimForSession([{ id: 'b', expectedVersion: 1 }], 's1', { now: T0 });
      const rows = await store.instances.allocationRows('g1');
      expect(rows).toEqual([
        {
          id: 'a',
          hostId: 'h1',
          variantId: 'default',
          state: 'online',
          allocated: false,
          draining: false,
          labels: { team: 'red' },
          version: 1,
        },
        { id: 'b', hostId: 'h1', variantId: 'big', state: 'online', allocated: true, draining: false, labels: {}, version: 2 },
        {
          id: 'c',
          hostId: 'h2',
          variantId: 'default',
          state: 'paused',
          allocated: false,
          draining: true,
          labels: { team: 'red' },
          version: 1,
        },
        {
          id: 'd',
          hostId: null,
          variantId: 'default',
          state: 'draft',
          allocated: false,
          draining: false,
          labels: { team: 'red' },
          version: 1,
        },
      ]);
      expect(await store.instances.allocationRows('nope')).toEqual([]);
    });

    it('counts a despawn or delete accepted but not begun as draining (an allocation must not take a world about to go; sim seed 834)', async () => {
      const store = handle.store();
      const pending = (kind: string) => ({ kind, commandId: `cmd-${kind}`, startedAt: T0 });
      await store.instances.create(instance('a', { state: 'online', hostId: 'h1', createdAt: T0, activeAction: pending('despawn') }));
      await store.instances.create(instance('b', { state: 'online', hostId: 'h1', createdAt: T0 + 1, activeAction: pending('delete') }));
      await store.instances.create(instance('c', { state: 'online', hostId: 'h1', createdAt: T0 + 2, activeAction: pending('backup') }));
      await store.instances.create(instance('d', { state: 'online', hostId: 'h1', createdAt: T0 + 3 }));
      const rows = await store.instances.allocationRows('g1');
      expect(rows.map((r) => [r.id, r.draining])).toEqual([
        ['a', true],
        ['b', true],
        ['c', false],
        ['d', false],
      ]);
    });
  });

  describe('instances.releaseSession', () => {
    it('releases an allocated session and frees its instance (version bumped) at once; a second release changes nothing', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      await store.instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], 's1', {
        now: T0,
        session: { groupId: 'g1', metadata: { allocatedBy: 'me' } },
      });
      const released = await store.instances.releaseSession('s1', T0 + 9);
      expect(released).toEqual({
        instanceFreed: true,
        freedVersion: 3,
        session: {
          id: 's1',
          groupId: 'g1',
          instanceId: 'i1',
          status: 'released',
          metadata: { allocatedBy: 'me' },
          createdAt: T0,
          releasedAt: T0 + 9,
        },
      });
      expect(await store.instances.get('i1')).toMatchObject({ sessionId: null, version: 3, updatedAt: T0 + 9 }); // freedVersion is the instance's version now
      expect(await store.instances.releaseSession('s1', T0 + 10)).toBeUndefined();
      expect(await store.instances.releaseSession('unknown', T0 + 10)).toBeUndefined();
      expect((await store.sessions.get('s1'))?.releasedAt).toBe(T0 + 9);
    });

    it('with groupIds, only a session of those groups is released', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      await store.instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], 's1', {
        now: T0,
        session: { groupId: 'g1', metadata: {} },
      });
      expect(await store.instances.releaseSession('s1', T0 + 1, { groupIds: ['g2'] })).toBeUndefined();
      expect(await store.instances.releaseSession('s1', T0 + 1, { groupIds: [] })).toBeUndefined();
      expect((await store.sessions.get('s1'))?.status).toBe('allocated');
      expect((await store.instances.get('i1'))?.sessionId).toBe('s1');
      expect(await store.instances.releaseSession('s1', T0 + 2, { groupIds: ['g2', 'g1'] })).toMatchObject({
        instanceFreed: true,
        session: { status: 'released', releasedAt: T0 + 2 },
      });
    });

    it('claims the first candidate still free, in the given order', async () => {
      const store = handle.store();
      for (const id of ['a', 'b', 'c']) await store.instances.create(instance(id, { state: 'online' }));
      await store.instances.claimForSession([{ id: 'a', expectedVersion: 1 }], 'taken', { now: T0 });
      await store.instances.update('b', { desiredState: 'running' }, { now: T0 }); // b moved on: version 2
      const got = await store.instances.claimForSession(
        [
          { id: 'a', expectedVersion: 1 },
          { id: 'b', expectedVersion: 1 },
          { id: 'c', expectedVersion: 1 },
        ],
        's1',
        { now: T0, session: { groupId: 'g1', metadata: {} } },
      );
      expect(got).toMatchObject({ id: 'c', sessionId: 's1' });
      expect(await store.sessions.get('s1')).toMatchObject({ instanceId: 'c' });
      expect(await store.instances.claimForSession([], 's2', { now: T0 })).toBeUndefined();
    });

    it('8 parallel claims offered the same 8 candidates: each gets a different instance', async () => {
      const store = handle.store();
      const ids = Array.from({ length: 8 }, (_, n) => `c${n}`);
      for (const id of ids) await store.instances.create(instance(id, { state: 'online' }));
      const second = store.dialect === 'postgres' ? handle.second() : store;
      const offered = ids.map((id) => ({ id, expectedVersion: 1 }));
      const got = await Promise.all(
        ids.map((_, n) =>
          (n % 2 ? second : store).instances.claimForSession(offered, `s${n}`, { now: T0, session: { groupId: 'g1', metadata: {} } }),
        ),
      );
      expect(new Set(got.map((g) => g?.id)).size).toBe(8);
      expect(got.every((g) => g !== undefined)).toBe(true);
    });

    it('with an audit entry, the claim and the release each commit theirs (instanceId added), only when they change something', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      const entry = (action: string, targetKind: string, targetId: string, params: Record<string, string>) => ({
        at: T0,
        actor: 'alloc-bot',
        action,
        targetKind,
        targetId,
        params,
        result: 'ok' as const,
        errorCode: null,
        requestId: 'req-1',
      });
      const claim = (sid: string) =>
        store.instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], sid, {
          now: T0,
          session: { groupId: 'g1', metadata: {} },
          audit: entry('group.allocate', 'group', 'g1', { allocationId: sid }),
        });
      expect(await claim('s1')).toMatchObject({ id: 'i1' });
      expect(await claim('s2')).toBeUndefined(); // lost: no entry
      const release = () => store.instances.releaseSession('s1', T0 + 1, { audit: entry('allocation.release', 'allocation', 's1', {}) });
      expect(await release()).toMatchObject({ instanceFreed: true });
      expect(await release()).toBeUndefined(); // already released: no entry
      const all = await store.audit.list({ actor: 'alloc-bot' });
      expect(all.map((e) => [e.action, e.targetId, e.params, e.result, e.requestId]).reverse()).toEqual([
        ['group.allocate', 'g1', { allocationId: 's1', instanceId: 'i1' }, 'ok', 'req-1'],
        ['allocation.release', 's1', { instanceId: 'i1' }, 'ok', 'req-1'],
      ]);
    });

    it('an instance that moved on to another session keeps it', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      await store.sessions.create({
        id: 's-old',
        groupId: 'g1',
        instanceId: 'i1',
        status: 'allocated',
        metadata: {},
        createdAt: T0,
        releasedAt: null,
      });
      await store.instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], 's-new', { now: T0 });
      expect(await store.instances.releaseSession('s-old', T0 + 1)).toMatchObject({
        instanceFreed: false,
        session: { status: 'released' },
      });
      expect((await store.instances.get('i1'))?.sessionId).toBe('s-new');
    });

    it('20 parallel releases of one session: one release, the instance freed once', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'online' }));
      await store.instances.claimForSession([{ id: 'i1', expectedVersion: 1 }], 's1', {
        now: T0,
        session: { groupId: 'g1', metadata: {} },
      });
      const second = store.dialect === 'postgres' ? handle.second() : store;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, n) => (n % 2 ? second : store).instances.releaseSession('s1', T0 + 1)),
      );
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
      expect(await store.instances.get('i1')).toMatchObject({ sessionId: null, version: 3 });
    });
  });
}
