// Unclaimed containers (docs/orchestrator.md "Unclaimed containers"): the managed containers a recovery run listed as
// unclaimed, per host, so that later recoveries never remove them on a guess.

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema
    .createTable('unclaimed_containers')
    // A host's row goes, its set goes with it.
    .addColumn('host_id', 'text', (c) => c.notNull().references('hosts.id').onDelete('cascade'))
    // Not a reference to instances: by definition no stored instance claims it here.
    .addColumn('instance_id', 'text', (c) => c.notNull())
    .addColumn('group_id', 'text')
    .addColumn('variant_id', 'text')
    .addColumn('first_seen_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('unclaimed_containers_pk', ['host_id', 'instance_id'])
    .execute();
}
