// Preset-admin panel sessions remember which ENDERCLOUD_ADMIN_TOKEN signed
// them in (issue 26): an HMAC of the preset keyed by the session id, so a
// restart with a rotated preset ends them. Null for token sessions, and for
// preset sessions made before this column existed (those are refused).

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema.alterTable('web_sessions').addColumn('preset_seal', 'text').execute();
}
