// SQLite adapter: one better-sqlite3 connection in WAL mode. Transactions
// begin IMMEDIATE so a writer takes the lock up front (no deadlocked upgrade
// from a read lock when a second process, e.g. a backup, holds the file).

import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect, SqliteDriver, type DatabaseConnection, type SqliteDatabase } from 'kysely';
import { KyselyStore } from './kysely-store.js';
import type { Database as Schema } from './schema.js';

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/** Prepared statements kept per SQL text (least recently used out first): Kysely prepares every query anew otherwise. */
const STATEMENT_CACHE_SIZE = 512;

/**
 * better-sqlite3 with a statement cache: the same SQL text reuses its
 * prepared statement (preparing cost about as much as running the small
 * statements of the hot paths). A statement that is still being iterated is
 * busy and cannot be re-entered: then a fresh one is prepared.
 */
export function cachingDatabase(database: Database.Database, size = STATEMENT_CACHE_SIZE): SqliteDatabase {
  const cache = new Map<string, Database.Statement>();
  return {
    close: () => database.close(),
    prepare(sql: string) {
      const hit = cache.get(sql);
      if (hit && !hit.busy) {
        cache.delete(sql);
        cache.set(sql, hit);
        return hit;
      }
      const stmt = database.prepare(sql);
      if (!hit) {
        cache.set(sql, stmt);
        if (cache.size > size) cache.delete(cache.keys().next().value!);
      }
      return stmt;
    },
  };
}

class ImmediateSqliteDialect extends SqliteDialect {
  private readonly database: SqliteDatabase;

  constructor(database: Database.Database) {
    const cached = cachingDatabase(database);
    super({ database: cached });
    this.database = cached;
  }

  override createDriver(): SqliteDriver {
    return new ImmediateSqliteDriver({ database: this.database });
  }
}

export interface SqliteStoreOptions {
  /** How long a statement waits for another process's lock before failing. */
  busyTimeoutMs?: number;
}

/**
 * The database holds token digests, secret settings and the audit log: it is created -rw------- (0600), and an
 * existing file is narrowed to that. SQLite gives its -wal and -shm files the database file's mode. `:memory:` and
 * other special names are left alone.
 */
function restrictFile(file: string): void {
  if (file === '' || file.startsWith(':') || file.startsWith('file:')) return;
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
  for (const side of ['-wal', '-shm']) if (existsSync(file + side)) chmodSync(file + side, 0o600);
}

/** Opens (creating if needed) the SQLite file; `:memory:` works for throwaway stores. */
export function openSqliteStore(file: string, options: SqliteStoreOptions = {}): KyselyStore {
  restrictFile(file);
  const database = new Database(file, { timeout: options.busyTimeoutMs ?? 5000 });
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma(`busy_timeout = ${Math.floor(options.busyTimeoutMs ?? 5000)}`);
  const db = new Kysely<Schema>({ dialect: new ImmediateSqliteDialect(database) });
  return new KyselyStore(db, 'sqlite');
}
