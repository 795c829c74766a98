// Installation requests (docs/lifecycle.md "Installation requests"): pending user requests an
// administrator approves (creating the instance) or rejects.

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema
    .createTable('installation_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('requested_by', 'text', (c) => c.notNull())
    // No references: a request outlives its group or instance as a record of the decision.
    .addColumn('group_id', 'text', (c) => c.notNull())
    .addColumn('variant_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('suggested', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('decided_by', 'text')
    .addColumn('decision_note', 'text')
    .addColumn('instance_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('decided_at', 'bigint')
    .execute();
  await db.schema.createIndex('installation_requests_status_idx').on('installation_requests').columns(['status', 'created_at']).execute();
}
