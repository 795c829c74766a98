// The reconciler lease in-process: election, epochs, resignation, the local
// lapse of a paused holder (monotonic clock injected), SQLite's sole leader,
// the epoch-stamping driver, and the gate on the command worker's claims.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CallIds, DriverHost, HostDriver } from '../../src/server/drivers/host-driver.js';
import { epochStampingDriver } from '../../src/server/drivers/epoch-stamping-driver.js';
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
    const sole = new LeaderLease({ leases: store.leases, name: 'l3', holder: 'node-s', ttlMs: 1000, logger: silentLogger, now: () => now, sole: true });
    await sole.start();
    now += 3_600_000;
    expect([sole.isLeader(), sole.epoch()]).toEqual([true, 1]);
    await sole.stop();
    expect(sole.isLeader()).toBe(false);
  });
});

describe('epochStampingDriver', () => {
  it('stamps the epoch on every call, capabilities included, and keeps the other ids', async () => {
    const seen: Record<string, CallIds | undefined> = {};
    const rec = (name: string) => async (...args: unknown[]) => {
      seen[name] = args[args.length - 1] as CallIds;
      return undefined as never;
    };
    const names = ['inventory', 'create', 'start', 'stop', 'pause', 'resume', 'replace', 'remove', 'inspect', 'logs', 'cleanup'] as const;
    const inner = Object.fromEntries(names.map((n) => [n, rec(n)])) as unknown as HostDriver;
    Object.assign(inner, {
      backups: { create: rec('backups.create'), list: rec('backups.list'), restore: rec('backups.restore'), delete: rec('backups.delete'), deleteAll: rec('backups.deleteAll') },
      images: { inspectImage: rec('images.inspectImage') },
      rcon: { command: rec('rcon.command') },
      dataImport: { importData: rec('dataImport.importData') },
    });
    let epoch: number | null = 7;
    const d = epochStampingDriver(inner, { epoch: () => epoch });
    const h: DriverHost = { id: 'h', controlUrl: 'http://x' };
    const ids = { commandId: 'c1', requestId: 'r1' };
    await d.inventory(h, ids);
    await d.create(h, 'i', {} as never, ids);
    await d.start(h, 'i', ids);
    await d.stop(h, 'i', {}, ids);
    await d.pause(h, 'i', ids);
    await d.resume(h, 'i', ids);
    await d.replace(h, 'i', {} as never, ids);
    await d.remove(h, 'i', {}, ids);
    await d.inspect(h, 'i', ids);
    await d.logs(h, 'i', { tail: 1 }, ids);
    await d.cleanup(h, { instanceIds: [] }, ids);
    await d.backups!.create(h, 'i', { backupId: 'b' }, ids);
    await d.backups!.list(h, 'i', ids);
    await d.backups!.restore(h, 'i', 'b', ids);
    await d.backups!.delete(h, 'i', 'b', ids);
    await d.backups!.deleteAll(h, 'i', ids);
    await d.images!.inspectImage(h, 'img', { pull: false }, ids);
    await d.rcon!.command(h, 'i', {} as never, ids);
    await d.dataImport!.importData(h, 'i', 'p', {} as never, ids);
    expect(Object.keys(seen)).toHaveLength(19);
    for (const [name, got] of Object.entries(seen)) expect(got, name).toEqual({ commandId: 'c1', requestId: 'r1', epoch: 7 });
    epoch = null;
    await d.start(h, 'i');
    expect(seen.start).toEqual({});
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
    await b.o.ctx.store.commands.create({ id: 'gate-1', kind: 'no-such-kind', payload: {}, requestId: 'r' }, b.clock.now());
    expect(await b.o.worker.tick()).toEqual([]);
    expect((await b.o.ctx.store.commands.get('gate-1'))?.status).toBe('pending');
    await a.o.stop();
    await (b.o.leadership as LeaderLease).attempt();
    expect([b.o.leadership.isLeader(), b.o.leadership.epoch()]).toEqual([true, 2]);
    expect((await b.o.worker.tick()).map((c) => c.id)).toEqual(['gate-1']);
    await b.o.worker.whenIdle();
    expect((await b.o.ctx.store.commands.get('gate-1'))?.claimedBy).toBe(b.o.node.claimer);
  });
});
