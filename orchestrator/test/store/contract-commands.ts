// Contract tests: durable commands (claim, lease, per-instance order, retry).

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { T0 } from './fixtures.js';

const LEASE = { claimer: 'w1', leaseMs: 30_000 };

export function commandContract(handle: StoreHandle): void {
  describe('commands', () => {
    it('are created pending and round-trip their payload', async () => {
      const store = handle.store();
      const c = await store.commands.create(
        {
          id: 'c1',
          kind: 'create',
          payload: { layers: [{ id: 'l', checksum: 'x' }], n: 1.5, ok: true, none: null },
          requestId: 'req-1',
          instanceId: 'i1',
          hostId: 'h1',
        },
        T0,
      );
      expect(c).toMatchObject({
        status: 'pending',
        attempts: 0,
        maxAttempts: 10,
        nextAttemptAt: T0,
        claimedBy: null,
        leaseUntil: null,
        result: null,
        completedAt: null,
      });
      expect(await store.commands.get('c1')).toEqual(c);
      await expect(store.commands.create({ id: 'c1', kind: 'x', payload: {}, requestId: 'r' }, T0)).rejects.toMatchObject({
        code: 'CONFLICT',
      });
    });

    it('claimDue takes only due commands, marks them dispatched with a lease, and never hands one out twice', async () => {
      const store = handle.store();
      await store.commands.create({ id: 'due', kind: 'start', payload: {}, requestId: 'r' }, T0);
      await store.commands.create({ id: 'later', kind: 'start', payload: {}, requestId: 'r', nextAttemptAt: T0 + 1000 }, T0);
      const claimed = await store.commands.claimDue(T0, 10, LEASE);
      expect(claimed.map((c) => c.id)).toEqual(['due']);
      expect(claimed[0]).toMatchObject({ status: 'dispatched', attempts: 1, claimedBy: 'w1', leaseUntil: T0 + 30_000 });
      expect(await store.commands.claimDue(T0 + 1, 10, { claimer: 'w2', leaseMs: 1 })).toEqual([]);
      expect((await store.commands.claimDue(T0 + 1000, 10, LEASE)).map((c) => c.id)).toEqual(['later']);
    });

    it('one instance’s commands are claimed in creation order, one at a time', async () => {
      const store = handle.store();
      for (const id of ['a1', 'a2', 'a3']) await store.commands.create({ id, kind: 'k', payload: {}, requestId: 'r', instanceId: 'A' }, T0);
      await store.commands.create({ id: 'b1', kind: 'k', payload: {}, requestId: 'r', instanceId: 'B' }, T0);
      expect((await store.commands.claimDue(T0, 10, LEASE)).map((c) => c.id)).toEqual(['a1', 'b1']);
      expect(await store.commands.claimDue(T0, 10, LEASE)).toEqual([]);
      expect(await store.commands.succeed('a1', { containerId: 'x' }, { now: T0 + 1, claimer: 'w1' })).toBe(true);
      expect((await store.commands.claimDue(T0 + 1, 10, LEASE)).map((c) => c.id)).toEqual(['a2']);
      expect((await store.commands.unfinishedForInstance('A')).map((c) => c.id)).toEqual(['a2', 'a3']);
    });

    it('a dispatched command whose lease expired (crashed claimer) is claimed again; the old claimer loses it', async () => {
      const store = handle.store();
      await store.commands.create({ id: 'c1', kind: 'create', payload: {}, requestId: 'r', instanceId: 'i' }, T0);
      await store.commands.claimDue(T0, 1, { claimer: 'dead', leaseMs: 100 });
      expect(await store.commands.claimDue(T0 + 99, 1, LEASE)).toEqual([]);
      const again = await store.commands.claimDue(T0 + 100, 1, { claimer: 'new', leaseMs: 100 });
      expect(again[0]).toMatchObject({ id: 'c1', attempts: 2, claimedBy: 'new' });
      expect(await store.commands.renewLease('c1', 'dead', T0 + 1000)).toBe(false);
      expect(await store.commands.succeed('c1', null, { now: T0 + 101, claimer: 'dead' })).toBe(false);
      expect(await store.commands.renewLease('c1', 'new', T0 + 1000)).toBe(true);
      expect(await store.commands.succeed('c1', { ok: 1 }, { now: T0 + 102, claimer: 'new' })).toBe(true);
      expect(await store.commands.get('c1')).toMatchObject({
        status: 'succeeded',
        result: { ok: 1 },
        completedAt: T0 + 102,
        leaseUntil: null,
      });
      await expect(store.commands.succeed('nope', null, { now: T0 })).rejects.toMatchObject({ code: 'COMMAND_NOT_FOUND' });
    });

    it('fail with retryAt goes back to pending until maxAttempts, then fails for good', async () => {
      const store = handle.store();
      await store.commands.create({ id: 'c1', kind: 'start', payload: {}, requestId: 'r', maxAttempts: 2 }, T0);
      await store.commands.claimDue(T0, 1, LEASE);
      const retried = await store.commands.fail('c1', 'agent unreachable', { now: T0 + 1, retryAt: T0 + 500, claimer: 'w1' });
      expect(retried).toMatchObject({
        status: 'pending',
        nextAttemptAt: T0 + 500,
        lastError: 'agent unreachable',
        completedAt: null,
        attempts: 1,
      });
      expect(await store.commands.claimDue(T0 + 499, 1, LEASE)).toEqual([]);
      await store.commands.claimDue(T0 + 500, 1, LEASE);
      const failed = await store.commands.fail('c1', 'still down', { now: T0 + 501, retryAt: T0 + 900 });
      expect(failed).toMatchObject({ status: 'failed', attempts: 2, completedAt: T0 + 501, lastError: 'still down' });
      await expect(store.commands.fail('c1', 'x', { now: T0 })).rejects.toMatchObject({ code: 'CONFLICT' });
      expect(await store.commands.countByStatus()).toEqual({ pending: 0, dispatched: 0, succeeded: 0, failed: 1 });
      expect((await store.commands.list({ statuses: ['failed'] })).map((c) => c.id)).toEqual(['c1']);
    });

    it('concurrent claimers never receive the same command', async () => {
      const store = handle.store();
      const total = 40;
      for (let n = 0; n < total; n++) {
        await store.commands.create({ id: `c${n}`, kind: 'k', payload: {}, requestId: 'r', instanceId: `i${n % 20}` }, T0);
      }
      const seen: string[] = [];
      // Rounds of 8 parallel claimers until everything ran; bounded.
      for (let round = 0; round < 20 && seen.length < total; round++) {
        const batches = await Promise.all(
          Array.from({ length: 8 }, (_, w) => store.commands.claimDue(T0, 3, { claimer: `w${w}`, leaseMs: 60_000 })),
        );
        const claimed = batches.flat();
        seen.push(...claimed.map((c) => c.id));
        await Promise.all(claimed.map((c) => store.commands.succeed(c.id, null, { now: T0, claimer: c.claimedBy! })));
      }
      expect(seen).toHaveLength(total);
      expect(new Set(seen).size).toBe(total);
    });
  });
}
