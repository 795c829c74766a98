// SQLite adapter: one better-sqlite3 connection in WAL mode. Transactions
// begin IMMEDIATE so a writer takes the lock up front (no deadlocked upgrade
// from a read lock when a second process, e.g. a backup, holds the file).

import Database from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect, SqliteDriver, type DatabaseConnection } from 'kysely';
import { KyselyStore } from './kysely-store.js';
import type { Database as Schema } from './schema.js';

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly database: Database.Database) {
    super({ database });
  }

  override createDriver(): SqliteDriver {
    return new ImmediateSqliteDriver({ database: this.database });
  }
}

export interface SqliteStoreOptions {
  /** How long a statement waits for another process's lock before failing. */
  busyTimeoutMs?: number;
}

/** Opens (creating if needed) the SQLite file; `:memory:` works for throwaway stores. */
export function openSqliteStore(file: string, options: SqliteStoreOptions = {}): KyselyStore {
  const database = new Database(file, { timeout: options.busyTimeoutMs ?? 5000 });
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma(`busy_timeout = ${Math.floor(options.busyTimeoutMs ?? 5000)}`);
  const db = new Kysely<Schema>({ dialect: new ImmediateSqliteDialect(database) });
  return new KyselyStore(db, 'sqlite');
}
