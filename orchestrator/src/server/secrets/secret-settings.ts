// Secret settings at rest, as the composition root and the rotation command
// use them: check that the key matches the one the database's secrets are
// sealed under (its fingerprint is recorded at the first start), install the
// codec in the store, seal what an older version left in plaintext, and
// rotate to a new key.

import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { MasterKey } from './master-key.js';
import { SecretBox } from './secret-box.js';

/** The refusal of a start with another key than the database's; names both fingerprints, never a key. */
export function keyMismatch(key: MasterKey, recorded: string): AppError {
  return new AppError(
    'VALIDATION_FAILED',
    `the secret key (from ${key.source}) has fingerprint ${key.fingerprint()}, but this database's secret settings are sealed under the key with fingerprint ${recorded}. ` +
      'Start with that key (ENDERCLOUD_SECRET_KEY or ENDERCLOUD_SECRET_KEY_FILE; every replica needs the same one), ' +
      'or move the database to a new key with npm run secret-key:rotate (docs/production.md "Secret key")',
  );
}

/**
 * Makes `store` seal and open secret settings with `key`: records the key's fingerprint at the first start and
 * refuses a different key later (before anything is sealed or opened), then seals the plaintext secret settings
 * of a database written by an older version. Idempotent; safe on every replica's start.
 */
export async function installSecretKey(store: Store, key: MasterKey, opts: { now: number; logger: Logger }): Promise<void> {
  const recorded = await store.secrets.claimKeyFingerprint(key.fingerprint(), opts.now);
  if (recorded !== key.fingerprint()) throw keyMismatch(key, recorded);
  store.useSecretCodec(SecretBox.fromMasterKey(key));
  const sealed = await store.secrets.sealPlaintext();
  if (sealed > 0)
    opts.logger.info(
      { instances: sealed, fingerprint: recorded },
      `sealed the plaintext secret settings of ${sealed} instance(s) written by an older version`,
    );
}

/**
 * Key rotation: every secret value re-sealed from `current` to `next` and `next`'s fingerprint recorded, in one
 * transaction. Refuses while an orchestrator holds the reconciler lease (it would keep sealing under the old
 * key), when `current` is not the database's key, and when both keys are the same.
 */
export async function rotateSecretKey(
  store: Store,
  current: MasterKey,
  next: MasterKey,
  opts: { now: number; leaseName: string },
): Promise<{ instances: number; from: string; to: string }> {
  if (next.fingerprint() === current.fingerprint())
    throw new AppError('VALIDATION_FAILED', `the new key (${next.source}) is the current key (fingerprint ${current.fingerprint()})`);
  const recorded = await store.secrets.recordedFingerprint();
  if (recorded !== undefined && recorded !== current.fingerprint()) throw keyMismatch(current, recorded);
  const lease = await store.leases.get(opts.leaseName);
  if (lease && lease.expiresAt > (await store.leases.now()))
    throw new AppError(
      'CONFLICT',
      `orchestrator ${lease.holder} is running (it holds the ${opts.leaseName} lease until ${new Date(lease.expiresAt).toISOString()}): stop every replica before rotating the secret key`,
    );
  const instances = await store.secrets.rekey(SecretBox.fromMasterKey(current), SecretBox.fromMasterKey(next), opts.now);
  return { instances, from: current.fingerprint(), to: next.fingerprint() };
}
