// Secret values at rest: which key they are sealed under (its fingerprint in
// system settings), the start-up pass that seals what an older database kept
// in plaintext, and the re-seal of a key rotation. Each pass is one
// transaction over every row; a row is never left half re-sealed.

import { sql, type Kysely } from 'kysely';
import { AppError } from '../../shared/errors.js';
import type { StoreContext } from '../context.js';
import type { Database } from '../schema.js';
import type { SecretCodec, SecretSlot } from '../secret-codec.js';
import type { SecretRepository } from '../store.js';
import { openSecretJson, sealSecretJson } from './instance-rows.js';
import { isSealedSetting, openSetting, SECRET_SYSTEM_SETTINGS, sealSetting } from './system-settings.js';

/** The system setting holding the fingerprint of the key secrets are sealed under. */
export const KEY_FINGERPRINT_SETTING = 'secret-key-fingerprint';

export class KyselySecretRepository implements SecretRepository {
  constructor(private readonly ctx: StoreContext) {}

  async recordedFingerprint(): Promise<string | undefined> {
    return readFingerprint(this.ctx.db);
  }

  async claimKeyFingerprint(fingerprint: string, now: number): Promise<string> {
    await this.ctx.db
      .insertInto('system_settings')
      .values({ key: KEY_FINGERPRINT_SETTING, value: JSON.stringify(fingerprint), updated_at: now })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    const recorded = await readFingerprint(this.ctx.db);
    if (recorded === undefined)
      throw new AppError('INTERNAL', `system setting ${KEY_FINGERPRINT_SETTING} vanished right after it was recorded`);
    return recorded;
  }

  async sealPlaintext(): Promise<number> {
    const codec = this.ctx.secrets.codec;
    if (!codec) throw new AppError('INTERNAL', 'cannot seal secret settings: this store has no secret key installed (useSecretCodec)');
    const { instances: sealed, settings } = await this.ctx.atomic((db) => reseal(db, this.ctx, { codec }, { codec }, true));
    // SQLite keeps the overwritten plaintext in free pages and the WAL until both are rewritten.
    if (sealed + settings > 0 && this.ctx.dialect === 'sqlite' && !this.ctx.inTransaction) {
      await sql`vacuum`.execute(this.ctx.db);
      await sql`pragma wal_checkpoint(truncate)`.execute(this.ctx.db);
    }
    return sealed;
  }

  async rekey(from: SecretCodec, to: SecretCodec, now: number): Promise<number> {
    const count = await this.ctx.atomic(async (db) => {
      const recorded = await readFingerprint(db, this.ctx.dialect === 'postgres');
      if (recorded !== undefined && recorded !== from.fingerprint)
        throw new AppError(
          'CONFLICT',
          `this database's secrets are sealed under key ${recorded}, not under the current key ${from.fingerprint}: give the key the orchestrator runs with as the current one`,
        );
      const { instances: n } = await reseal(db, this.ctx, { codec: from }, { codec: to }, false);
      await db
        .insertInto('system_settings')
        .values({ key: KEY_FINGERPRINT_SETTING, value: JSON.stringify(to.fingerprint), updated_at: now })
        .onConflict((oc) => oc.column('key').doUpdateSet({ value: JSON.stringify(to.fingerprint), updated_at: now }))
        .execute();
      return n;
    });
    this.ctx.secrets.codec = to;
    return count;
  }
}

async function readFingerprint(db: Kysely<Database>, lock = false): Promise<string | undefined> {
  const row = await db
    .selectFrom('system_settings')
    .select('value')
    .where('key', '=', KEY_FINGERPRINT_SETTING)
    .$if(lock, (q) => q.forUpdate())
    .executeTakeFirst();
  if (!row) return undefined;
  const value = JSON.parse(row.value) as unknown;
  if (typeof value !== 'string') throw new AppError('INTERNAL', `system setting ${KEY_FINGERPRINT_SETTING} is not a string`);
  return value;
}

/**
 * Rewrites the secret settings of every instance (only those still in plaintext with `onlyPlaintext`), read
 * under `from` and sealed under `to`. The rows are locked (PostgreSQL; SQLite's transaction holds the write
 * lock), so a replica starting beside this one waits and then finds them sealed. The logical value is
 * unchanged: no version bump, no change event.
 */
async function reseal(
  db: Kysely<Database>,
  ctx: StoreContext,
  from: SecretSlot,
  to: SecretSlot,
  onlyPlaintext: boolean,
): Promise<{ instances: number; settings: number }> {
  const rows = await db
    .selectFrom('instances')
    .select(['id', 'secret_settings'])
    .$if(onlyPlaintext, (q) => q.where('secret_settings', 'like', '{%'))
    .$if(ctx.dialect === 'postgres', (q) => q.forUpdate())
    .orderBy('id')
    .execute();
  for (const row of rows) {
    const value = openSecretJson(row.secret_settings, row.id, from);
    await db
      .updateTable('instances')
      .set({ secret_settings: sealSecretJson(value, row.id, to) })
      .where('id', '=', row.id)
      .execute();
  }
  // The secret system settings (the network's forwarding secret) go the same way; not counted as instances.
  const settings = await db
    .selectFrom('system_settings')
    .select(['key', 'value'])
    .where('key', 'in', [...SECRET_SYSTEM_SETTINGS])
    .$if(ctx.dialect === 'postgres', (q) => q.forUpdate())
    .execute();
  let resealed = 0;
  for (const row of settings) {
    if (onlyPlaintext && isSealedSetting(row.value)) continue;
    resealed++;
    const value = openSetting(row.key, row.value, from);
    await db
      .updateTable('system_settings')
      .set({ value: sealSetting(row.key, value, to) })
      .where('key', '=', row.key)
      .execute();
  }
  return { instances: rows.length, settings: resealed };
}
