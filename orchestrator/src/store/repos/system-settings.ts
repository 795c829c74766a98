// System-wide settings: one JSON value per key (global maintenance mode, …).

import type { JsonValue } from '../../domain/index.js';
import type { StoreContext } from '../context.js';
import type { SystemSettingsRepository } from '../store.js';

export class KyselySystemSettingsRepository implements SystemSettingsRepository {
  constructor(private readonly ctx: StoreContext) {}

  async get(key: string): Promise<JsonValue | undefined> {
    const row = await this.ctx.db.selectFrom('system_settings').select('value').where('key', '=', key).executeTakeFirst();
    return row ? (JSON.parse(row.value) as JsonValue) : undefined;
  }

  async put(key: string, value: JsonValue, now: number): Promise<void> {
    const text = JSON.stringify(value);
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
