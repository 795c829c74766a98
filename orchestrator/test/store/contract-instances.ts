// Contract tests: instances (optimistic versions, transitions with history),
// history and configuration revisions.

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { instance, T0 } from './fixtures.js';

export function instanceContract(handle: StoreHandle): void {
  describe('instances', () => {
    it('create/get round-trips every field, JSON included; version starts at 1', async () => {
      const store = handle.store();
      const input = instance('i1', {
        hostId: 'h1',
        hostPort: 30001,
        endpoint: { host: '127.0.0.1', port: 30001 },
        observed: { container: 'running', startedAt: T0, observedAt: T0 + 1 },
        players: { online: 3, max: 20, at: T0 },
        activeAction: { kind: 'start', commandId: 'c1', startedAt: T0 },
        maintenance: { enabled: true, message: 'brb', since: T0 },
        pendingChanges: [{ key: 'MOTD', value: { text: 'x' }, mode: 'restart_required', requestedAt: T0 }],
        containerConfigPending: true,
        deletion: { scopes: ['container', 'player_data'], completed: ['container'], requestedAt: T0, lastError: null },
      });
      const created = await store.instances.create(input);
      expect(created).toEqual({ ...input, version: 1 });
      expect(await store.instances.get('i1')).toEqual(created);
      expect(await store.instances.getByName('name-i1')).toEqual(created);
      expect(await store.instances.get('missing')).toBeUndefined();
    });

    it('duplicate id or name is CONFLICT', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1'));
      await expect(store.instances.create(instance('i1', { name: 'other' }))).rejects.toMatchObject({ code: 'CONFLICT' });
      await expect(store.instances.create(instance('i2', { name: 'name-i1' }))).rejects.toMatchObject({ code: 'CONFLICT' });
    });

    it('update bumps the version; a stale expectedVersion is CONFLICT; the user is immutable', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1'));
      const a = await store.instances.update(
        'i1',
        { desiredState: 'stopped', settings: { MOTD: 'new' } },
        { now: T0 + 5, expectedVersion: 1 },
      );
      expect(a).toMatchObject({ version: 2, desiredState: 'stopped', settings: { MOTD: 'new' }, updatedAt: T0 + 5, state: 'draft' });
      await expect(store.instances.update('i1', { hostId: 'x' }, { now: T0, expectedVersion: 1 })).rejects.toMatchObject({
        code: 'CONFLICT',
      });
      expect((await store.instances.get('i1'))?.hostId).toBeNull();
      expect((await store.instances.update('i1', { hostId: null, endpoint: null }, { now: T0 + 6 })).version).toBe(3);
      await expect(store.instances.update('missing', {}, { now: T0 })).rejects.toMatchObject({ code: 'INSTANCE_NOT_FOUND' });
      // Cast: the type already forbids it; the store refuses it at runtime too.
      await expect(store.instances.update('i1', { user: { mode: 'image' } } as never, { now: T0 })).rejects.toMatchObject({
        code: 'IMMUTABLE',
      });
    });

    it('update never writes the state: a patch naming it (a cast) is refused and changes nothing; transition does', async () => {
      const store = handle.store();
      await store.instances.create(instance('i-state'));
      await expect(
        store.instances.update('i-state', { state: 'online', desiredState: 'stopped' } as never, { now: T0 + 1 }),
      ).rejects.toMatchObject({ code: 'INTERNAL', message: expect.stringContaining('transition') });
      expect(await store.instances.get('i-state')).toMatchObject({ state: 'draft', version: 1 });
      expect(await store.instances.transition('i-state', 'installing', { now: T0 + 2, reason: 'placed' })).toMatchObject({
        state: 'installing',
      });
    });

    it('list filters by group, host, states and desired states', async () => {
      const store = handle.store();
      await store.instances.create(instance('a', { groupId: 'g1', hostId: 'h1', state: 'online' }));
      await store.instances.create(
        instance('b', { groupId: 'g1', hostId: 'h2', state: 'stopped', desiredState: 'stopped', createdAt: T0 + 1 }),
      );
      await store.instances.create(instance('c', { groupId: 'g2', hostId: 'h1', state: 'online', createdAt: T0 + 2 }));
      const ids = async (p: Promise<{ id: string }[]>) => (await p).map((i) => i.id);
      expect(await ids(store.instances.list())).toEqual(['a', 'b', 'c']);
      expect(await ids(store.instances.list({ groupId: 'g1' }))).toEqual(['a', 'b']);
      expect(await ids(store.instances.list({ ids: ['c', 'a', 'gone'] }))).toEqual(['a', 'c']);
      expect(await ids(store.instances.list({ ids: [] }))).toEqual([]);
      expect(await ids(store.instances.list({ hostId: 'h1', states: ['online'] }))).toEqual(['a', 'c']);
      expect(await ids(store.instances.list({ desiredStates: ['stopped'] }))).toEqual(['b']);
      expect(await ids(store.instances.list({ states: [] }))).toEqual([]);
      expect(await store.instances.countByState()).toEqual({ online: 2, stopped: 1 });
      expect(await store.instances.countByHost()).toEqual({ h1: 2, h2: 1 });
      expect(await store.instances.countByGroup('g1')).toBe(2);
    });

    it('countForCaps serializes concurrent cap checks: 20 parallel creates against a cap of 5 store exactly 5', async () => {
      const store = handle.store();
      await store.instances.create(instance('other', { groupId: 'g2' }));
      const attempt = (n: number) =>
        store.transaction(async (tx) => {
          const counts = await tx.instances.countForCaps('g1');
          if (counts.group >= 5) return false;
          // Widen the window between count and insert: without the lock every caller would still see fewer than 5.
          await new Promise((r) => setTimeout(r, 5));
          await tx.instances.create(instance(`c${n}`, { groupId: 'g1', createdAt: T0 + n }));
          return true;
        });
      const results = await Promise.all(Array.from({ length: 20 }, (_, n) => attempt(n)));
      expect(results.filter(Boolean)).toHaveLength(5);
      expect(await store.instances.countByGroup('g1')).toBe(5);
      expect(await store.transaction((tx) => tx.instances.countForCaps('g1'))).toEqual({ group: 5, total: 6 });
    });

    it('countForCaps refuses to run outside a transaction (its lock would end at once)', async () => {
      await expect(handle.store().instances.countForCaps('g1')).rejects.toMatchObject({ code: 'INTERNAL' });
    });

    it('transition changes state and appends history atomically; a wrong from-state changes nothing', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1', { state: 'stopped' }));
      const started = await store.instances.transition('i1', 'starting', {
        now: T0 + 10,
        reason: 'user start',
        from: ['stopped'],
        actor: 'admin',
        commandId: 'c9',
        details: { via: 'api' },
        patch: { desiredState: 'running' },
      });
      expect(started).toMatchObject({
        state: 'starting',
        stateReason: 'user start',
        stateChangedAt: T0 + 10,
        desiredState: 'running',
        version: 2,
      });
      expect(await store.instances.transition('i1', 'starting', { now: T0 + 11, reason: 'again', from: ['stopped'] })).toBeUndefined();
      const history = await store.history.list('i1');
      expect(history).toHaveLength(1);
      expect(history[0]).toMatchObject({
        instanceId: 'i1',
        from: 'stopped',
        to: 'starting',
        reason: 'user start',
        actor: 'admin',
        commandId: 'c9',
        details: { via: 'api' },
        at: T0 + 10,
      });
      await expect(store.instances.transition('missing', 'online', { now: T0, reason: 'x' })).rejects.toMatchObject({
        code: 'INSTANCE_NOT_FOUND',
      });
    });

    it('history lists newest first with a limit; deleting the instance removes its history and revisions', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1'));
      for (let n = 0; n < 5; n++) {
        await store.history.append({
          instanceId: 'i1',
          at: T0 + n,
          from: null,
          to: 'stopped',
          reason: `r${n}`,
          actor: null,
          commandId: null,
          details: null,
        });
      }
      expect((await store.history.list('i1', { limit: 2 })).map((h) => h.reason)).toEqual(['r4', 'r3']);
      await store.revisions.append({ instanceId: 'i1', revision: 1, createdAt: T0, actor: null, reason: 'create', config: { a: 1 } });
      await store.instances.delete('i1');
      expect(await store.history.list('i1')).toEqual([]);
      expect(await store.revisions.list('i1')).toEqual([]);
    });
  });

  describe('configuration revisions', () => {
    it('are immutable and only the newest 20 are kept', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1'));
      const rev = {
        instanceId: 'i1',
        revision: 1,
        createdAt: T0,
        actor: 'admin',
        reason: 'create',
        config: { env: { RCON_PASSWORD: '***' }, list: [1, 2] },
      };
      expect(await store.revisions.append(rev)).toEqual(rev);
      await expect(store.revisions.append({ ...rev, reason: 'rewrite' })).rejects.toMatchObject({ code: 'IMMUTABLE' });
      expect((await store.revisions.get('i1', 1))?.reason).toBe('create');
      for (let n = 2; n <= 25; n++) await store.revisions.append({ ...rev, revision: n, createdAt: T0 + n });
      const kept = await store.revisions.list('i1');
      expect(kept).toHaveLength(20);
      expect(kept[0]?.revision).toBe(25);
      expect(kept[19]?.revision).toBe(6);
      expect(await store.revisions.get('i1', 5)).toBeUndefined();
    });

    it('keep the pinned revision (the one the container ran before) beyond the newest 20', async () => {
      const store = handle.store();
      await store.instances.create(instance('i1'));
      const rev = { instanceId: 'i1', revision: 1, createdAt: T0, actor: 'admin', reason: 'create', config: {} };
      for (let n = 1; n <= 25; n++) await store.revisions.append({ ...rev, revision: n, createdAt: T0 + n }, { pinned: [2] });
      const kept = (await store.revisions.list('i1')).map((r) => r.revision);
      expect(kept).toHaveLength(21);
      expect(kept).toContain(2);
      expect(kept).not.toContain(1);
      expect(kept[0]).toBe(25);
    });
  });
}
