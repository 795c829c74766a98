// Contract tests: secret settings at rest (store/secret-codec.ts). Every write
// seals them with the installed codec and every read opens them; a store
// without one reads only what is still plaintext and never writes them; the
// key fingerprint is recorded once; a rekey moves every value to a new key.

import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/server/secrets/secret-box.js';
import { T0, instance } from './fixtures.js';
import type { StoreHandle } from './store-contract.js';

/** The codec the contract installs: a fixed key, as a test orchestrator's. */
export const TEST_BOX = new SecretBox(Buffer.alloc(32, 0x11), '1111111111111111');
const OTHER_BOX = new SecretBox(Buffer.alloc(32, 0x22), '2222222222222222');

export function secretsContract(handle: StoreHandle): void {
  describe('secret settings at rest', () => {
    it('are sealed on every write and opened on every read (create, update, transition, list)', async () => {
      const store = handle.store();
      await store.instances.create(instance('i-sec', { secretSettings: { RCON_PASSWORD: 'hunter2' } }));
      expect((await store.instances.get('i-sec'))?.secretSettings).toEqual({ RCON_PASSWORD: 'hunter2' });
      await store.instances.update('i-sec', { secretSettings: { RCON_PASSWORD: 'hunter3', 'pending:X': 'y' } }, { now: T0 + 1 });
      const moved = await store.instances.transition('i-sec', 'stopped', {
        now: T0 + 2,
        reason: 't',
        patch: { secretSettings: { RCON_PASSWORD: 'hunter4' } },
      });
      expect(moved?.secretSettings).toEqual({ RCON_PASSWORD: 'hunter4' });
      expect((await handle.second().instances.list()).map((i) => i.secretSettings)).toEqual([{ RCON_PASSWORD: 'hunter4' }]);
      expect((await store.transaction((tx) => tx.instances.get('i-sec')))?.secretSettings).toEqual({ RCON_PASSWORD: 'hunter4' });
    });

    it('a store without the key cannot read or write them, and names the instance; other columns still work', async () => {
      const store = handle.store();
      await store.instances.create(instance('i-nokey'));
      const bare = handle.bare();
      await expect(bare.instances.get('i-nokey')).rejects.toThrow(/instance i-nokey .*no secret key installed/);
      await expect(bare.instances.create(instance('i-nokey2'))).rejects.toThrow(/instance i-nokey2 .*no secret key installed/);
      // Refused before anything is written: the answer (the whole row) could not be opened.
      await expect(bare.instances.update('i-nokey', { name: 'renamed' }, { now: T0 + 1 })).rejects.toThrow(/no secret key installed/);
      await expect(bare.instances.transition('i-nokey', 'stopped', { now: T0 + 1, reason: 't' })).rejects.toThrow(
        /no secret key installed/,
      );
      expect(await bare.instances.countByState()).toEqual({ draft: 1 });
      expect((await store.instances.get('i-nokey'))?.name).toBe('name-i-nokey');
    });

    it('sealed under another key, they are refused with both fingerprints named', async () => {
      await handle.store().instances.create(instance('i-other'));
      const other = handle.bare();
      other.useSecretCodec(OTHER_BOX);
      await expect(other.instances.get('i-other')).rejects.toThrow(
        /instances\/i-other\/secretSettings is sealed under secret key 1111111111111111, but this orchestrator's key is 2222222222222222/,
      );
    });

    it('record the first key fingerprint only: of two claims the first wins', async () => {
      const store = handle.store();
      expect(await store.secrets.recordedFingerprint()).toBeUndefined();
      expect(await store.secrets.claimKeyFingerprint('1111111111111111', T0)).toBe('1111111111111111');
      expect(await handle.second().secrets.claimKeyFingerprint('2222222222222222', T0)).toBe('1111111111111111');
      expect(await store.secrets.recordedFingerprint()).toBe('1111111111111111');
    });

    it('rekey re-seals every value under the new key and records it, in one transaction; a wrong current key is refused', async () => {
      const store = handle.store();
      await store.secrets.claimKeyFingerprint(TEST_BOX.fingerprint, T0);
      await store.instances.create(instance('i-rk1', { secretSettings: { A: '1' } }));
      await store.instances.create(instance('i-rk2', { secretSettings: { B: '2' } }));
      await expect(store.secrets.rekey(OTHER_BOX, TEST_BOX, T0)).rejects.toThrow(
        /sealed under key 1111111111111111, not under the current key 2222222222222222/,
      );
      expect(await store.secrets.sealPlaintext()).toBe(0);
      const second = handle.second();
      expect(await second.secrets.rekey(TEST_BOX, OTHER_BOX, T0 + 1)).toBe(2);
      expect(await store.secrets.recordedFingerprint()).toBe(OTHER_BOX.fingerprint);
      expect((await second.instances.list()).map((i) => i.secretSettings)).toEqual([{ A: '1' }, { B: '2' }]);
      // The first store still holds the old key: it can no longer open them.
      await expect(store.instances.get('i-rk1')).rejects.toThrow(/sealed under secret key 2222222222222222/);
    });
  });
}
