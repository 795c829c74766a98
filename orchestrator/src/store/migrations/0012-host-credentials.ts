// One credential per host (issue 26): one-time join tokens an admin creates
// (sha256 only), and on each host the sha256 of its own credential with a
// generation that every (re-)enrolment bumps. The orchestrator's credential for
// calling an agent is derived from the master key and that generation, never
// stored. A host without a generation is a legacy one (the shared agent token).

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema
    .createTable('join_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('hashed_secret', 'text', (c) => c.notNull().unique())
    /** The only agent id this token may enrol; null: any. */
    .addColumn('agent_id', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('used_by', 'text')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.alterTable('hosts').addColumn('credential_hash', 'text').execute();
  await db.schema.alterTable('hosts').addColumn('credential_generation', 'integer').execute();
  await db.schema.alterTable('hosts').addColumn('enrolled_at', 'bigint').execute();
  await db.schema.alterTable('hosts').addColumn('credential_revoked_at', 'bigint').execute();
  await db.schema.createIndex('hosts_credential_hash_idx').on('hosts').column('credential_hash').unique().execute();
}
