// The reconciler lease in-process: election, epochs, resignation, the local
// lapse of a paused holder (monotonic clock injected), SQLite's sole leader,
// the engine driver's epoch header, and the gate on the command worker's claims.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import { AgentHostDriver } from '../../src/server/drivers/agent-driver.js';
import type { DriverHost } from '../../src/server/drivers/host-driver.js';
import { LeaderLease } from '../../src/server/leadership/leader-lease.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { InProcessChangePort } from '../../src/server/changes/change-port.js';
import { freshPostgres, silentLogger, testOrchestrator, until, type TestOrchestrator } from './support.js';

let dir: string;
let store: Store;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ec-ha-lease-'));
  store = await openStore(undefined, dir);
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('LeaderLease', () => {
  it('one holder at a time; resignation hands over with epoch + 1; a paused holder lapses locally before any renewal', async () => {
    let nowA = 0;
    const a = new LeaderLease({ leases: store.leases, name: 'l1', holder: 'node-a', ttlMs: 60_000, logger: silentLogger, now: () => nowA });
    const b = new LeaderLease({ leases: store.leases, name: 'l1', holder: 'node-b', ttlMs: 60_000, logger: silentLogger });
    const seenB: boolean[] = [];
    b.onChange((leader) => seenB.push(leader));
    await a.start();
    await b.start();
    expect([a.isLeader(), a.epoch()]).toEqual([true, 1]);
    expect([b.isLeader(), b.epoch()]).toEqual([false, null]);
    nowA += 60_000; // "paused" for a whole TTL: no longer the leader, even before it learns anything
    expect(a.isLeader()).toBe(false);
    expect(a.epoch()).toBe(1); // still stamped on its late calls, which agents then refuse
    nowA -= 60_000;
    await a.stop();
    await b.attempt();
    expect([b.isLeader(), b.epoch()]).toEqual([true, 2]);
    expect(seenB).toEqual([true]);
    await b.stop();
    expect(seenB).toEqual([true, false]);
  });

  it('leader() names the holder as each candidate last saw it, and null once the database stops answering', async () => {
    const own = await openStore(undefined, await mkdtemp(path.join(dir, 'view-')));
    const a = new LeaderLease({ leases: own.leases, name: 'lv', holder: 'node-a', ttlMs: 60_000, logger: silentLogger });
    const b = new LeaderLease({ leases: own.leases, name: 'lv', holder: 'node-b', ttlMs: 60_000, logger: silentLogger });
    await a.attempt();
    await b.attempt();
    expect(a.leader()).toEqual({ node: 'node-a', epoch: 1, self: true });
    expect(b.leader()).toEqual({ node: 'node-a', epoch: 1, self: false });
    await own.close();
    await b.attempt(); // fails: the store is closed
    expect(b.leader()).toBeNull();
    expect(a.leader()).toEqual({ node: 'node-a', epoch: 1, self: true }); // its local lease has not lapsed
  });

  it('a resignation is announced on the change port: a standby takes over at once, not at its next round', async () => {
    const changes = new InProcessChangePort(); // stands in for the cross-replica fan-out
    const a = new LeaderLease({ leases: store.leases, name: 'reconciler', holder: 'node-a', ttlMs: 60_000, logger: silentLogger, changes });
    const b = new LeaderLease({ leases: store.leases, name: 'reconciler', holder: 'node-b', ttlMs: 60_000, logger: silentLogger, changes });
    await a.start();
    await b.start();
    expect(b.isLeader()).toBe(false);
    const t0 = Date.now();
    await a.stop();
    await until(() => b.isLeader(), 'the standby to take over', 2000);
    expect(Date.now() - t0).toBeLessThan(2000); // its own round is 20 s away
    expect(b.epoch()).toBe(2);
    await b.stop();
  });

  it('a restarted node (same holder) takes its lease back at once, keeping the epoch', async () => {
    const first = new LeaderLease({ leases: store.leases, name: 'l2', holder: 'node-a', ttlMs: 60_000, logger: silentLogger });
    await first.start();
    // No stop(): the process "died" holding the lease.
    const again = new LeaderLease({ leases: store.leases, name: 'l2', holder: 'node-a', ttlMs: 60_000, logger: silentLogger });
    await again.start();
    expect([again.isLeader(), again.epoch()]).toEqual([true, 1]);
    await again.stop();
  });

  it('sole (SQLite, one process): leader with epoch 1 and never lapses locally', async () => {
    let now = 0;
    const sole = new LeaderLease({
      leases: store.leases,
      name: 'l3',
      holder: 'node-s',
      ttlMs: 1000,
      logger: silentLogger,
      now: () => now,
      sole: true,
    });
    await sole.start();
    now += 3_600_000;
    expect([sole.isLeader(), sole.epoch()]).toEqual([true, 1]);
    await sole.stop();
    expect(sole.isLeader()).toBe(false);
  });
});

describe('the engine driver stamps the lease epoch', () => {
  it('sends x-leader-epoch on every call, capabilities included; while no epoch is known a mutating call fails before it is sent', async () => {
    const seen: { route: string; epoch: string | undefined }[] = [];
    const server = createServer((req, res) => {
      seen.push({ route: `${req.method} ${req.url}`, epoch: req.headers['x-leader-epoch'] as string | undefined });
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"instances":[],"backups":[],"entries":[]}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as { port: number }).port;
      let epoch: number | null = 7;
      const d = new AgentHostDriver({ token: undefined, timeoutMs: 5000, epoch: { epoch: () => epoch } });
      const h: DriverHost = { id: 'h', controlUrl: `http://127.0.0.1:${port}` };
      const calls: (() => Promise<unknown>)[] = [
        () => d.inventory(h),
        () => d.create(h, 'i', {} as never),
        () => d.start(h, 'i'),
        () => d.stop(h, 'i', {}),
        () => d.pause(h, 'i'),
        () => d.resume(h, 'i'),
        () => d.replace(h, 'i', {} as never),
        () => d.remove(h, 'i', {}),
        () => d.inspect(h, 'i'),
        () => d.logs(h, 'i', { tail: 1 }),
        () => d.cleanup(h, { instanceIds: [] }),
        () => d.backups.create(h, 'i', { backupId: 'b' }),
        () => d.backups.list(h, 'i'),
        () => d.backups.restore(h, 'i', 'b'),
        () => d.backups.delete(h, 'i', 'b'),
        () => d.backups.deleteAll(h, 'i'),
        () => d.images.inspectImage(h, 'img', { pull: false }),
        () => d.rcon.command(h, 'i', {} as never),
      ];
      for (const call of calls) await call().catch(() => undefined);
      expect(seen).toHaveLength(calls.length);
      for (const s of seen) expect(s.epoch, s.route).toBe('7');
      epoch = null;
      seen.length = 0;
      const refused = await d.start(h, 'i').then(
        () => undefined,
        (e: unknown) => e as { code: string; message: string },
      );
      expect(refused?.code).toBe('DATABASE_UNAVAILABLE');
      expect(refused?.message).toMatch(/no reconciler lease epoch is known yet.*x-leader-epoch/);
      await d.inventory(h);
      expect(seen).toEqual([{ route: 'GET /api/v1/instances', epoch: undefined }]);
    } finally {
      server.close();
    }
  });
});

describe('the command worker claims only on the leader', () => {
  let db: { url: string; drop(): Promise<void> };
  const open: TestOrchestrator[] = [];
  beforeAll(async () => {
    db = await freshPostgres('ec_ha_gate');
  });
  afterEach(async () => {
    while (open.length) await open.pop()!.close();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('a standby replica claims nothing; it takes over after the leader resigns', async () => {
    const env = { ENDERCLOUD_DATABASE_URL: db.url, ENDERCLOUD_ADMIN_TOKEN: 'ha-admin-token-0123456789abcdef' };
    const a = await testOrchestrator({ env });
    open.push(a);
    const b = await testOrchestrator({ env });
    open.push(b);
    expect([a.o.leadership.isLeader(), a.o.leadership.epoch()]).toEqual([true, 1]);
    expect(b.o.leadership.isLeader()).toBe(false);
    await b.o.store.commands.create({ id: 'gate-1', kind: 'no-such-kind', payload: {}, requestId: 'r' }, b.clock.now());
    expect(await b.o.worker.tick()).toEqual([]);
    expect((await b.o.store.commands.get('gate-1'))?.status).toBe('pending');
    await a.o.stop();
    await (b.o.leadership as LeaderLease).attempt();
    expect([b.o.leadership.isLeader(), b.o.leadership.epoch()]).toEqual([true, 2]);
    expect((await b.o.worker.tick()).map((c) => c.id)).toEqual(['gate-1']);
    await b.o.worker.whenIdle();
    expect((await b.o.store.commands.get('gate-1'))?.claimedBy).toBe(b.o.node.claimer);
  });
});
