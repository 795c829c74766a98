// Store change notifications for the registry feed (changes/) on a real
// SQLite store: a write announces itself only after it commits (a transaction's
// writes after the outermost commit, a rollback never), routine heartbeats stay
// quiet, and the feed turns a change into a stream event at once, not on its poll.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessChangePort, type Change } from '../../src/server/changes/change-port.js';
import { notifyingStore } from '../../src/server/changes/notifying-store.js';
import { RegistryFeed, type FeedEvent } from '../../src/server/registry/registry-feed.js';
import { openStore } from '../../src/store/open-store.js';
import type { InstanceFilter, Store } from '../../src/store/store.js';
import { group, heartbeat, instance, templateSpec, templateVersion } from '../store/fixtures.js';
import { silentLogger, TEST_SECRET_BOX, testOrchestrator, until } from './support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function observed(): Promise<{ store: Store; changes: InProcessChangePort; seen: Change[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'ec-changes-'));
  const raw = await openStore(undefined, dir);
  raw.useSecretCodec(TEST_SECRET_BOX);
  cleanups.push(async () => {
    await raw.close();
    await rm(dir, { recursive: true, force: true });
  });
  const changes = new InProcessChangePort();
  const seen: Change[] = [];
  changes.subscribe((c) => seen.push(c));
  const store = notifyingStore(raw, changes);
  await store.hosts.upsertHeartbeat(heartbeat('h1'), 1);
  await store.hosts.setStatus('h1', 'ONLINE', { now: 1 });
  await store.templates.create(templateVersion('paper', '1.0.0', templateSpec()));
  await store.groups.put(group('g1'));
  seen.length = 0;
  return { store, changes, seen };
}

describe('store change notifications', () => {
  it('announces a committed instance write with its id; reads stay quiet', async () => {
    const { store, seen, changes } = await observed();
    expect(changes.listenerCount).toBe(1);
    await store.instances.create(instance('i1', { hostId: 'h1', state: 'online' }));
    await store.instances.transition('i1', 'pausing', { now: 2, reason: 'test' });
    await store.instances.list();
    expect(seen).toEqual([
      { kind: 'instance', id: 'i1' },
      { kind: 'instance', id: 'i1' },
    ]);
    expect(store.dialect).toBe('sqlite');
  });

  it('emits a transaction’s writes only after the outermost commit, and nothing for a rollback', async () => {
    const { store, seen } = await observed();
    await store.instances.create(instance('i1', { hostId: 'h1', state: 'online' }));
    seen.length = 0;
    let insideCount = -1;
    await store.transaction(async (tx) => {
      await tx.instances.update('i1', { desiredState: 'stopped' }, { now: 2 });
      await tx.transaction(async (inner) => inner.instances.transition('i1', 'stopping', { now: 2, reason: 'nested' }));
      insideCount = seen.length;
    });
    expect(insideCount).toBe(0);
    expect(seen).toEqual([
      { kind: 'instance', id: 'i1' },
      { kind: 'instance', id: 'i1' },
    ]);

    seen.length = 0;
    await expect(
      store.transaction(async (tx) => {
        await tx.instances.transition('i1', 'stopped', { now: 3, reason: 'rolled back' });
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(seen).toEqual([]);
    expect((await store.instances.get('i1'))?.state).toBe('stopping');
  });

  it('a routine heartbeat is quiet; a new host, a status change and a maintenance toggle announce', async () => {
    const { store, seen } = await observed();
    await store.hosts.upsertHeartbeat(heartbeat('h1'), 5);
    expect(seen).toEqual([]);
    await store.hosts.upsertHeartbeat(heartbeat('h2'), 5);
    await store.hosts.setStatus('h1', 'ONLINE', { now: 6, from: ['OFFLINE'] }); // condition fails: no change
    await store.hosts.setStatus('h1', 'OFFLINE', { now: 6 });
    await store.system.put('maintenance', { enabled: true, message: 'm', since: 7 }, 7);
    expect(seen).toEqual([
      { kind: 'host', id: 'h2' },
      { kind: 'host', id: 'h1' },
      { kind: 'system', id: 'maintenance' },
    ]);
  });

  it('the feed turns a store change into a stream event at once, with the poll an hour away', async () => {
    const { store, changes } = await observed();
    await store.instances.create(instance('i1', { hostId: 'h1', state: 'online', endpoint: { host: '127.0.0.1', port: 30001 } }));
    const feed = new RegistryFeed({ store, changes, clock: { now: () => Date.now() }, logger: silentLogger, pollIntervalMs: 3_600_000 });
    cleanups.push(() => feed.close());
    await feed.snapshot();
    const events: FeedEvent[] = [];
    const unsubscribe = feed.subscribe((e) => events.push(e));
    expect(changes.listenerCount).toBe(2); // the test's and the feed's
    const t0 = Date.now();
    await store.instances.transition('i1', 'pausing', { now: 2, reason: 'test' });
    await until(() => events.length > 0, 'an upsert without waiting for the poll', 2000);
    expect(Date.now() - t0).toBeLessThan(500);
    expect(events[0]).toMatchObject({ kind: 'upsert', backend: { instanceId: 'i1', status: 'Paused' } });
    unsubscribe();
    expect(changes.listenerCount).toBe(1); // the feed stops listening with its last subscriber
  });

  it('the orchestrator builds its services on the observed store, so lifecycle writes reach the feed', async () => {
    const t = await testOrchestrator();
    cleanups.push(() => t.close());
    const seen: Change[] = [];
    t.o.ctx.changes.subscribe((c) => seen.push(c));
    await t.o.store.system.put('maintenance', { enabled: false }, 1);
    expect(seen).toEqual([{ kind: 'system', id: 'maintenance' }]);
  });
});

/**
 * The feed's reads, recorded: `instances.list` filters (an unfiltered one is a
 * full read). The feed reads through this; the test writes through `store`.
 */
function watchedReads(store: Store): { store: Store; lists: (InstanceFilter | undefined)[] } {
  const lists: (InstanceFilter | undefined)[] = [];
  const instances = Object.assign(Object.create(store.instances) as Store['instances'], {
    list: (filter?: InstanceFilter) => {
      lists.push(filter);
      return store.instances.list(filter);
    },
  });
  return { store: Object.assign(Object.create(store) as Store, { instances }), lists };
}

describe('the feed reads what changed, not the whole view', () => {
  async function following(count: number, clock = { now: () => Date.now() }) {
    const { store, changes } = await observed();
    await store.hosts.upsertHeartbeat(heartbeat('h2'), 1);
    await store.hosts.setStatus('h2', 'ONLINE', { now: 1 });
    for (let n = 0; n < count; n++) {
      await store.instances.create(
        instance(`i${n}`, { hostId: n % 2 === 0 ? 'h1' : 'h2', state: 'online', endpoint: { host: '127.0.0.1', port: 30000 + n } }),
      );
    }
    const reads = watchedReads(store);
    const feed = new RegistryFeed({ store: reads.store, changes, clock, logger: silentLogger, pollIntervalMs: 3_600_000 });
    cleanups.push(() => feed.close());
    const events: FeedEvent[] = [];
    cleanups.push(feed.subscribe((e) => events.push(e)));
    await feed.snapshot();
    events.length = 0;
    reads.lists.length = 0;
    return { store, changes, feed, events, lists: reads.lists };
  }

  it('an instance change re-reads that instance alone, and a deletion removes it the same way', async () => {
    const { store, events, lists } = await following(40);
    await store.instances.transition('i7', 'pausing', { now: 2, reason: 'test' });
    await until(() => events.length > 0, 'the upsert', 2000);
    expect(events).toMatchObject([{ kind: 'upsert', backend: { instanceId: 'i7', status: 'Paused' } }]);
    expect(lists).toEqual([{ ids: ['i7'] }]);
    events.length = 0;
    lists.length = 0;
    await store.instances.delete('i8');
    await until(() => events.length > 0, 'the removal', 2000);
    expect(events).toMatchObject([{ kind: 'remove', instanceId: 'i8' }]);
    expect(lists).toEqual([{ ids: ['i8'] }]);
  });

  it("a host's status change turns exactly its instances Stale, without reading any instance", async () => {
    const { store, events, lists } = await following(6);
    await store.hosts.setStatus('h2', 'OFFLINE', { now: 3 });
    await until(() => events.length >= 3, 'three upserts', 2000);
    await new Promise((r) => setTimeout(r, 50));
    expect(events.map((e) => e.kind === 'upsert' && [e.backend.instanceId, e.backend.status])).toEqual([
      ['i1', 'Stale'],
      ['i3', 'Stale'],
      ['i5', 'Stale'],
    ]);
    expect(lists).toEqual([]);
  });

  it('a router session changes the player count of its instance only', async () => {
    const { store, events, lists } = await following(4);
    await store.playerSessions.open({
      id: 'ps1',
      routerId: 'r1',
      playerName: 'Steve',
      playerUuid: null,
      instanceId: 'i2',
      clientAddress: null,
      status: 'active',
      reason: null,
      connectedAt: 4,
      disconnectedAt: null,
    });
    await until(() => events.length > 0, 'the upsert', 2000);
    await new Promise((r) => setTimeout(r, 50));
    expect(events).toMatchObject([{ kind: 'upsert', backend: { instanceId: 'i2', players: { online: 1 } } }]);
    expect(lists).toEqual([]);
  });

  it('a group change or a resync (a reconnected change port) reads everything again', async () => {
    const { store, changes, events, lists } = await following(4);
    await store.groups.put({ ...group('g1'), updatedAt: 9 });
    await until(() => lists.length > 0, 'a read', 2000);
    expect(lists).toEqual([undefined]);
    lists.length = 0;
    changes.publish({ kind: 'system' });
    await until(() => lists.length > 0, 'a read', 2000);
    expect(lists).toEqual([undefined]);
    expect(events).toEqual([]);
  });

  it('while the change port is cut off from the other replicas (Redis or LISTEN down), every poll reads everything', async () => {
    const { changes, feed, lists } = await following(2);
    let up = false;
    Object.defineProperty(changes, 'connected', { get: () => up });
    await feed.refresh();
    expect(lists).toEqual([undefined]);
    up = true;
    lists.length = 0;
    await feed.refresh();
    expect(lists).toEqual([]);
  });

  it('a write the change port never heard is found by the full read every 30 s', async () => {
    let now = 1_000_000;
    const { store, feed, events } = await following(2, { now: () => now });
    // Around the notifying store: no change is announced.
    await (Object.getPrototypeOf(store.instances) as Store['instances']).update(
      'i1',
      { maintenance: { enabled: true, message: 'quiet', since: 5 } },
      { now: 5 },
    );
    await feed.refresh();
    expect(events).toEqual([]);
    now += 30_000;
    await feed.refresh();
    expect(events).toMatchObject([{ kind: 'upsert', backend: { instanceId: 'i1', maintenance: true } }]);
  });
});
