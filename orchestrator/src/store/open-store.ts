// Chooses the store from ENDERCLOUD_DATABASE_URL's value: unset → SQLite file
// in the data dir, postgres:// or postgresql:// → PostgreSQL, sqlite:PATH → that file.

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { AppError } from '../shared/errors.js';
import { openPostgresStore, type PostgresStoreOptions } from './postgres-store.js';
import { openSqliteStore } from './sqlite-store.js';
import type { Store } from './store.js';

export const SQLITE_FILE_NAME = 'endercloud.db';

/** Opens the store and applies pending migrations; `postgres` bounds the pool (connect and statement timeouts). */
export async function openStore(databaseUrl: string | undefined, dataDir: string, postgres: PostgresStoreOptions = {}): Promise<Store> {
  const store = createStore(databaseUrl, dataDir, postgres);
  try {
    await store.migrate();
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return store;
}

function createStore(databaseUrl: string | undefined, dataDir: string, postgres: PostgresStoreOptions): Store {
  const url = databaseUrl?.trim();
  if (!url) {
    mkdirSync(dataDir, { recursive: true });
    return openSqliteStore(path.join(dataDir, SQLITE_FILE_NAME));
  }
  if (/^postgres(ql)?:\/\//i.test(url)) return openPostgresStore(url, postgres);
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length).replace(/^\/\//, '');
    if (!file) throw new AppError('VALIDATION_FAILED', 'database URL sqlite: needs a file path, e.g. sqlite:/var/lib/endercloud/endercloud.db');
    mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    return openSqliteStore(file);
  }
  throw new AppError('VALIDATION_FAILED', `database URL must start with postgres://, postgresql:// or sqlite: (got ${url.split(':')[0]}:…)`);
}
