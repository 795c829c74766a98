// System-wide settings: one JSON value per key (global maintenance mode, …).
// A secret setting (the network's forwarding secret) is sealed at rest with the
// installed secret codec, as instances' secret settings are (store/secret-codec.ts);
// a plaintext value from an older database is read as it is and sealed at the
// next start (repos/secrets.ts).

import type { JsonValue } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import type { StoreContext } from '../context.js';
import { secretContext, type SecretSlot } from '../secret-codec.js';
import type { SystemSettingsRepository } from '../store.js';

/** The system settings whose values are secrets: sealed on write, opened on read. */
export const SECRET_SYSTEM_SETTINGS: ReadonlySet<string> = new Set(['network-secret']);

/** A sealed value is stored as a JSON string holding the envelope (`ec1:…`); anything else is plaintext. */
export function isSealedSetting(text: string): boolean {
  return text.startsWith('"ec1:');
}

export function sealSetting(key: string, value: JsonValue, secrets: SecretSlot): string {
  if (!secrets.codec)
    throw new AppError('INTERNAL', `system setting ${key} cannot be sealed: this store has no secret key installed (useSecretCodec)`);
  return JSON.stringify(secrets.codec.seal(JSON.stringify(value), secretContext('system_settings', key, 'value')));
}

export function openSetting(key: string, text: string, secrets: SecretSlot): JsonValue {
  if (!isSealedSetting(text)) return JSON.parse(text) as JsonValue;
  if (!secrets.codec)
    throw new AppError('INTERNAL', `system setting ${key} cannot be opened: this store has no secret key installed (useSecretCodec)`);
  return JSON.parse(secrets.codec.open(JSON.parse(text) as string, secretContext('system_settings', key, 'value'))) as JsonValue;
}

export class KyselySystemSettingsRepository implements SystemSettingsRepository {
  constructor(private readonly ctx: StoreContext) {}

  async get(key: string): Promise<JsonValue | undefined> {
    const row = await this.ctx.db.selectFrom('system_settings').select('value').where('key', '=', key).executeTakeFirst();
    if (!row) return undefined;
    return SECRET_SYSTEM_SETTINGS.has(key) ? openSetting(key, row.value, this.ctx.secrets) : (JSON.parse(row.value) as JsonValue);
  }

  async put(key: string, value: JsonValue, now: number): Promise<void> {
    const text = SECRET_SYSTEM_SETTINGS.has(key) ? sealSetting(key, value, this.ctx.secrets) : JSON.stringify(value);
    await this.ctx.db
      .insertInto('system_settings')
      .values({ key, value: text, updated_at: now })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value: text, updated_at: now }))
      .execute();
  }

  async delete(key: string): Promise<void> {
    await this.ctx.db.deleteFrom('system_settings').where('key', '=', key).execute();
  }
}
