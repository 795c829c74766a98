// Liveness, readiness and who leads (HA): GET /health never reads the database
// and names the leader and its epoch as this replica last saw it; GET /ready
// fails with 503 DATABASE_UNAVAILABLE within ENDERCLOUD_READY_TIMEOUT when the
// database stops answering (a real PostgreSQL behind a forwarder cut like a
// partition), while /health stays 200; /metrics carries endercloud_leader.
// The pg pool's connect and statement timeouts bound what a cut database holds.

import { performance } from 'node:perf_hooks';
import { sql, type Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseReadiness } from '../../src/server/services/readiness.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import { freePort } from '../support/registry.js';
import { startTcpCut, type TcpCut } from '../support/tcp-cut.js';
import { freshPostgres, testOrchestrator, until, type TestOrchestrator } from './support.js';

let db: { url: string; drop(): Promise<void> };
const open: TestOrchestrator[] = [];
const cuts: TcpCut[] = [];
beforeAll(async () => {
  db = await freshPostgres('ec_system_routes');
});
afterEach(async () => {
  for (const c of cuts) c.heal();
  while (open.length) await open.pop()!.close();
  while (cuts.length) await cuts.pop()!.close();
});
afterAll(async () => {
  await db?.drop();
});

async function orchestrator(env: Record<string, string> = {}): Promise<TestOrchestrator> {
  const t = await testOrchestrator({ env });
  open.push(t);
  return t;
}

/** The test database's URL through a forwarder that can be cut. */
async function throughCut(): Promise<{ url: string; cut: TcpCut }> {
  const u = new URL(db.url);
  const cut = await startTcpCut({ host: u.hostname, port: Number(u.port || 5432) });
  cuts.push(cut);
  u.host = `127.0.0.1:${cut.port}`;
  return { url: u.toString(), cut };
}

describe('GET /health and GET /ready', () => {
  it('SQLite: the health answer names this node as the leader (epoch 1); ready answers; both are public', async () => {
    const t = await orchestrator({ ENDERCLOUD_NODE_ID: 'solo' });
    const health = await t.call('GET', '/api/v1/health', { token: null });
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', database: 'sqlite', node: 'solo', leader: { node: 'solo', epoch: 1, self: true } });
    const ready = await t.call('GET', '/api/v1/ready', { token: null });
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ready', database: 'sqlite', latencyMs: expect.any(Number) });
  });

  it('PostgreSQL, two replicas: each names the first as leader with its epoch, self only on the leader; /metrics says the same', async () => {
    const a = await orchestrator({
      ENDERCLOUD_DATABASE_URL: db.url,
      ENDERCLOUD_NODE_ID: 'node-a',
      ENDERCLOUD_ADMIN_TOKEN: 'system-admin-token-0123456789',
    });
    const b = await orchestrator({
      ENDERCLOUD_DATABASE_URL: db.url,
      ENDERCLOUD_NODE_ID: 'node-b',
      ENDERCLOUD_ADMIN_TOKEN: 'system-admin-token-0123456789',
    });
    const epoch = a.o.leadership.epoch();
    expect(epoch).toBeGreaterThanOrEqual(1);
    expect((await a.call('GET', '/api/v1/health')).body.leader).toEqual({ node: 'node-a', epoch, self: true });
    expect((await b.call('GET', '/api/v1/health')).body).toMatchObject({
      database: 'postgres',
      node: 'node-b',
      leader: { node: 'node-a', epoch, self: false },
    });
    const metricsOf = async (t: TestOrchestrator) => (await t.call('GET', '/metrics')).body as string;
    const mb = await metricsOf(b);
    expect(mb).toContain('endercloud_leader{node="node-a"} 1');
    expect(mb).toContain(`endercloud_leader_epoch ${epoch}`);
    expect(mb).toContain('endercloud_leader_self 0');
    expect(await metricsOf(a)).toContain('endercloud_leader_self 1');
  });

  it('PostgreSQL cut like a partition: /ready answers 503 DATABASE_UNAVAILABLE within its bound while /health stays 200; healed, ready again', async () => {
    const { url, cut } = await throughCut();
    const t = await orchestrator({ ENDERCLOUD_DATABASE_URL: url, ENDERCLOUD_READY_TIMEOUT: '500ms', ENDERCLOUD_NODE_ID: 'node-cut' });
    expect((await t.call('GET', '/api/v1/ready', { token: null })).status).toBe(200);
    cut.cut();
    const started = performance.now();
    const ready = await t.call('GET', '/api/v1/ready', { token: null });
    const tookMs = performance.now() - started;
    expect(ready.status).toBe(503);
    expect(ready.body.error).toEqual({ code: 'DATABASE_UNAVAILABLE', message: 'the postgres database did not answer within 500 ms' });
    expect(tookMs).toBeGreaterThanOrEqual(450);
    expect(tookMs).toBeLessThan(3000);
    const health = await t.call('GET', '/api/v1/health', { token: null });
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', database: 'postgres', leader: { node: 'node-cut', self: true } });
    cut.heal();
    await until(async () => (await t.call('GET', '/api/v1/ready', { token: null })).status === 200, 'ready after the heal');
  });

  it('a database address nobody listens on: readiness fails at once, naming the refusal', async () => {
    const store = openPostgresStore(`postgres://postgres@127.0.0.1:${await freePort()}/none`, { connectTimeoutMs: 1000 });
    try {
      const readiness = new DatabaseReadiness({ store, timeoutMs: 2000 });
      await expect(readiness.check()).rejects.toMatchObject({
        code: 'DATABASE_UNAVAILABLE',
        message: expect.stringMatching(/^the postgres database is unreachable: .*ECONNREFUSED/),
      });
    } finally {
      await store.close();
    }
  });
});

describe('the pg pool bounds', () => {
  it('a connection the database never answers fails after the connect timeout', async () => {
    const { url, cut } = await throughCut();
    cut.cut();
    const store = openPostgresStore(url, { connectTimeoutMs: 300 });
    try {
      const started = performance.now();
      await expect(store.ping()).rejects.toThrow(/timeout/i);
      expect(performance.now() - started).toBeLessThan(3000);
    } finally {
      cut.heal();
      await store.close();
    }
  });

  it('a statement running past the statement timeout is ended by the server', async () => {
    const store = openPostgresStore(db.url, { statementTimeoutMs: 200 });
    try {
      const kysely = (store as unknown as { db: Kysely<unknown> }).db;
      await expect(sql`select pg_sleep(5)`.execute(kysely)).rejects.toThrow(/statement timeout/);
      await store.ping();
    } finally {
      await store.close();
    }
  });
});
