// The backup scheduler over a real (SQLite) store with an injected clock: a
// due cron slot requests the `backup` action as the system actor (once per
// slot, retried when busy), an instance's own policy wins over its group's,
// retention prunes scheduled backups from the store and the host, and a group's
// `backup:` field is validated where the group body is.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BackupScheduler } from '../../src/server/services/backup-scheduler.js';
import { BackupStore } from '../../src/server/services/backup-store.js';
import type { HostDriver } from '../../src/server/drivers/host-driver.js';
import { normalizeGroup } from '../../src/contracts/catalog-rules.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { TEST_SECRET_BOX } from './support.js';
import type { Store } from '../../src/store/store.js';
import { group, heartbeat, instance, T0 } from '../store/fixtures.js';

const DAY = 86_400_000;
const at = (iso: string) => Date.parse(iso);

let dir: string;
let store: Store;
let now: number;
let requests: { id: string; action: string; actor: string; payload: unknown }[];
let hostDeletes: string[];
let scheduler: BackupScheduler;
let backupStore: BackupStore;

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ec-backup-scheduler-'));
  store = openSqliteStore(path.join(dir, 'db.sqlite'));
  await store.migrate();
  store.useSecretCodec(TEST_SECRET_BOX);
  now = at('2026-12-01T03:00:00Z');
  requests = [];
  hostDeletes = [];
  const clock = { now: () => now };
  const driver = {
    backups: {
      delete: async (_h: unknown, _i: string, backupId: string) => {
        hostDeletes.push(backupId);
        return { deleted: true };
      },
    },
  } as unknown as HostDriver;
  const logger = pino({ level: 'silent' });
  backupStore = new BackupStore({ dir: path.join(dir, 'backups'), store, driver, clock, logger });
  await backupStore.init();
  scheduler = new BackupScheduler({
    store,
    clock,
    logger,
    driver,
    backupStore,
    intervalMs: 1000,
    lifecycle: {
      request: async (id, action, actor, opts) => {
        requests.push({ id, action, actor: actor.name, payload: opts.payload });
        return { commandId: `cmd-${requests.length}`, state: 'backup' } as never;
      },
    },
  });
  await store.hosts.upsertHeartbeat(heartbeat('h1'), T0);
  await store.groups.put(group('g1', { backup: { schedule: '0 4 * * *', retention: { last: 2 } } }));
  await store.instances.create(instance('i1', { state: 'online', hostId: 'h1' }));
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('backup scheduler', () => {
  it('requests the backup action as the system actor once per due slot, after waiting for the first slot', async () => {
    expect((await scheduler.tick()).requested).toEqual([]); // first sight: wait for the next slot
    now = at('2026-12-01T03:59:00Z');
    expect((await scheduler.tick()).requested).toEqual([]);
    now = at('2026-12-01T04:00:10Z');
    expect((await scheduler.tick()).requested).toEqual(['i1']);
    expect(requests).toEqual([
      {
        id: 'i1',
        action: 'backup',
        actor: 'system',
        payload: { previousState: 'online', trigger: 'schedule', reason: 'schedule 0 4 * * *' },
      },
    ]);
    now = at('2026-12-01T04:05:00Z');
    expect((await scheduler.tick()).requested).toEqual([]);
    // Three missed days collapse into one run.
    now = at('2026-12-04T12:00:00Z');
    expect((await scheduler.tick()).requested).toEqual(['i1']);
    expect(requests).toHaveLength(2);
  });

  it('a busy instance is tried again on the next tick; the instance policy wins over the group one', async () => {
    await scheduler.tick();
    await store.instances.update('i1', { activeAction: { kind: 'stop', commandId: 'cmd-x', startedAt: now } } as never, { now });
    now = at('2026-12-01T04:00:10Z');
    expect((await scheduler.tick()).requested).toEqual([]);
    await store.instances.update('i1', { activeAction: null }, { now });
    expect((await scheduler.tick()).requested).toEqual(['i1']);

    await scheduler.setPolicy((await store.instances.get('i1'))!, { schedule: '*/30 * * * *' });
    expect(await scheduler.describe((await store.instances.get('i1'))!)).toMatchObject({
      source: 'instance',
      nextRunAt: '2026-12-01T04:30:00.000Z',
    });
    now = at('2026-12-01T04:30:00Z');
    expect((await scheduler.tick()).requested).toEqual(['i1']);
    await expect(scheduler.setPolicy((await store.instances.get('i1'))!, { schedule: '61 * * * *' })).rejects.toThrow(/body.schedule/);
  });

  it('retention prunes scheduled backups beyond the rule from the store and the host, never manual ones', async () => {
    for (let d = 0; d < 4; d++) {
      await store.storedBackups.put({
        instanceId: 'i1',
        backupId: `sched-${d}`,
        sha256: 'a'.repeat(64),
        sizeBytes: 1,
        createdAt: T0 + d * DAY,
        storedAt: T0 + d * DAY,
        originHost: 'h1',
        storedPath: `i1/sched-${d}.tar.gz`,
        paths: null,
        trigger: 'schedule',
      });
    }
    await store.storedBackups.put({
      instanceId: 'i1',
      backupId: 'manual-0',
      sha256: 'a'.repeat(64),
      sizeBytes: 1,
      createdAt: T0 - DAY,
      storedAt: T0,
      originHost: 'h1',
      storedPath: 'i1/manual-0.tar.gz',
      paths: null,
      trigger: 'manual',
    });
    const { pruned } = await scheduler.tick();
    expect(pruned.map((p) => p.backupId).sort()).toEqual(['sched-0', 'sched-1']);
    expect(hostDeletes.sort()).toEqual(['sched-0', 'sched-1']);
    expect((await store.storedBackups.listForInstance('i1')).map((b) => b.backupId)).toEqual(['manual-0', 'sched-2', 'sched-3']);
  });
});

describe('group backup field', () => {
  const body = (backup: unknown) =>
    ({ kind: 'persistent', variants: [{ id: 'v', template: { name: 't', version: '1' } }], backup }) as never;
  it('keeps a valid policy and names the field of a bad cron expression', () => {
    expect(normalizeGroup(body({ schedule: '0 4 * * *', retention: { last: 7, daily: 7, weekly: 4 } })).backup).toEqual({
      schedule: '0 4 * * *',
      retention: { last: 7, daily: 7, weekly: 4 },
    });
    expect(normalizeGroup(body(null)).backup).toBeUndefined();
    expect(() => normalizeGroup(body({ schedule: '0 25 * * *' }))).toThrow(/backup.schedule: .*hour/);
  });
});
