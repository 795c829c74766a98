// Off-host backups: the orchestrator's backup store records every archive it
// holds (instance, backup id, sha256, size, times, origin host, stored path),
// per instance an optional backup policy plus the scheduler's last run, and a
// group's `backup:` policy column.
// No foreign keys: a stored backup outlives its host and may outlive its instance.

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema
    .createTable('stored_backups')
    .addColumn('instance_id', 'text', (c) => c.notNull())
    .addColumn('backup_id', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('stored_at', 'bigint', (c) => c.notNull())
    .addColumn('origin_host', 'text')
    .addColumn('stored_path', 'text', (c) => c.notNull())
    /** JSON array of the archived relative paths; null = the whole instance directory. */
    .addColumn('paths', 'text')
    /** Who asked: `manual`, `schedule`, `stop`, `archive`, `update`, `upload`, … */
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('stored_backups_pk', ['instance_id', 'backup_id'])
    .execute();
  await db.schema
    .createTable('backup_policies')
    .addColumn('instance_id', 'text', (c) => c.primaryKey())
    /** JSON BackupPolicy set on the instance; null = the group's. */
    .addColumn('policy', 'text')
    .addColumn('last_scheduled_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('groups').addColumn('backup', 'text').execute();
}
