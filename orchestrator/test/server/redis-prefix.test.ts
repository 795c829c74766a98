// The Redis change channel per deployment, against the real Redis on
// 127.0.0.1:6379: change ports opened the production way (openChangePort) for
// the same database hear each other; for another database, or another
// ENDERCLOUD_REDIS_PREFIX, they hear nothing. "Nothing" is waited for on a
// signal: a marker published on the listener's own channel after the change
// reached a same-deployment peer arrives behind anything Redis sent it before.

import { afterEach, describe, expect, it } from 'vitest';
import type { Change } from '../../src/server/changes/change-port.js';
import { openChangePort, type ClosableChangePort } from '../../src/server/changes/open-change-port.js';
import { silentLogger, until } from './support.js';

const REDIS_URL = process.env.ENDERCLOUD_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const run = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
const ports: ClosableChangePort[] = [];
afterEach(async () => {
  while (ports.length) await ports.pop()!.close();
});

/** A replica's change port: its database is an SQLite file of this run (only its identity matters here). */
async function port(database: string, redisPrefix?: string): Promise<{ port: ClosableChangePort; heard: Change[] }> {
  const p = await openChangePort(
    { redisUrl: REDIS_URL, redisPrefix, databaseUrl: `sqlite:/srv/ec-test-${run}/${database}.db`, dataDir: '/unused' },
    { dialect: 'sqlite' },
    silentLogger,
  );
  ports.push(p);
  expect(p.transport).toBe('redis');
  const heard: Change[] = [];
  p.subscribe((c) => heard.push(c));
  return { port: p, heard };
}

const has = (heard: Change[], id: string) => heard.some((c) => c.id === id);

describe('Redis change channel per deployment', () => {
  it('the same database identity hears the change; another database does not', async () => {
    const a1 = await port('a');
    const a2 = await port('a');
    const b1 = await port('b');
    const b2 = await port('b');
    a1.port.publish({ kind: 'instance', id: 'from-a' });
    await until(() => has(a2.heard, 'from-a'), 'the same deployment hears the change');
    // Redis already delivered from-a to every subscriber of its channel: a marker sent now reaches b1 behind it.
    b2.port.publish({ kind: 'instance', id: 'marker-b' });
    await until(() => has(b1.heard, 'marker-b'), 'b1 hears its own deployment');
    expect(has(b1.heard, 'from-a')).toBe(false);
  });

  it('an explicit ENDERCLOUD_REDIS_PREFIX separates deployments on one database, and joins those that share it', async () => {
    const blue = await port('shared', 'blue');
    const blue2 = await port('other-db', 'blue');
    const green = await port('shared', 'green');
    const green2 = await port('shared', 'green');
    blue.port.publish({ kind: 'host', id: 'from-blue' });
    await until(() => has(blue2.heard, 'from-blue'), 'the same prefix hears it, whatever the database');
    green2.port.publish({ kind: 'host', id: 'marker-green' });
    await until(() => has(green.heard, 'marker-green'), 'green hears its own prefix');
    expect(has(green.heard, 'from-blue')).toBe(false);
  });
});
