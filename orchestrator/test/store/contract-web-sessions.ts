// Contract tests: the web panel's sessions (server/web/web-sessions.ts).

import { describe, expect, it } from 'vitest';
import type { WebSessionRecord } from '../../src/store/store.js';
import type { StoreHandle } from './store-contract.js';
import { T0 } from './fixtures.js';

const session = (idHash: string, o: Partial<WebSessionRecord> = {}): WebSessionRecord => ({
  idHash,
  tokenId: 'tok_1',
  principalKind: 'token',
  name: 'alice',
  scopes: ['read', 'instances:write'],
  createdAt: T0,
  expiresAt: T0 + 1000,
  presetSeal: null,
  ...o,
});

export function webSessionContract(handle: StoreHandle): void {
  describe('web sessions', () => {
    it('stores a session by its id hash and reads it back; a duplicate is a CONFLICT', async () => {
      const store = handle.store();
      expect(await store.webSessions.create(session('h1'))).toEqual(session('h1'));
      await store.webSessions.create(
        session('h2', {
          tokenId: null,
          principalKind: 'preset-admin',
          name: 'admin (preset)',
          scopes: ['admin'],
          presetSeal: 'ab'.repeat(32),
        }),
      );
      expect(await handle.second().webSessions.get('h1')).toEqual(session('h1'));
      expect((await store.webSessions.get('h2'))?.tokenId).toBeNull();
      expect((await handle.second().webSessions.get('h2'))?.presetSeal).toBe('ab'.repeat(32));
      expect(await store.webSessions.get('nope')).toBeUndefined();
      await expect(store.webSessions.create(session('h1'))).rejects.toMatchObject({ code: 'CONFLICT' });
    });

    it('deletes one session, and every expired one', async () => {
      const store = handle.store();
      await store.webSessions.create(session('a', { expiresAt: T0 + 10 }));
      await store.webSessions.create(session('b', { expiresAt: T0 + 20 }));
      await store.webSessions.create(session('c', { expiresAt: T0 + 30 }));
      expect(await store.webSessions.delete('c')).toBe(true);
      expect(await store.webSessions.delete('c')).toBe(false);
      expect(await store.webSessions.deleteExpired(T0 + 10)).toBe(1);
      expect(await store.webSessions.get('a')).toBeUndefined();
      expect((await store.webSessions.get('b'))?.expiresAt).toBe(T0 + 20);
    });
  });
}
