// The ordered list of migrations, given to Kysely's Migrator by a static
// provider (no filesystem globbing: works the same from tsx, bundles and tests).

import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { AppError } from '../../shared/errors.js';
import * as initial from './0001-initial.js';
import * as systemSettings from './0002-system-settings.js';
import * as unclaimedContainers from './0003-unclaimed-containers.js';
import * as installationRequests from './0004-installation-requests.js';
import * as instanceFleet from './0005-instance-fleet.js';
import * as leaderLease from './0006-leader-lease.js';
import * as backups from './0007-backups.js';
import * as webSessions from './0008-web-sessions.js';
import * as memoryReserved from './0009-memory-reserved.js';
import * as groupIdleTiers from './0010-group-idle-tiers.js';
import * as schedules from './0011-schedules.js';
import * as hostCredentials from './0012-host-credentials.js';
import * as webSessionPresetSeal from './0013-web-session-preset-seal.js';

export type StoreDialect = 'sqlite' | 'postgres';

type DialectMigration = (db: Kysely<unknown>, dialect: StoreDialect) => Promise<void>;

/** Append only: never rename, reorder or edit a released migration. */
const MIGRATIONS: ReadonlyArray<[name: string, up: DialectMigration]> = [
  ['0001_initial', initial.up],
  ['0002_system_settings', systemSettings.up],
  ['0003_unclaimed_containers', unclaimedContainers.up],
  ['0004_installation_requests', installationRequests.up],
  ['0005_instance_fleet', instanceFleet.up],
  ['0006_leader_lease', leaderLease.up],
  ['0007_backups', backups.up],
  ['0008_web_sessions', webSessions.up],
  ['0009_memory_reserved', memoryReserved.up],
  ['0010_group_idle_tiers', groupIdleTiers.up],
  ['0011_schedules', schedules.up],
  ['0012_host_credentials', hostCredentials.up],
  ['0013_web_session_preset_seal', webSessionPresetSeal.up],
];

class StaticMigrationProvider implements MigrationProvider {
  constructor(private readonly dialect: StoreDialect) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const out: Record<string, Migration> = {};
    for (const [name, up] of MIGRATIONS) out[name] = { up: (db) => up(db, this.dialect) };
    return out;
  }
}

/** Brings the schema to the latest migration; a no-op when already there. */
export async function migrateToLatest(db: Kysely<unknown>, dialect: StoreDialect): Promise<string[]> {
  // Kysely looks for its bookkeeping tables in every schema unless told one;
  // pin it to the connection's current schema so two deployments sharing a
  // database in different schemas (search_path) never see each other's.
  const schema = dialect === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]?.s : undefined;
  const migrator = new Migrator({
    db,
    provider: new StaticMigrationProvider(dialect),
    migrationTableName: 'endercloud_migrations',
    migrationLockTableName: 'endercloud_migrations_lock',
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new AppError('INTERNAL', `database migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
