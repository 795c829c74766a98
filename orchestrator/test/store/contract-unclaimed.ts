// Contract tests: the durable per-host set of unclaimed containers (#3).

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { heartbeat, T0 } from './fixtures.js';

const entry = (instanceId: string, groupId: string | null = 'g', variantId: string | null = 'v') => ({ instanceId, groupId, variantId });

export function unclaimedContract(handle: StoreHandle): void {
  describe('unclaimed containers', () => {
    it('replace makes the host set exactly the entries: new ones stamped now, kept ones keep firstSeenAt, the rest dropped', async () => {
      const store = handle.store();
      await store.hosts.upsertHeartbeat(heartbeat('hu'), T0);
      expect(await store.unclaimed.listForHost('hu')).toEqual([]);
      const first = await store.unclaimed.replaceForHost('hu', [entry('b'), entry('a', null, null), entry('c')], T0);
      expect(first).toEqual([
        { hostId: 'hu', instanceId: 'a', groupId: null, variantId: null, firstSeenAt: T0 },
        { hostId: 'hu', instanceId: 'b', groupId: 'g', variantId: 'v', firstSeenAt: T0 },
        { hostId: 'hu', instanceId: 'c', groupId: 'g', variantId: 'v', firstSeenAt: T0 },
      ]);
      // b disappears, a gets labels, d is new, c stays; a repeated id counts once.
      const second = await store.unclaimed.replaceForHost(
        'hu',
        [entry('a', 'g2', 'v2'), entry('c'), entry('d'), entry('d', 'other', 'x')],
        T0 + 500,
      );
      expect(second).toEqual([
        { hostId: 'hu', instanceId: 'a', groupId: 'g2', variantId: 'v2', firstSeenAt: T0 },
        { hostId: 'hu', instanceId: 'c', groupId: 'g', variantId: 'v', firstSeenAt: T0 },
        { hostId: 'hu', instanceId: 'd', groupId: 'g', variantId: 'v', firstSeenAt: T0 + 500 },
      ]);
      expect(await handle.second().unclaimed.listForHost('hu')).toEqual(second);
      expect(await store.unclaimed.replaceForHost('hu', [], T0 + 600)).toEqual([]);
      expect(await store.unclaimed.listForHost('hu')).toEqual([]);
    });

    it('sets are per host: the same instance id can wait on two hosts; get and remove touch one host only', async () => {
      const store = handle.store();
      await store.hosts.upsertHeartbeat(heartbeat('h1'), T0);
      await store.hosts.upsertHeartbeat(heartbeat('h2'), T0);
      await store.unclaimed.replaceForHost('h1', [entry('x'), entry('y')], T0);
      await store.unclaimed.replaceForHost('h2', [entry('x')], T0 + 1);
      expect(await store.unclaimed.get('h2', 'x')).toEqual({
        hostId: 'h2',
        instanceId: 'x',
        groupId: 'g',
        variantId: 'v',
        firstSeenAt: T0 + 1,
      });
      expect(await store.unclaimed.get('h2', 'y')).toBeUndefined();
      expect(await store.unclaimed.remove('h1', 'x')).toBe(true);
      expect(await store.unclaimed.remove('h1', 'x')).toBe(false);
      expect((await store.unclaimed.listForHost('h1')).map((r) => r.instanceId)).toEqual(['y']);
      expect((await store.unclaimed.listForHost('h2')).map((r) => r.instanceId)).toEqual(['x']);
      expect(await store.unclaimed.listForHost('nope')).toEqual([]);
    });

    it('replacing for an unknown host is HOST_NOT_FOUND; deleting a host drops its set', async () => {
      const store = handle.store();
      await expect(store.unclaimed.replaceForHost('ghost', [entry('a')], T0)).rejects.toMatchObject({ code: 'HOST_NOT_FOUND' });
      await store.hosts.upsertHeartbeat(heartbeat('hd'), T0);
      await store.unclaimed.replaceForHost('hd', [entry('a')], T0);
      await store.hosts.delete('hd');
      expect(await store.unclaimed.listForHost('hd')).toEqual([]);
    });

    it('roll back with the transaction they were written in (an adoption removes its entry atomically)', async () => {
      const store = handle.store();
      await store.hosts.upsertHeartbeat(heartbeat('ht'), T0);
      await store.unclaimed.replaceForHost('ht', [entry('a'), entry('b')], T0);
      await expect(
        store.transaction(async (tx) => {
          expect(await tx.unclaimed.remove('ht', 'a')).toBe(true);
          await tx.unclaimed.replaceForHost('ht', [entry('c')], T0 + 1);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect((await store.unclaimed.listForHost('ht')).map((r) => r.instanceId)).toEqual(['a', 'b']);
    });
  });
}
