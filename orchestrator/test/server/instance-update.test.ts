// Image updates through the HTTP layer over a real store and an in-test agent
// (the shared fake agent behind a small front that answers image inspections
// and makes chosen images never ready or impossible to replace): the plan, the
// confirmation, success, rollback when the new image never becomes ready, and
// a failed rollback leaving the instance stopped in intervention_required.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_TOKEN,
  heartbeatBody,
  startFakeAgent,
  testOrchestrator,
  type FakeAgent,
  type Loose,
  type TestOrchestrator,
} from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface Front {
  url: string;
  neverReady: Set<string>;
  replaceFails: Set<string>;
  close(): Promise<void>;
}

const IMAGES: Record<string, { id: string; created: string; sizeBytes: number }> = {
  'mc:1': { id: 'sha256:' + '1'.repeat(64), created: '2026-01-01T00:00:00Z', sizeBytes: 100_000_000 },
  'mc:2': { id: 'sha256:' + '2'.repeat(64), created: '2026-02-01T00:00:00Z', sizeBytes: 120_000_000 },
  'mc:bad': { id: 'sha256:' + '3'.repeat(64), created: '2026-03-01T00:00:00Z', sizeBytes: 90_000_000 },
};

/** Answers /images/inspect and adjusts logs/replace per image; forwards everything else. */
async function startFront(a: FakeAgent): Promise<Front> {
  const neverReady = new Set<string>();
  const replaceFails = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const url = new URL(req.url ?? '/', 'http://x');
        const send = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (url.pathname === '/api/v1/images/inspect') {
          const ref = url.searchParams.get('ref') ?? '';
          const img = IMAGES[ref];
          if (!img) return send(404, { error: { code: 'IMAGE_NOT_FOUND', message: `image ${ref} is not present` } });
          return send(200, { ref, ...img, repoDigests: [], user: null, pulled: false });
        }
        const logs = /^\/api\/v1\/instances\/([^/]+)\/logs/.exec(url.pathname);
        if (logs && neverReady.has(a.inventory.find((i) => i.instanceId === decodeURIComponent(logs[1]!))?.image ?? '')) {
          res.writeHead(200, { 'content-type': 'text/plain' });
          return res.end('booting forever\n');
        }
        if (req.method === 'POST' && url.pathname.endsWith('/replace') && replaceFails.has(JSON.parse(raw).image)) {
          return send(502, { error: { code: 'DOCKER_ERROR', message: 'injected replace failure' } });
        }
        const forwarded = await fetch(`${a.url}${req.url}`, {
          method: req.method ?? 'GET',
          headers: {
            ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
            ...(req.headers['x-leader-epoch'] ? { 'x-leader-epoch': req.headers['x-leader-epoch'] as string } : {}),
            ...(raw ? { 'content-type': 'application/json' } : {}),
          },
          ...(raw ? { body: raw } : {}),
        });
        res.writeHead(forwarded.status, { 'content-type': forwarded.headers.get('content-type') ?? 'application/json' });
        res.end(await forwarded.text());
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    neverReady,
    replaceFails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface Setup {
  t: TestOrchestrator;
  a: FakeAgent;
  f: Front;
  id: string;
  work(): Promise<void>;
  get(): Promise<Loose>;
  history(): Promise<Loose[]>;
}

async function setup(): Promise<Setup> {
  const t = await testOrchestrator({ env: { ENDERCLOUD_COMMAND_MAX_ATTEMPTS: '1' } });
  cleanups.push(() => t.close());
  const a = await startFakeAgent();
  cleanups.push(() => a.close());
  const f = await startFront(a);
  cleanups.push(() => f.close());
  expect((await t.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(f.url), token: AGENT_TOKEN })).status).toBe(200);
  await t.o.ctx.hosts.whenIdle();
  expect(
    (
      await t.call('PUT', '/api/v1/templates/mc/versions/1', {
        body: {
          image: 'mc:1',
          resources: { memoryMb: 256 },
          readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 300, intervalMs: 100 },
          stop: { signal: 'SIGTERM', timeoutMs: 3000 },
          dataPaths: ['world'],
        },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await t.call('PUT', '/api/v1/groups/g', {
        body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] },
      })
    ).status,
  ).toBe(201);
  const created = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', name: 'survival' } });
  expect(created.status).toBe(202);
  const id = created.body.id as string;
  const work = async () => {
    for (let i = 0; i < 20; i++) {
      const claimed = await t.o.worker.tick();
      await t.o.worker.whenIdle();
      if (claimed.length === 0) return;
    }
  };
  await work();
  await t.o.supervisor.probeOnce(id);
  const get = async () => (await t.call('GET', `/api/v1/instances/${id}`)).body as Loose;
  expect((await get()).state).toBe('online');
  return { t, a, f, id, work, get, history: async () => (await t.call('GET', `/api/v1/instances/${id}/history`)).body.history as Loose[] };
}

const replaces = (s: Setup) =>
  s.a.calls.filter((c) => c.method === 'POST' && c.path.endsWith('/replace')).map((c) => (c.body as Loose).image);

describe('instance update', () => {
  it('plans (current vs candidate, checks, changes, warnings) and refuses an update without confirm', async () => {
    const s = await setup();
    const plan = await s.t.call('GET', `/api/v1/instances/${s.id}/update-plan?image=mc:2`);
    expect(plan.status).toBe(200);
    expect(plan.body).toMatchObject({
      current: { ref: 'mc:1', id: IMAGES['mc:1']!.id },
      candidate: { ref: 'mc:2', id: IMAGES['mc:2']!.id },
      sameImage: false,
      compatible: true,
      automaticUpdates: 'off',
      diskFreeBytes: 10 * 1024 ** 3,
    });
    expect(plan.body.changes[0]).toBe('image mc:1 → mc:2');
    expect(plan.body.checks.map((c: Loose) => c.name)).toEqual(['container user', 'template and readiness', 'disk space']);
    expect((await s.t.call('GET', `/api/v1/instances/${s.id}/update-plan?image=mc:missing`)).body.error.code).toBe('IMAGE_NOT_FOUND');

    const refused = await s.t.call('POST', `/api/v1/instances/${s.id}/update`, { body: { image: 'mc:2' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('CONFIRMATION_REQUIRED');
    expect(await s.get()).toMatchObject({ state: 'online', activeAction: null });
    expect(replaces(s)).toEqual([]);
  });

  it('updates: stop, replace with the new image, ready → online on the new image with a new revision', async () => {
    const s = await setup();
    const res = await s.t.call('POST', `/api/v1/instances/${s.id}/update`, { body: { image: 'mc:2', confirm: true } });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ commandId: expect.stringMatching(/^cmd-/), state: 'update' });
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/stop`)).body.error.code).toBe('INSTANCE_BUSY');
    await s.work();
    expect(await s.get()).toMatchObject({ state: 'online', activeAction: null, desiredState: 'running' });
    expect(replaces(s)).toEqual(['mc:2']);
    const revisions = (await s.t.call('GET', `/api/v1/instances/${s.id}/revisions`)).body.revisions as Loose[];
    expect(revisions[0]).toMatchObject({ revision: 2 });
    expect(JSON.stringify(revisions[0])).toContain('mc:2');
    const reasons = (await s.history()).map((h) => h.reason as string);
    expect(reasons.some((r) => r.startsWith('stopped for the update'))).toBe(true);
    expect(reasons[0]).toBe('ready on mc:2');
  });

  it('abandons the update and starts the previous image again when the requested safety backup fails', async () => {
    const s = await setup();
    // The agent refuses the backup: it fails after the graceful stop.
    s.a.failNext('POST /instances/backups', 1, 404, 'NOT_FOUND');
    expect(
      (await s.t.call('POST', `/api/v1/instances/${s.id}/update`, { body: { image: 'mc:2', confirm: true, backup: true } })).status,
    ).toBe(202);
    await s.work();
    expect(await s.get()).toMatchObject({ state: 'online', activeAction: null });
    expect(replaces(s)).toEqual(['mc:1']);
    const reasons = (await s.history()).map((h) => String(h.reason));
    expect(reasons.some((r) => r.startsWith('safety backup failed') && r.endsWith('the update is abandoned'))).toBe(true);
  });

  it('rolls back to the previous image when the new one never becomes ready', async () => {
    const s = await setup();
    s.f.neverReady.add('mc:bad');
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/update`, { body: { image: 'mc:bad', confirm: true } })).status).toBe(202);
    await s.work();
    expect(await s.get()).toMatchObject({ state: 'online', activeAction: null });
    expect(replaces(s)).toEqual(['mc:bad', 'mc:1']);
    expect(s.a.inventory[0]!.image).toBe('mc:1');
    const history = await s.history();
    expect(history.some((h) => String(h.reason).includes('update to mc:bad failed: not ready within the startup timeout'))).toBe(true);
    expect(history.find((h) => h.to === 'starting')?.reason).toContain('rolled back to mc:1');
    // No new revision: the applied configuration is still the previous one.
    expect((await s.t.call('GET', `/api/v1/instances/${s.id}/revisions`)).body.revisions[0]).toMatchObject({ revision: 1 });
    const audit = (await s.t.call('GET', '/api/v1/audit')).body;
    expect(JSON.stringify(audit)).toContain('instance.update.failed');
  });

  it('leaves the instance stopped in intervention_required when the rollback fails too, and audits it', async () => {
    const s = await setup();
    s.f.neverReady.add('mc:bad');
    s.f.replaceFails.add('mc:1');
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/update`, { body: { image: 'mc:bad', confirm: true } })).status).toBe(202);
    await s.work();
    const view = await s.get();
    expect(view).toMatchObject({ state: 'intervention_required', activeAction: null, desiredState: 'stopped' });
    expect(view.stateReason).toContain('the rollback to mc:1 failed too');
    expect(s.a.inventory[0]!.state).toBe('exited');
    const audit = JSON.stringify((await s.t.call('GET', '/api/v1/audit')).body);
    expect(audit).toContain('instance.update.rollback-failed');
  });
});
