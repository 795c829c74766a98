// Chooses the store from ENDERCLOUD_DATABASE_URL's value: unset → SQLite file
// in the data dir, postgres:// or postgresql:// → PostgreSQL, sqlite:PATH → that file.
// The same reading names the database for what must not be shared between
// deployments (the Redis change channel): databaseIdentity().

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { AppError } from '../shared/errors.js';
import { openPostgresStore, type PostgresStoreOptions } from './postgres-store.js';
import { openSqliteStore } from './sqlite-store.js';
import type { Store } from './store.js';

export const SQLITE_FILE_NAME = 'endercloud.db';

type DatabaseTarget = { kind: 'sqlite'; file: string; implicit: boolean } | { kind: 'postgres'; url: string };

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

function target(databaseUrl: string | undefined, dataDir: string): DatabaseTarget {
  const url = databaseUrl?.trim();
  if (!url) return { kind: 'sqlite', file: path.join(dataDir, SQLITE_FILE_NAME), implicit: true };
  if (/^postgres(ql)?:\/\//i.test(url)) return { kind: 'postgres', url };
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length).replace(/^\/\//, '');
    if (!file)
      throw new AppError('VALIDATION_FAILED', 'database URL sqlite: needs a file path, e.g. sqlite:/var/lib/endercloud/endercloud.db');
    return { kind: 'sqlite', file, implicit: false };
  }
  throw new AppError(
    'VALIDATION_FAILED',
    `database URL must start with postgres://, postgresql:// or sqlite: (got ${url.split(':')[0]}:…)`,
  );
}

function createStore(databaseUrl: string | undefined, dataDir: string, postgres: PostgresStoreOptions): Store {
  const t = target(databaseUrl, dataDir);
  if (t.kind === 'postgres') return openPostgresStore(t.url, postgres);
  // A directory made here is owner-only; the data dir itself is narrowed by its owner, buildOrchestrator.
  mkdirSync(t.implicit ? dataDir : path.dirname(path.resolve(t.file)), { recursive: true, mode: 0o700 });
  return openSqliteStore(t.file);
}

/**
 * Which database this is, without credentials: `postgres://host:port/dbname`
 * (plus the `options` parameter, which can pick a schema) or `sqlite:<absolute
 * path>`. Replicas of one deployment agree on it however their URLs spell the
 * user or password; two deployments on different databases never do.
 */
export function databaseIdentity(databaseUrl: string | undefined, dataDir: string): string {
  const t = target(databaseUrl, dataDir);
  if (t.kind === 'sqlite') return `sqlite:${path.resolve(t.file)}`;
  const u = new URL(t.url);
  const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || decodeURIComponent(u.username) || 'postgres';
  const options = u.searchParams.get('options');
  return `postgres://${u.hostname.toLowerCase()}:${u.port || '5432'}/${database}${options ? `?options=${options}` : ''}`;
}
