// Contract tests: the backup store's records and per-instance backup policies.

import { describe, expect, it } from 'vitest';
import type { StoredBackup } from '../../src/store/store.js';
import type { StoreHandle } from './store-contract.js';
import { T0 } from './fixtures.js';

const backup = (backupId: string, createdAt: number, over: Partial<StoredBackup> = {}): StoredBackup => ({
  instanceId: 'i-b',
  backupId,
  sha256: 'a'.repeat(64),
  sizeBytes: 5_000_000_000,
  createdAt,
  storedAt: createdAt + 10,
  originHost: 'h1',
  storedPath: `i-b/${backupId}.tar.gz`,
  paths: null,
  trigger: 'manual',
  ...over,
});

export function backupsContract(handle: StoreHandle): void {
  describe('stored backups', () => {
    it('put inserts or replaces, lists oldest first per instance, delete says whether it removed one', async () => {
      const store = handle.store();
      await store.storedBackups.put(backup('b2', T0 + 2));
      await store.storedBackups.put(backup('b1', T0 + 1, { paths: ['world'], originHost: null, trigger: 'upload' }));
      await store.storedBackups.put(backup('other', T0, { instanceId: 'i-c' }));
      expect((await store.storedBackups.listForInstance('i-b')).map((b) => b.backupId)).toEqual(['b1', 'b2']);
      expect(await handle.second().storedBackups.get('i-b', 'b1')).toEqual(
        backup('b1', T0 + 1, { paths: ['world'], originHost: null, trigger: 'upload' }),
      );
      const replaced = await store.storedBackups.put(backup('b2', T0 + 2, { sha256: 'b'.repeat(64) }));
      expect(replaced.sha256).toBe('b'.repeat(64));
      expect(replaced.sizeBytes).toBe(5_000_000_000);
      expect(await store.storedBackups.delete('i-b', 'b2')).toBe(true);
      expect(await store.storedBackups.delete('i-b', 'b2')).toBe(false);
      expect(await store.storedBackups.get('i-b', 'b2')).toBeUndefined();
      expect((await store.storedBackups.listForInstance('i-c')).length).toBe(1);
    });
  });

  describe('backup policies', () => {
    it('setPolicy and markScheduled keep each other', async () => {
      const store = handle.store();
      expect(await store.backupPolicies.get('i-p')).toBeUndefined();
      await store.backupPolicies.markScheduled('i-p', T0, T0 + 1);
      expect(await store.backupPolicies.get('i-p')).toEqual({ instanceId: 'i-p', policy: null, lastScheduledAt: T0, updatedAt: T0 + 1 });
      await store.backupPolicies.setPolicy('i-p', { schedule: '0 4 * * *', retention: { last: 3 } }, T0 + 2);
      expect(await handle.second().backupPolicies.get('i-p')).toEqual({
        instanceId: 'i-p',
        policy: { schedule: '0 4 * * *', retention: { last: 3 } },
        lastScheduledAt: T0,
        updatedAt: T0 + 2,
      });
      await store.backupPolicies.markScheduled('i-p', T0 + 60_000, T0 + 3);
      await store.backupPolicies.setPolicy('i-q', null, T0);
      expect(await store.backupPolicies.list()).toEqual([
        { instanceId: 'i-p', policy: { schedule: '0 4 * * *', retention: { last: 3 } }, lastScheduledAt: T0 + 60_000, updatedAt: T0 + 3 },
        { instanceId: 'i-q', policy: null, lastScheduledAt: null, updatedAt: T0 },
      ]);
    });
  });
}
