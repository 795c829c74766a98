// Runs the store contract against PostgreSQL at 127.0.0.1:5432: one fresh
// database per test file (dropped in afterAll, also on failure), and one
// schema per test inside it so every test starts empty.

import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { heartbeat, instance, T0 } from './fixtures.js';
import { runStoreContract } from './store-contract.js';
import { TEST_BOX } from './contract-secrets.js';

const PG_HOST = process.env.PGHOST ?? '127.0.0.1';
const PG_PORT = Number(process.env.PGPORT ?? 5432);
const PG_USER = process.env.PGUSER ?? 'postgres';
const dbName = `ec_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
const baseUrl = `postgres://${PG_USER}@${PG_HOST}:${PG_PORT}`;
const dbUrl = `${baseUrl}/${dbName}`;

async function admin<T>(database: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: `${baseUrl}/${database}` });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await admin('postgres', (c) => c.query(`create database ${dbName}`));
});

afterAll(async () => {
  // WITH (FORCE) (PostgreSQL 13+) ends leftover connections of a failed test.
  await admin('postgres', (c) => c.query(`drop database if exists ${dbName} with (force)`));
});

let n = 0;
runStoreContract('postgres', async () => {
  n += 1;
  const schema = `t${n}`;
  await admin(dbName, (c) => c.query(`create schema ${schema}`));
  const url = `${dbUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const opened: Store[] = [];
  const open = (): Store => {
    const s = openPostgresStore(url);
    opened.push(s);
    return s;
  };
  return {
    store: open(),
    openSecond: open,
    dispose: async () => {
      await Promise.all(opened.map((s) => s.close()));
      await admin(dbName, (c) => c.query(`drop schema ${schema} cascade`));
    },
  };
});

describe('openStore (postgres)', () => {
  it('selects PostgreSQL for postgres:// and postgresql:// URLs and migrates', async () => {
    for (const scheme of ['postgres', 'postgresql']) {
      const schema = `open_${scheme}`;
      await admin(dbName, (c) => c.query(`create schema ${schema}`));
      const url = `${scheme}://${PG_USER}@${PG_HOST}:${PG_PORT}/${dbName}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
      const store = await openStore(url, '/nonexistent-data-dir');
      try {
        expect(store.dialect).toBe('postgres');
        const { host } = await store.hosts.upsertHeartbeat(heartbeat('h1'), T0);
        expect(host.lastHeartbeatAt).toBe(T0);
        expect(typeof host.lastHeartbeatAt).toBe('number');
      } finally {
        await store.close();
      }
    }
  });
});

/** A migrated store on one connection in a schema of its own (dropped afterwards), and its Kysely handle. */
async function onOneConnection(schema: string, fn: (store: Store, db: Kysely<unknown>) => Promise<void>): Promise<void> {
  await admin(dbName, (c) => c.query(`create schema ${schema}`));
  const store = openPostgresStore(`${dbUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`, { maxConnections: 1 });
  try {
    await store.migrate();
    store.useSecretCodec(TEST_BOX);
    await fn(store, (store as unknown as { db: Kysely<unknown> }).db);
  } finally {
    await store.close();
    await admin(dbName, (c) => c.query(`drop schema ${schema} cascade`));
  }
}

describe('prepared statements (postgres)', () => {
  it('the allocation statements run prepared, and stay valid when a later migration adds a column (a rolling upgrade)', async () => {
    const schema = 'prepared_upgrade';
    await onOneConnection(schema, async (store, db) => {
      for (const id of ['a', 'b']) await store.instances.create(instance(id, { state: 'online' }));
      const claim = (sid: string, version: number) =>
        store.instances.claimForSession(
          [
            { id: 'a', expectedVersion: version },
            { id: 'b', expectedVersion: version },
          ],
          sid,
          { now: T0, session: { groupId: 'g1', metadata: {} } },
        );
      expect(await claim('s1', 1)).toMatchObject({ id: 'a' });
      expect(await store.instances.releaseSession('s1', T0 + 1)).toMatchObject({ instanceFreed: true });
      expect((await store.instances.allocationRows('g1')).map((r) => r.id)).toEqual(['a', 'b']);
      const prepared = await sql<{
        n: number;
      }>`select count(*)::int as n from pg_prepared_statements where statement like '/* prepared */%'`.execute(db);
      expect(prepared.rows[0]!.n).toBe(3);
      // Another replica's migration adds a column while this one keeps its connection and its plans.
      await admin(dbName, (c) =>
        c.query(`alter table ${schema}.instances add column added_later text; alter table ${schema}.sessions add column added_later text`),
      );
      expect(await claim('s2', 3)).toMatchObject({ id: 'a', sessionId: 's2' });
      expect(await store.instances.releaseSession('s2', T0 + 2)).toMatchObject({
        instanceFreed: true,
        session: { id: 's2', status: 'released' },
      });
      expect((await store.instances.allocationRows('g1')).map((r) => r.version)).toEqual([5, 1]);
    });
  });
});

describe('release durability (postgres)', () => {
  it("a release on its own does not wait for its WAL flush (synchronous_commit off for its own statement only): the connection keeps the server default, and a caller's transaction is not weakened", async () => {
    await onOneConnection('release_lazy', async (store, db) => {
      await store.instances.create(instance('a', { state: 'online' }));
      const setting = async () => (await sql<{ v: string }>`select current_setting('synchronous_commit') as v`.execute(db)).rows[0]!.v;
      const before = await setting();
      expect(
        await store.instances.claimForSession([{ id: 'a', expectedVersion: 1 }], 's1', {
          now: T0,
          session: { groupId: 'g1', metadata: {} },
        }),
      ).toMatchObject({ id: 'a' });
      expect(await store.instances.releaseSession('s1', T0 + 1)).toMatchObject({ instanceFreed: true });
      // One connection: the release ran on it, and its setting ended with its transaction.
      expect(await setting()).toBe(before);
      // Inside a caller's transaction the release does not weaken that transaction's commit.
      await store.instances.claimForSession([{ id: 'a', expectedVersion: 3 }], 's2', {
        now: T0 + 2,
        session: { groupId: 'g1', metadata: {} },
      });
      const inside = await store.transaction(async (tx) => {
        await tx.instances.releaseSession('s2', T0 + 3);
        return (
          await sql<{ v: string }>`select current_setting('synchronous_commit') as v`.execute((tx as unknown as { db: Kysely<unknown> }).db)
        ).rows[0]!.v;
      });
      expect(inside).toBe(before);
    });
  });
});
