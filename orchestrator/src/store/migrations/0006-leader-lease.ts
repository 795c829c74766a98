// Leader lease (HA): one row per lease name — who holds it, its fencing epoch
// (raised on every new holder) and when it expires on the database's clock.
// Also hosts.inventory_digest: the last heartbeat's digest of the agent's
// inventory, so the supervisor reads a full inventory only when it changed.

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema
    .createTable('leases')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('epoch', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('hosts').addColumn('inventory_digest', 'text').execute();
}
