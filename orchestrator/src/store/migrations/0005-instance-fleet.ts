// Dynamic provisioning (docs/provisioning.md): each instance's fleet record — its idle
// clock, an idle-tier override, the last tier applied, drain and archive
// marks — as one JSON column (null for instances no policy has touched).

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema.alterTable('instances').addColumn('fleet', 'text').execute();
}
