// Secret settings encrypted at rest (issue 26), through the real API on a real
// database: a secret given at creation (and the generated instance token) is
// in no stored byte — the SQLite file and its WAL, every PostgreSQL row — while
// the API names it and the container's env has it; an older database's
// plaintext is sealed at the next start (logged with a count, once); a start
// with another key is refused naming both fingerprints; a sealed value copied
// to another row does not open there.

import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { MasterKey, parseMasterKey } from '../../src/server/secrets/master-key.js';
import { SQLITE_FILE_NAME } from '../../src/store/open-store.js';
import {
  AGENT_TOKEN,
  freshPostgres,
  heartbeatBody,
  newDataDir,
  startFakeAgent,
  TEST_SECRET_KEY,
  testOrchestrator,
  until,
  type FakeAgent,
  type TestOrchestrator,
} from './support.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

type Dialect = 'sqlite' | 'postgres';

/** Where one test's database lives, and how to read and write it behind the orchestrator's back. */
interface Db {
  env: Record<string, string>;
  dataDir: string;
  /** Every stored byte (SQLite: the file, its WAL and shm) or every row of every table (PostgreSQL), as text. */
  dump(): Promise<string>;
  exec(statement: string, params?: unknown[]): Promise<void>;
}

async function database(dialect: Dialect): Promise<Db> {
  const dataDir = await newDataDir();
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  if (dialect === 'sqlite') {
    const file = path.join(dataDir, SQLITE_FILE_NAME);
    return {
      env: {},
      dataDir,
      async dump() {
        const parts = await Promise.all(['', '-wal', '-shm'].map((s) => (existsSync(file + s) ? readFile(file + s) : Buffer.alloc(0))));
        return Buffer.concat(parts).toString('latin1');
      },
      async exec(statement, params = []) {
        const db = new Database(file);
        try {
          db.prepare(statement.replace(/\$\d+/g, '?')).run(...params);
        } finally {
          db.close();
        }
      },
    };
  }
  const pgDb = await freshPostgres('ec_secrets');
  cleanups.push(() => pgDb.drop());
  const withClient = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: pgDb.url });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  return {
    env: { ENDERCLOUD_DATABASE_URL: pgDb.url },
    dataDir,
    dump: () =>
      withClient(async (c) => {
        const tables = await c.query<{ t: string }>(`select tablename as t from pg_tables where schemaname = 'public'`);
        const rows: string[] = [];
        for (const { t } of tables.rows)
          rows.push(...(await c.query<{ r: string }>(`select x::text as r from "${t}" x`)).rows.map((r) => r.r));
        return rows.join('\n');
      }),
    exec: (statement, params = []) => withClient(async (c) => void (await c.query(statement, params))),
  };
}

async function orchestrator(db: Db, more: Parameters<typeof testOrchestrator>[0] = {}): Promise<TestOrchestrator> {
  const t = await testOrchestrator({ dataDir: db.dataDir, keepDataDir: true, ...more, env: { ...db.env, ...more.env } });
  cleanups.push(() => t.close());
  return t;
}

async function hostAndCatalog(t: TestOrchestrator): Promise<FakeAgent> {
  const a = await startFakeAgent();
  cleanups.push(() => a.close());
  expect(
    (
      await t.call('PUT', '/api/v1/templates/tpl/versions/1', {
        body: {
          image: 'busybox:1',
          resources: { memoryMb: 256 },
          variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true, required: true }],
        },
      })
    ).status,
  ).toBeLessThan(300);
  const g = await t.call('PUT', '/api/v1/groups/g', {
    body: { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
  });
  expect(g.status).toBe(201);
  const hb = await t.call('POST', '/api/v1/agents/host-a/heartbeat', {
    body: heartbeatBody(a.url, { resources: { cpuCount: 2, memoryTotalBytes: 4096 * 1024 * 1024 } }),
    token: AGENT_TOKEN,
  });
  expect(hb.status).toBe(200);
  await t.o.ctx.hosts.whenIdle();
  return a;
}

/** The env of the container the agent created for `id`. */
function containerEnv(a: FakeAgent, id: string): Record<string, string> {
  const c = [...a.runtime.containers.values()].find((x) => x.name.includes(id));
  if (!c) throw new Error(`no container for ${id}`);
  return Object.fromEntries(c.env);
}

async function created(t: TestOrchestrator, commandId: string): Promise<void> {
  t.o.worker.start();
  await until(async () => (await t.call('GET', `/api/v1/commands/${commandId}`)).body.status === 'succeeded', 'create command');
}

function capturingLogger(lines: string[]) {
  return pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
}

describe.each<Dialect>(['sqlite', 'postgres'])('secret settings at rest (%s)', (dialect) => {
  it('a secret given at creation and the generated instance token are in no stored byte; the API names them and the container has them', async () => {
    const db = await database(dialect);
    const t = await orchestrator(db);
    const a = await hostAndCatalog(t);
    const secret = `rcon-${dialect}-5f0c2e9a71`;
    const res = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', secrets: { RCON_PASSWORD: secret } } });
    expect(res.status).toBe(202);
    await created(t, res.body.commandId);
    const env = containerEnv(a, res.body.id);
    expect(env.RCON_PASSWORD).toBe(secret);
    const token = env.ENDERCLOUD_INSTANCE_TOKEN!;
    expect(token.length).toBeGreaterThan(16);
    expect((await t.call('GET', `/api/v1/instances/${res.body.id}`)).body.secretSettings).toEqual(
      expect.arrayContaining(['RCON_PASSWORD', 'ENDERCLOUD_INSTANCE_TOKEN']),
    );
    const stored = await db.dump();
    expect(stored).toContain(`ec1:${parseMasterKey(TEST_SECRET_KEY, 'test').fingerprint()}:`);
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain(token);
    // The network's forwarding secret is sealed the same way.
    const networkSecret = await t.o.ctx.networkSecret.get();
    expect(networkSecret.length).toBeGreaterThanOrEqual(32);
    expect(stored).not.toContain(networkSecret);
  });

  it('an older database keeps its secret settings in plaintext: the next start seals them (logged with a count) and once only; the container still gets them', async () => {
    const db = await database(dialect);
    const first = await orchestrator(db);
    await hostAndCatalog(first);
    const res = await first.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', secrets: { RCON_PASSWORD: 'x' } } });
    expect(res.status).toBe(202);
    const plain: Record<string, string> = {
      ...(await first.o.store.instances.get(res.body.id))!.secretSettings,
      RCON_PASSWORD: `legacy-${dialect}-0b7d33c1`,
    };
    await first.close();
    // As a version before encryption wrote it: plain JSON and no key fingerprint recorded.
    await db.exec('update instances set secret_settings = $1 where id = $2', [JSON.stringify(plain), res.body.id]);
    await db.exec(`delete from system_settings where key = 'secret-key-fingerprint'`);
    const legacyNetworkSecret = `legacy-network-secret-${dialect}-0123456789abcdef`;
    await db.exec(`update system_settings set value = $1 where key = 'network-secret'`, [JSON.stringify(legacyNetworkSecret)]);
    expect(await db.dump()).toContain(plain.RCON_PASSWORD);
    expect(await db.dump()).toContain(legacyNetworkSecret);

    const lines: string[] = [];
    const second = await orchestrator(db, { deps: { logger: capturingLogger(lines) } });
    expect(
      lines.filter((l) => l.includes('sealed the plaintext secret settings of 1 instance(s) written by an older version')),
    ).toHaveLength(1);
    const stored = await db.dump();
    expect(stored).not.toContain(plain.RCON_PASSWORD);
    expect(stored).not.toContain(legacyNetworkSecret);
    expect(await second.o.ctx.networkSecret.get()).toBe(legacyNetworkSecret);
    expect(stored).not.toContain(plain.ENDERCLOUD_INSTANCE_TOKEN!);
    const a = await startFakeAgent();
    cleanups.push(() => a.close());
    // A fresh agent at another port: a heartbeat never moves a known host, so point the row there as an enrolment would.
    await db.exec(`update hosts set control_url = $1 where id = 'host-a'`, [a.url]);
    await second.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN });
    await second.o.ctx.hosts.whenIdle();
    await created(second, res.body.commandId);
    expect(containerEnv(a, res.body.id).RCON_PASSWORD).toBe(plain.RCON_PASSWORD);
    await second.close();

    const again: string[] = [];
    await orchestrator(db, { deps: { logger: capturingLogger(again) } });
    expect(again.filter((l) => l.includes('sealed the plaintext'))).toHaveLength(0);
  });

  it('a start with another key is refused, naming the variables and both fingerprints but never a key', async () => {
    const db = await database(dialect);
    await (await orchestrator(db)).close();
    const other = Buffer.alloc(32, 0x6f).toString('base64');
    const err = await testOrchestrator({ dataDir: db.dataDir, keepDataDir: true, env: { ...db.env, ENDERCLOUD_SECRET_KEY: other } }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toContain(`has fingerprint ${parseMasterKey(other, 'x').fingerprint()}`);
    expect(err?.message).toContain(`sealed under the key with fingerprint ${parseMasterKey(TEST_SECRET_KEY, 'x').fingerprint()}`);
    expect(err?.message).toMatch(/ENDERCLOUD_SECRET_KEY or ENDERCLOUD_SECRET_KEY_FILE; every replica needs the same one/);
    expect(err?.message).not.toContain(other);
    expect(err?.message).not.toContain(TEST_SECRET_KEY);
    // The right key still starts.
    await orchestrator(db);
  });
});

describe('secret settings bound to their row', () => {
  it('a sealed value copied to another instance does not open there', async () => {
    const db = await database('sqlite');
    const t = await orchestrator(db);
    await hostAndCatalog(t);
    const ids: string[] = [];
    for (const name of ['one', 'two']) {
      const res = await t.call('POST', '/api/v1/instances', {
        body: { groupId: 'g', variantId: 'v', name, secrets: { RCON_PASSWORD: name } },
      });
      expect(res.status).toBe(202);
      ids.push(res.body.id);
    }
    await t.close();
    await db.exec('update instances set secret_settings = (select secret_settings from instances where id = $1) where id = $2', [
      ids[0],
      ids[1],
    ]);
    const again = await orchestrator(db);
    expect((await again.o.store.instances.get(ids[0]!))?.secretSettings.RCON_PASSWORD).toBe('one');
    await expect(again.o.store.instances.get(ids[1]!)).rejects.toThrow(
      new RegExp(
        `instances/${ids[1]}/secretSettings does not open under secret key ${MasterKey.fromBytes(Buffer.from(TEST_SECRET_KEY, 'base64'), 'x').fingerprint()}`,
      ),
    );
  });
});
