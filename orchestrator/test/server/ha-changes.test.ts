// Cross-replica change fan-out (HA): two orchestrators on one PostgreSQL
// database; a write through A reaches a registry-stream listener on B through
// the change port — PostgreSQL LISTEN/NOTIFY by default, Redis pub/sub when
// ENDERCLOUD_REDIS_URL is set — not through B's 1 s safety poll. Latencies are
// printed, not asserted tightly (a loaded 2-core machine).

import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Change } from '../../src/server/changes/change-port.js';
import { CHANGE_APPLICATION_NAME, PostgresChangePort } from '../../src/server/changes/postgres-change-port.js';
import type { FeedEvent } from '../../src/server/registry/registry-feed.js';
import { seed } from './registry-support.js';
import { PG_ADMIN_URL, freshPostgres, silentLogger, testOrchestrator, until, type TestOrchestrator } from './support.js';

const REDIS_URL = process.env.ENDERCLOUD_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let db: { url: string; drop(): Promise<void> };
const open: TestOrchestrator[] = [];
beforeAll(async () => {
  db = await freshPostgres('ec_ha_changes');
});
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});
afterAll(async () => {
  await db?.drop();
});

async function replica(env: Record<string, string> = {}): Promise<TestOrchestrator> {
  const t = await testOrchestrator({
    env: { ENDERCLOUD_DATABASE_URL: db.url, ENDERCLOUD_ADMIN_TOKEN: 'ha-admin-token-0123456789', ...env },
  });
  open.push(t);
  return t;
}

/** Writes through A, n times; answers B's registry-event latency per write (ms). */
async function fanOut(a: TestOrchestrator, b: TestOrchestrator, prefix: string, n: number): Promise<number[]> {
  const seeded = await seed(a, 'http://127.0.0.1:9/agent', `${prefix}-host`);
  const heard: Change[] = [];
  b.o.ctx.changes.subscribe((c) => heard.push(c));
  await b.o.ctx.registry.snapshot();
  const events: FeedEvent[] = [];
  const unsubscribe = b.o.ctx.registry.subscribe((e) => events.push(e));
  const latencies: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const id = `${prefix}-i${i}`;
      const t0 = performance.now();
      await seeded.add(id, 'online');
      await until(() => events.some((e) => e.kind === 'upsert' && e.backend.instanceId === id), `B's registry event for ${id}`, 5000);
      latencies.push(performance.now() - t0);
      // The feature itself: B heard the change from A through the port (not only its own poll).
      expect(heard).toContainEqual({ kind: 'instance', id });
    }
  } finally {
    unsubscribe();
  }
  return latencies;
}

const summary = (ms: number[]) => {
  const sorted = [...ms].sort((x, y) => x - y);
  return `median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, max ${sorted[sorted.length - 1]!.toFixed(1)} ms over ${ms.length}`;
};

describe('change fan-out across replicas', () => {
  it("PostgreSQL LISTEN/NOTIFY: a change written through A reaches a registry listener on B (and A's own listeners at once)", async () => {
    const a = await replica();
    const b = await replica();
    expect((a.o.ctx.changes as { transport?: string }).transport).toBe('postgres');
    const local: Change[] = [];
    a.o.ctx.changes.subscribe((c) => local.push(c));
    await a.o.store.system.put('maintenance', { enabled: false }, 1);
    expect(local).toEqual([{ kind: 'system', id: 'maintenance' }]); // synchronously after the commit, not via the database
    const latencies = await fanOut(a, b, 'pg', 10);
    console.log(`[ha-changes] postgres LISTEN/NOTIFY A→B registry event latency: ${summary(latencies)} (target < 100 ms)`);
    // Generous: B's safety poll is 1 s, so anything well below shows the notification path.
    expect(Math.min(...latencies)).toBeLessThan(900);
  });

  it('Redis pub/sub when ENDERCLOUD_REDIS_URL is set', async () => {
    const env = { ENDERCLOUD_REDIS_URL: REDIS_URL };
    const a = await replica(env);
    const b = await replica(env);
    expect((b.o.ctx.changes as { transport?: string }).transport).toBe('redis');
    const latencies = await fanOut(a, b, 'redis', 10);
    console.log(`[ha-changes] redis pub/sub A→B registry event latency: ${summary(latencies)} (target < 100 ms)`);
    expect(Math.min(...latencies)).toBeLessThan(900);
  });

  it('the PostgreSQL port reconnects after its connection is killed and tells listeners to resync', async () => {
    const a = new PostgresChangePort({ connectionString: db.url, logger: silentLogger, reconnectDelayMs: 50 });
    const b = new PostgresChangePort({ connectionString: db.url, logger: silentLogger, reconnectDelayMs: 50 });
    await a.open();
    await b.open();
    try {
      const heard: Change[] = [];
      b.subscribe((c) => heard.push(c));
      const admin = new pg.Client({ connectionString: db.url.replace(/\/[^/?]+(\?|$)/, `/${new URL(PG_ADMIN_URL).pathname.slice(1)}$1`) });
      await admin.connect();
      try {
        await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and application_name = $2`, [
          new URL(db.url).pathname.slice(1),
          CHANGE_APPLICATION_NAME,
        ]);
      } finally {
        await admin.end();
      }
      await until(() => heard.some((c) => c.kind === 'system' && c.id === undefined), 'a resync after the reconnect', 5000);
      await until(() => a.connected && b.connected, 'both reconnected', 5000);
      a.publish({ kind: 'host', id: 'after-reconnect' });
      await until(() => heard.some((c) => c.id === 'after-reconnect'), 'a change after the reconnect', 5000);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
