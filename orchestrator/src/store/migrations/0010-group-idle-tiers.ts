// A group's idle tiers (issue 20: sleep is a group's setting, with or without a
// scaling policy): JSON IdleTier[] or null (= the system's default).

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema.alterTable('groups').addColumn('idle_tiers', 'text').execute();
}
