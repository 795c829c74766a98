// Contract tests: system-wide settings (the global maintenance switch, #4).

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { T0 } from './fixtures.js';

export function systemContract(handle: StoreHandle): void {
  describe('system settings', () => {
    it('store one JSON value per key: missing is undefined, put replaces, delete removes (idempotent)', async () => {
      const store = handle.store();
      expect(await store.system.get('maintenance')).toBeUndefined();
      await store.system.put('maintenance', { enabled: true, message: 'upgrading', since: T0 }, T0);
      await store.system.put('other', [1, 'two', null], T0);
      expect(await store.system.get('maintenance')).toEqual({ enabled: true, message: 'upgrading', since: T0 });
      await store.system.put('maintenance', { enabled: false, message: '', since: T0 + 1 }, T0 + 1);
      expect(await handle.second().system.get('maintenance')).toEqual({ enabled: false, message: '', since: T0 + 1 });
      expect(await store.system.get('other')).toEqual([1, 'two', null]);
      await store.system.delete('maintenance');
      await store.system.delete('maintenance');
      expect(await store.system.get('maintenance')).toBeUndefined();
    });

    it('roll back with the transaction they were written in', async () => {
      const store = handle.store();
      await expect(
        store.transaction(async (tx) => {
          await tx.system.put('k', 'v', T0);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await store.system.get('k')).toBeUndefined();
    });
  });
}
