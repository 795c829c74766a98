// Instance schedules (issue 24, Pelican's model): a cron expression and an
// ordered list of tasks (console command, power action, backup), run by the
// leader's schedule runner. `running_since` is the run claim: a schedule runs
// at most once at a time, across replicas and restarts (a stale claim expires).

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema
    .createTable('schedules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('instance_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('cron', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('only_when_online', 'integer', (c) => c.notNull())
    /** JSON ScheduleTask[] (1..10, in order). */
    .addColumn('tasks', 'text', (c) => c.notNull())
    .addColumn('next_run_at', 'bigint')
    .addColumn('last_run_at', 'bigint')
    .addColumn('last_result', 'text')
    .addColumn('last_error', 'text')
    .addColumn('running_since', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('schedules_instance_idx').on('schedules').column('instance_id').execute();
  await db.schema.createIndex('schedules_due_idx').on('schedules').columns(['enabled', 'next_run_at']).execute();
}
