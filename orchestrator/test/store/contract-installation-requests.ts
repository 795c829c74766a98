// Contract tests: installation requests (docs/lifecycle.md "Installation requests") — stored pending,
// decided once by a conditional update, listed per requester and status.

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { T0 } from './fixtures.js';

const ask = (id: string, requestedBy = 'alice', createdAt = T0) => ({
  id,
  requestedBy,
  groupId: 'g',
  variantId: 'v',
  name: null,
  suggested: { settings: { motd: 'hi' }, note: 'please' },
  createdAt,
});

export function installationRequestContract(handle: StoreHandle): void {
  describe('installation requests', () => {
    it('are stored pending with their suggestions; a duplicate id is CONFLICT', async () => {
      const store = handle.store();
      const created = await store.installationRequests.create({ ...ask('r1'), name: 'survival' });
      expect(created).toEqual({
        id: 'r1',
        requestedBy: 'alice',
        groupId: 'g',
        variantId: 'v',
        name: 'survival',
        suggested: { settings: { motd: 'hi' }, note: 'please' },
        status: 'pending',
        decidedBy: null,
        decisionNote: null,
        instanceId: null,
        createdAt: T0,
        decidedAt: null,
      });
      expect(await handle.second().installationRequests.get('r1')).toEqual(created);
      expect(await store.installationRequests.get('nope')).toBeUndefined();
      await expect(store.installationRequests.create(ask('r1'))).rejects.toMatchObject({ code: 'CONFLICT' });
    });

    it('list filters by requester and status, oldest first', async () => {
      const store = handle.store();
      await store.installationRequests.create(ask('b', 'alice', T0 + 2));
      await store.installationRequests.create(ask('a', 'bob', T0 + 1));
      await store.installationRequests.create(ask('c', 'alice', T0 + 3));
      await store.installationRequests.decide('c', { status: 'rejected', decidedBy: 'admin', note: 'no', now: T0 + 4 });
      expect((await store.installationRequests.list()).map((r) => r.id)).toEqual(['a', 'b', 'c']);
      expect((await store.installationRequests.list({ requestedBy: 'alice' })).map((r) => r.id)).toEqual(['b', 'c']);
      expect((await store.installationRequests.list({ requestedBy: 'alice', status: 'pending' })).map((r) => r.id)).toEqual(['b']);
    });

    it('a decision applies once: the second decider gets undefined; unknown id is NOT_FOUND', async () => {
      const store = handle.store();
      await store.installationRequests.create(ask('d1'));
      const approved = await store.installationRequests.decide('d1', {
        status: 'approved',
        decidedBy: 'admin',
        instanceId: 'i-1',
        now: T0 + 10,
      });
      expect(approved).toMatchObject({ status: 'approved', decidedBy: 'admin', instanceId: 'i-1', decisionNote: null, decidedAt: T0 + 10 });
      expect(
        await handle.second().installationRequests.decide('d1', { status: 'rejected', decidedBy: 'other', now: T0 + 11 }),
      ).toBeUndefined();
      expect((await store.installationRequests.get('d1'))?.status).toBe('approved');
      await expect(store.installationRequests.decide('ghost', { status: 'rejected', decidedBy: 'a', now: T0 })).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
    });

    it('roll back with the transaction they were decided in', async () => {
      const store = handle.store();
      await store.installationRequests.create(ask('t1'));
      await expect(
        store.transaction(async (tx) => {
          await tx.installationRequests.decide('t1', { status: 'approved', decidedBy: 'admin', instanceId: 'i-x', now: T0 });
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect((await store.installationRequests.get('t1'))?.status).toBe('pending');
    });
  });
}
