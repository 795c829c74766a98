// The registry side of the router contract: the routing view (lifecycle state +
// host status), the router scope, the SSE stream read by a real client (+1
// revisions, keepalive, ends on shutdown), the router's own RegistryClient
// following it, and player counts from router session reports.

import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRegistrySnapshot } from '../../src/protocol/registry-contract.js';
import { RegistryClient } from '../../src/router/registry-client.js';
import { RegistryFeed } from '../../src/server/registry/registry-feed.js';
import { registryRoutes } from '../../src/server/registry/registry-routes.js';
import { openStream, seed, sessionEvent, tokenWith } from './registry-support.js';
import { silentLogger, testOrchestrator, until, type Loose, type TestOrchestrator } from './support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function orchestrator(): Promise<TestOrchestrator> {
  const t = await testOrchestrator();
  cleanups.push(() => t.close());
  return t;
}

async function listening(t: TestOrchestrator): Promise<string> {
  await t.o.app.listen({ host: '127.0.0.1', port: 0 });
  const address = t.o.app.server.address() as { port: number };
  return `http://127.0.0.1:${address.port}`;
}

const byId = (body: Loose): Record<string, Loose> => Object.fromEntries(body.backends.map((b: Loose) => [b.instanceId, b]));

describe('registry view', () => {
  it('maps lifecycle state and host status to Running/Starting/Paused/Stopped/Stale and hides drafts', async () => {
    const t = await orchestrator();
    const s = await seed(t);
    await s.add('run', 'online');
    await s.add('boot', 'starting');
    await s.add('zzz', 'paused');
    await s.add('off', 'stopped');
    await s.add('sick', 'degraded');
    await s.add('new', 'draft');
    const res = await t.call('GET', '/api/v1/registry');
    expect(res.status).toBe(200);
    const snapshot = parseRegistrySnapshot(res.body); // the router's own validator accepts it
    const b = byId(snapshot);
    expect(Object.keys(b).sort()).toEqual(['boot', 'off', 'run', 'sick', 'zzz']);
    expect([b.run.status, b.boot.status, b.zzz.status, b.off.status, b.sick.status]).toEqual([
      'Running',
      'Starting',
      'Paused',
      'Stopped',
      'Stale',
    ]);
    expect(b.run.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(b.off.address).toBeNull();
    expect(b.run.acceptsTransfers).toBe(true);

    // A host going OFFLINE makes every instance on it Stale — a Paused one too, never the reverse.
    await t.o.store.hosts.setStatus(s.hostId, 'OFFLINE', { now: t.clock.now() });
    const after = byId((await t.call('GET', '/api/v1/registry')).body);
    expect(Object.values(after).map((x: Loose) => x.status)).toEqual(['Stale', 'Stale', 'Stale', 'Stale', 'Stale']);
  });

  it('requires the router scope: a router token reads the registry but not instances; no token is 401', async () => {
    const t = await orchestrator();
    const router = await tokenWith(t, 'edge', ['router']);
    const reader = await tokenWith(t, 'ro', ['read']);
    expect((await t.call('GET', '/api/v1/registry', { token: router })).status).toBe(200);
    expect((await t.call('GET', '/api/v1/instances', { token: router })).status).toBe(403);
    expect((await t.call('GET', '/api/v1/registry', { token: null })).status).toBe(401);
    // Read-only tools may look at the registry, but only the router claims transfers and reports sessions.
    expect((await t.call('GET', '/api/v1/registry', { token: reader })).status).toBe(200);
    const claim = await t.call('POST', '/api/v1/transfers/claim', { token: reader, body: { player: 'Alice' } });
    expect(claim.status).toBe(403);
    expect(claim.body.error.code).toBe('FORBIDDEN');
    expect((await t.call('POST', '/api/v1/router/sessions', { token: reader, body: { routerId: 'r', events: [] } })).status).toBe(403);
  });
});

describe('registry stream (real SSE client)', () => {
  it('sends the snapshot, then upserts and removes that raise the revision by exactly 1', async () => {
    const t = await orchestrator();
    const s = await seed(t);
    await s.add('a', 'online');
    const url = await listening(t);
    const token = await tokenWith(t, 'edge', ['router']);
    const stream = await openStream(`${url}/api/v1/registry/stream`, token);
    cleanups.push(() => stream.close());
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('x-accel-buffering')).toBe('no');
    const [snap] = await stream.events(1);
    expect(snap!.event).toBe('snapshot');
    const r0 = snap!.json.revision as number;
    expect(snap!.json.backends.map((b: Loose) => b.status)).toEqual(['Running']);

    const store = t.o.store;
    await store.instances.transition('a', 'pausing', { now: t.clock.now(), reason: 'test' });
    const paused = await stream.events(2);
    expect(paused[1]).toMatchObject({ event: 'upsert', json: { revision: r0 + 1, backend: { instanceId: 'a', status: 'Paused' } } });
    // pausing → paused is no change for the router: no event.
    await store.instances.transition('a', 'paused', { now: t.clock.now(), reason: 'test' });
    await s.add('b', 'stopped');
    await store.instances.delete('a');
    const events = await stream.events(4);
    const changes = events.slice(1);
    expect(changes.map((e) => [e.event, e.json.backend?.instanceId ?? e.json.instanceId])).toEqual([
      ['upsert', 'a'],
      ['upsert', 'b'],
      ['remove', 'a'],
    ]);
    changes.forEach((e, k) => expect(e.json.revision).toBe(r0 + k + 1));
    // The snapshot endpoint agrees with the stream.
    expect((await t.call('GET', '/api/v1/registry')).body.revision).toBe(r0 + changes.length);
  });

  it('the router RegistryClient follows the stream; stopping the orchestrator ends the stream and close() does not hang', async () => {
    const t = await testOrchestrator();
    let closed = false;
    cleanups.push(async () => {
      if (!closed) await t.close();
    });
    const s = await seed(t);
    await s.add('lobby-1', 'online');
    const url = await listening(t);
    const client = new RegistryClient({
      baseUrl: url,
      token: await tokenWith(t, 'edge', ['router']),
      logger: silentLogger,
      backoff: { initialMs: 50, maxMs: 100 },
    });
    client.start();
    cleanups.push(() => client.stop());
    await until(() => client.connected && client.get('lobby-1')?.status === 'Running', 'client synced');
    await t.o.store.instances.update(
      'lobby-1',
      { maintenance: { enabled: true, message: 'x', since: t.clock.now() } },
      { now: t.clock.now() },
    );
    await until(() => client.get('lobby-1')?.maintenance === true, 'maintenance upsert reached the router', 3000);

    const started = Date.now();
    await t.close();
    closed = true;
    expect(Date.now() - started).toBeLessThan(3000);
    await until(() => !client.connected, 'client noticed the end', 3000);
    expect(client.get('lobby-1')?.status).toBe('Running'); // the last snapshot keeps serving
  });

  it('sends a keepalive comment on the configured interval', async () => {
    const t = await orchestrator();
    const feed = new RegistryFeed({ store: t.o.store, clock: t.clock, logger: silentLogger, pollIntervalMs: 50 });
    const app = Fastify({ forceCloseConnections: true });
    await registryRoutes(app, { feed, logger: silentLogger, keepaliveMs: 40 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    cleanups.push(async () => {
      await app.close();
      feed.close();
    });
    const stream = await openStream(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/registry/stream`, undefined);
    cleanups.push(() => stream.close());
    await stream.events(1);
    await until(() => stream.text().includes(': keepalive\n\n'), 'a keepalive', 2000);
    expect(feed.listenerCount).toBe(1);
    stream.close();
    await until(() => feed.listenerCount === 0, 'the listener is dropped when the client goes', 2000);
  });
});

describe('router session reports', () => {
  it('counts players per instance, is idempotent on retried batches, and a reset closes the router’s stale sessions', async () => {
    const t = await orchestrator();
    const s = await seed(t);
    await s.add('lobby-1', 'online', { players: { online: 0, max: 2, at: t.clock.now() } });
    const token = await tokenWith(t, 'edge', ['router']);
    const batch = {
      routerId: 'edge-1',
      reset: true,
      events: [
        sessionEvent('login', 's1', 'Alice', 'lobby-1'),
        sessionEvent('login', 's2', 'Bob', 'lobby-1'),
        sessionEvent('denied', 's3', 'Eve', null, { reason: 'rate_limited' }),
      ],
    };
    expect((await t.call('POST', '/api/v1/router/sessions', { token, body: batch })).status).toBe(204);
    expect((await t.call('POST', '/api/v1/router/sessions', { token, body: batch })).status).toBe(204); // retried
    let players = (await t.call('GET', '/api/v1/instances/lobby-1/players')).body;
    expect(players.routerReported).toBe(2);
    expect(players.players.map((p: Loose) => p.name).sort()).toEqual(['Alice', 'Bob']);
    let b = byId((await t.call('GET', '/api/v1/registry')).body)['lobby-1'];
    expect(b.players).toEqual({ online: 2, max: 2 });
    expect(b.full).toBe(true);

    const bye = { routerId: 'edge-1', events: [sessionEvent('disconnect', 's1', 'Alice', 'lobby-1', { reason: '12s' })] };
    expect((await t.call('POST', '/api/v1/router/sessions', { token, body: bye })).status).toBe(204);
    expect((await t.call('POST', '/api/v1/router/sessions', { token, body: bye })).status).toBe(204);
    expect((await t.call('GET', '/api/v1/instances/lobby-1/players')).body.routerReported).toBe(1);

    // The router restarted: its first batch resets, so Bob's session (lost with it) is closed.
    expect((await t.call('POST', '/api/v1/router/sessions', { token, body: { routerId: 'edge-1', reset: true, events: [] } })).status).toBe(
      204,
    );
    players = (await t.call('GET', '/api/v1/instances/lobby-1/players')).body;
    expect(players.routerReported).toBe(0);
    b = byId((await t.call('GET', '/api/v1/registry')).body)['lobby-1'];
    expect(b.players).toEqual({ online: 0, max: 2 });
    expect(b.full).toBe(false);

    // The probe sees players no router reported (someone connected directly): the larger count wins.
    await t.o.store.instances.update('lobby-1', { players: { online: 3, max: 5, at: t.clock.now() } }, { now: t.clock.now() });
    players = (await t.call('GET', '/api/v1/instances/lobby-1/players')).body;
    expect(players).toMatchObject({ online: 3, routerReported: 0, probe: { online: 3, max: 5 } });
    expect(byId((await t.call('GET', '/api/v1/registry')).body)['lobby-1'].players).toEqual({ online: 3, max: 5 });
  });

  it('refuses a malformed batch with a 400 naming the field and writes nothing', async () => {
    const t = await orchestrator();
    const token = await tokenWith(t, 'edge', ['router']);
    const res = await t.call('POST', '/api/v1/router/sessions', {
      token,
      body: {
        routerId: 'edge-1',
        events: [sessionEvent('login', 'ok', 'Alice', null), { ...sessionEvent('login', 'x', 'Bob', null), at: 'yesterday' }],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(res.body.error.message).toContain('body.events[1].at');
    expect(await t.o.store.playerSessions.listActive({ routerId: 'edge-1' })).toEqual([]);
  });
});
