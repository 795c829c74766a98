// Contract tests: instance schedules and their run claim.

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { T0 } from './fixtures.js';

const TASKS = [
  { action: 'command' as const, payload: 'say hi', offsetSeconds: 0, continueOnFailure: false },
  { action: 'power' as const, payload: 'restart', offsetSeconds: 30, continueOnFailure: true },
];

const definition = (id: string, instanceId: string, createdAt: number, nextRunAt: number | null, enabled = true) => ({
  id,
  instanceId,
  name: `s ${id}`,
  cron: '0 4 * * *',
  enabled,
  onlyWhenOnline: true,
  tasks: TASKS,
  nextRunAt,
  createdAt,
});

export function schedulesContract(handle: StoreHandle): void {
  describe('schedules', () => {
    it('create, get, list per instance oldest first, update keeps the run bookkeeping, delete', async () => {
      const store = handle.store();
      const created = await store.schedules.create(definition('s1', 'i-s', T0, T0 + 60_000));
      expect(created).toEqual({
        id: 's1',
        instanceId: 'i-s',
        name: 's s1',
        cron: '0 4 * * *',
        enabled: true,
        onlyWhenOnline: true,
        tasks: TASKS,
        nextRunAt: T0 + 60_000,
        lastRunAt: null,
        lastResult: null,
        lastError: null,
        runningSince: null,
        createdAt: T0,
        updatedAt: T0,
      });
      await store.schedules.create(definition('s0', 'i-s', T0 + 1, null, false));
      await store.schedules.create(definition('s2', 'i-other', T0, T0));
      expect(await store.schedules.create(definition('s1', 'i-s', T0, null)).catch((e: { code: string }) => e.code)).toBe('CONFLICT');
      expect((await handle.second().schedules.listForInstance('i-s')).map((s) => s.id)).toEqual(['s1', 's0']);
      await store.schedules.finishRun('s1', { at: T0 + 5, result: 'failed', error: 'boom' });
      const updated = await store.schedules.update(
        's1',
        { name: 'renamed', cron: '*/5 * * * *', enabled: false, onlyWhenOnline: false, tasks: TASKS.slice(0, 1), nextRunAt: null },
        T0 + 9,
      );
      expect(updated).toMatchObject({
        name: 'renamed',
        cron: '*/5 * * * *',
        enabled: false,
        onlyWhenOnline: false,
        tasks: TASKS.slice(0, 1),
        nextRunAt: null,
        lastRunAt: T0 + 5,
        lastResult: 'failed',
        lastError: 'boom',
        updatedAt: T0 + 9,
        createdAt: T0,
      });
      expect(await store.schedules.update('nope', updated, T0).catch((e: { code: string }) => e.code)).toBe('NOT_FOUND');
      expect(await store.schedules.delete('s1')).toBe(true);
      expect(await store.schedules.delete('s1')).toBe(false);
      expect(await store.schedules.get('s1')).toBeUndefined();
      expect(await store.schedules.deleteForInstance('i-s')).toBe(1);
      expect((await store.schedules.listForInstance('i-other')).length).toBe(1);
    });

    it('listDue: enabled and due only, soonest first; the run claim is exclusive until finished or stale', async () => {
      const store = handle.store();
      await store.schedules.create(definition('late', 'i-d', T0, T0 + 10));
      await store.schedules.create(definition('early', 'i-d', T0, T0 + 5));
      await store.schedules.create(definition('future', 'i-d', T0, T0 + 1_000));
      await store.schedules.create(definition('off', 'i-d', T0, T0, false));
      await store.schedules.create(definition('never', 'i-d', T0, null));
      expect((await store.schedules.listDue(T0 + 10, 10)).map((s) => s.id)).toEqual(['early', 'late']);
      expect((await store.schedules.listDue(T0 + 10, 1)).map((s) => s.id)).toEqual(['early']);

      expect(await store.schedules.claimRun('early', { now: T0 + 10, staleBefore: T0 - 1_000, nextRunAt: T0 + 2_000 })).toBe(true);
      expect(await handle.second().schedules.claimRun('early', { now: T0 + 11, staleBefore: T0 - 1_000 })).toBe(false);
      expect(await store.schedules.get('early')).toMatchObject({ runningSince: T0 + 10, nextRunAt: T0 + 2_000 });
      expect((await store.schedules.listDue(T0 + 10, 10)).map((s) => s.id)).toEqual(['late']);
      await store.schedules.finishRun('early', { at: T0 + 20, result: 'skipped', error: null });
      expect(await store.schedules.get('early')).toMatchObject({
        runningSince: null,
        lastRunAt: T0 + 20,
        lastResult: 'skipped',
        lastError: null,
      });
      expect(await store.schedules.claimRun('early', { now: T0 + 30, staleBefore: T0 })).toBe(true);
      // A claim older than staleBefore (its runner died) is taken over.
      expect(await store.schedules.claimRun('early', { now: T0 + 40, staleBefore: T0 + 31 })).toBe(true);
      expect((await store.schedules.get('early'))?.runningSince).toBe(T0 + 40);
      expect(await store.schedules.claimRun('missing', { now: T0, staleBefore: T0 })).toBe(false);
    });
  });
}
