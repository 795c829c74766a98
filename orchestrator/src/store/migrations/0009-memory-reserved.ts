// Whether an instance's memory is counted in its host's reservation: an
// archived world (no container) released it when it was archived, and so does
// a create that failed before its container existed; every other existing
// instance holds it.

import { sql, type Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema
    .alterTable('instances')
    .addColumn('memory_reserved', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await sql`update instances set memory_reserved = 0 where state = 'archived'`.execute(db);
}
