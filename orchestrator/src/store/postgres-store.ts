// PostgreSQL adapter: a pg Pool under Kysely. int8 (bigint timestamps, counts,
// serial ids) is parsed to a JS number on this pool only; every value we store
// stays below 2^53.

import { createHash } from 'node:crypto';
import pg from 'pg';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import { PREPARED } from './context.js';
import { KyselyStore } from './kysely-store.js';
import type { Database } from './schema.js';

const INT8_OID = 20;

/** The pool, with PREPARED statements sent by name (one name per distinct text). */
function preparingPool(pool: pg.Pool): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string => {
    let name = names.get(text);
    if (!name) {
      name = `ec_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
    }
    return name;
  };
  const wrap = (client: pg.PoolClient): PostgresPoolClient => ({
    query: ((text: unknown, values?: readonly unknown[]) =>
      typeof text === 'string' && text.startsWith(PREPARED)
        ? client.query({ name: nameOf(text), text, values: values as unknown[] })
        : client.query(text as string, values as unknown[])) as unknown as PostgresPoolClient['query'],
    release: (destroy?: boolean) => client.release(destroy),
  });
  return {
    connect: async () => wrap(await pool.connect()),
    end: () => pool.end(),
  };
}

/** How long opening a connection, or waiting for a pooled one, may take before the query fails. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
/** The server ends any one statement running longer (PostgreSQL's statement_timeout); 0 = no bound. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

export interface PostgresStoreOptions {
  maxConnections?: number;
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
}

export function openPostgresStore(connectionString: string, options: PostgresStoreOptions = {}): KyselyStore {
  const pool = new pg.Pool({
    connectionString,
    max: options.maxConnections ?? 10,
    // A database that does not answer fails queries within these bounds instead of holding them
    // (and the heartbeats behind them) until the network gives up (docs/production.md).
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    ...((options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS) > 0
      ? { statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS }
      : {}),
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID
          ? (value: string) => Number(value)
          : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client whose server went away (a PostgreSQL restart or failover) is dropped by the
  // pool, which then emits 'error': without a listener that kills the process. The next query
  // opens a fresh connection; queries during the outage fail and their callers retry.
  pool.on('error', () => undefined);
  // The same for a client that is checked out but between statements (a transaction awaiting
  // JS): the server's "terminating connection" arrives with no query to fail, and the client
  // emits 'error' with no listener (the pool's idle listener is off while it is checked out).
  // Its next statement fails instead, and the pool drops the client on release.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
  return new KyselyStore(db, 'postgres');
}
