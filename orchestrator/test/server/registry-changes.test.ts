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
import type { Store } from '../../src/store/store.js';
import { group, heartbeat, instance, templateSpec, templateVersion } from '../store/fixtures.js';
import { silentLogger, testOrchestrator, until } from './support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function observed(): Promise<{ store: Store; changes: InProcessChangePort; seen: Change[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'ec-changes-'));
  const raw = await openStore(undefined, dir);
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
    expect(seen).toEqual([{ kind: 'instance', id: 'i1' }, { kind: 'instance', id: 'i1' }]);
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
    expect(seen).toEqual([{ kind: 'instance', id: 'i1' }, { kind: 'instance', id: 'i1' }]);

    seen.length = 0;
    await expect(store.transaction(async (tx) => {
      await tx.instances.transition('i1', 'stopped', { now: 3, reason: 'rolled back' });
      throw new Error('abort');
    })).rejects.toThrow('abort');
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
    expect(seen).toEqual([{ kind: 'host', id: 'h2' }, { kind: 'host', id: 'h1' }, { kind: 'system', id: 'maintenance' }]);
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
    await t.o.ctx.store.system.put('maintenance', { enabled: false }, 1);
    expect(seen).toEqual([{ kind: 'system', id: 'maintenance' }]);
  });
});
