// Backups through the HTTP layer (inject) over a real store and an in-test
// agent: the backup action's state flow (online save over RCON: save-off,
// save-all flush, archive, save-on; stop first otherwise), a stop with a backup
// and its abort_stop failure policy, restore confirmation and audit, and the
// `backups` deletion scope going through the agent.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SYSTEM_ACTOR } from '../../src/server/services/lifecycle-service.js';
import { stopBackupPayload } from '../../src/lifecycle/backup.js';
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

const SECRET = 'rcon-secret-value-0123456789';

interface BackupAgentCall {
  method: string;
  path: string;
  body: Loose | undefined;
}

/** Serves the agent's backup and RCON routes itself; passes everything else to the fake agent. */
async function startBackupAgent(inner: FakeAgent) {
  const calls: BackupAgentCall[] = [];
  const stored: Loose[] = [];
  let failBackups = 0;
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const body = raw ? (JSON.parse(raw) as Loose) : undefined;
        const p = (req.url ?? '').replace(/^\/api\/v1/, '');
        const own = /^\/instances\/[^/]+\/(backups|restore|rcon)$/.exec(p);
        const stopLike = /^\/instances\/[^/]+\/(stop|start)$/.test(p) || (req.method === 'DELETE' && /^\/instances\/[^/]+$/.test(p));
        if (own || stopLike) calls.push({ method: req.method ?? '', path: p, body });
        if (!own) {
          const epoch = req.headers['x-leader-epoch'] as string | undefined;
          const r = await fetch(`${inner.url}${req.url}`, {
            method: req.method ?? 'GET',
            headers: { 'content-type': 'application/json', ...(epoch ? { 'x-leader-epoch': epoch } : {}) },
            ...(raw ? { body: raw } : {}),
          });
          res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
          return res.end(await r.text());
        }
        if (own[1] === 'rcon') return send(res, 200, { response: `ok ${String(body?.command)}` });
        if (own[1] === 'restore') return send(res, 200, { restored: body?.backupId, safetyBackupId: 'pre-restore-20260101T000000Z' });
        if (req.method === 'POST') {
          if (failBackups > 0) {
            failBackups -= 1;
            return send(res, 422, { error: { code: 'INVALID_ARCHIVE', message: 'disk says no' } });
          }
          const info = {
            backupId: body?.backupId,
            sizeBytes: 123,
            sha256: 'a'.repeat(64),
            createdAt: '2026-01-01T00:00:00.000Z',
            ...(body?.paths ? { paths: body.paths } : {}),
          };
          stored.push(info);
          return send(res, 200, info);
        }
        if (req.method === 'GET') return send(res, 200, { backups: stored });
        const deleted = stored.length;
        stored.length = 0;
        return send(res, 200, { deleted });
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    failNextBackups(n: number) {
      failBackups = n;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function setup(template: Record<string, unknown> = {}) {
  const t: TestOrchestrator = await testOrchestrator({
    env: { ENDERCLOUD_COMMAND_MAX_ATTEMPTS: '3' },
    deps: { generateSecret: () => SECRET },
  });
  cleanups.push(() => t.close());
  const inner = await startFakeAgent();
  cleanups.push(() => inner.close());
  const a = await startBackupAgent(inner);
  cleanups.push(() => a.close());
  expect((await t.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN })).status).toBe(200);
  await t.o.ctx.hosts.whenIdle();
  const tpl = await t.call('PUT', '/api/v1/templates/mc/versions/1', {
    body: {
      image: 'mc:1',
      resources: { memoryMb: 256 },
      restartPolicy: 'on-failure',
      variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true }],
      readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 5000, intervalMs: 100 },
      stop: { signal: 'SIGTERM', timeoutMs: 3000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
      dataPaths: ['world'],
      ...template,
    },
  });
  expect(tpl.status, JSON.stringify(tpl.body)).toBeLessThan(300);
  expect(
    (
      await t.call('PUT', '/api/v1/groups/g', {
        body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] },
      })
    ).status,
  ).toBe(201);
  const created = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', name: 'survival' } });
  const id = created.body.id as string;
  const work = async () => {
    for (let i = 0; i < 20; i++) {
      const claimed = await t.o.worker.tick();
      await t.o.worker.whenIdle();
      if (claimed.length === 0) return;
    }
  };
  await work();
  const get = async () => (await t.call('GET', `/api/v1/instances/${id}`)).body;
  await t.o.supervisor.probeOnce(id);
  expect((await get()).state).toBe('online');
  a.calls.length = 0;
  const history = async () => (await t.call('GET', `/api/v1/instances/${id}/history`)).body.history as Loose[];
  return { t, a, id, work, get, history };
}

const ONLINE_SAVE = { backup: { onlineSave: true, paths: ['world', 'world'] } };

describe('backup action', () => {
  it('with online save: save-off, save-all flush, archive while running, save-on, then back online', async () => {
    const s = await setup(ONLINE_SAVE);
    const res = await s.t.call('POST', `/api/v1/instances/${s.id}/backup`, { body: { reason: 'before the event' } });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ commandId: expect.stringMatching(/^cmd-/), state: 'backup' });
    await s.work();
    const sequence = s.a.calls.map((c) =>
      c.path.endsWith('/rcon') ? `rcon ${String(c.body?.command)}` : `${c.method} ${c.path.split('/').pop()}`,
    );
    expect(sequence).toEqual(['rcon save-off', 'rcon save-all flush', 'POST backups', 'rcon save-on']);
    const rcon = s.a.calls.find((c) => c.path.endsWith('/rcon'))!;
    expect(rcon.body).toMatchObject({ port: 25575, password: SECRET });
    // Template paths are deduplicated and sent to the agent.
    expect(s.a.calls.find((c) => c.path.endsWith('/backups'))!.body).toMatchObject({ paths: ['world'] });
    expect(await s.get()).toMatchObject({ state: 'online', activeAction: null, desiredState: 'running' });
    const [last] = await s.history();
    expect(last).toMatchObject({
      from: 'backup',
      to: 'online',
      details: { mode: 'online_save', backupId: expect.stringMatching(/^backup-/) },
    });
    expect(String(last!.reason)).toContain('before the event');
    const list = await s.t.call('GET', `/api/v1/instances/${s.id}/backups`);
    expect(list.body.backups).toHaveLength(1);
  });

  it('without online save: stops, archives, and starts the server again', async () => {
    const s = await setup();
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/backup`, { body: { stop: true } })).status).toBe(202);
    await s.work();
    expect(s.a.calls.map((c) => `${c.method} ${c.path.split('/').pop()}`)).toEqual(['POST stop', 'POST backups', 'POST start']);
    expect(await s.get()).toMatchObject({ state: 'starting', activeAction: null, desiredState: 'running' });
  });

  it('without online save a manual backup of a running server is refused (409) until the body says stop: true', async () => {
    const s = await setup();
    for (const path of ['backup', 'backups']) {
      const res = await s.t.call('POST', `/api/v1/instances/${s.id}/${path}`, { body: { reason: 'nightly' } });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('INSTANCE_CONFLICT');
      expect(res.body.error.message).toContain('{"stop": true}');
      expect(res.body.error.message).toContain('online save is unavailable because the template does not enable backup.onlineSave');
    }
    expect(s.a.calls).toEqual([]);
    expect(await s.get()).toMatchObject({ state: 'online', activeAction: null });
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/backups`, { body: { stop: true } })).status).toBe(202);
  });

  it('with online save, or once stopped, no choice is needed', async () => {
    const s = await setup(ONLINE_SAVE);
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/backups`)).status).toBe(202);
  });

  it('a stopped instance is archived and stays stopped', async () => {
    const s = await setup(ONLINE_SAVE);
    await s.t.call('POST', `/api/v1/instances/${s.id}/stop`);
    await s.work();
    s.a.calls.length = 0;
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/backup`)).status).toBe(202);
    await s.work();
    expect(s.a.calls.map((c) => `${c.method} ${c.path.split('/').pop()}`)).toEqual(['POST backups']);
    expect(await s.get()).toMatchObject({ state: 'stopped', activeAction: null });
  });
});

describe('template backup field', () => {
  it('onlineSave needs RCON, paths are validated', async () => {
    const s = await setup();
    const put = (backup: unknown, stop?: unknown) =>
      s.t.call('PUT', '/api/v1/templates/mc2/versions/1', {
        body: { image: 'mc:1', resources: { memoryMb: 256 }, backup, ...(stop ? { stop } : {}) },
      });
    const noRcon = await put({ onlineSave: true });
    expect(noRcon.status).toBe(400);
    expect(noRcon.body.error.message).toContain('backup/onlineSave');
    expect((await put({ paths: ['../etc'] })).status).toBe(400);
    expect((await put({ bogus: 1 })).status).toBe(400);
    expect((await put({ paths: ['world'] })).status).toBeLessThan(300);
  });
});

describe('stop with a backup', () => {
  it('a manual stop with a backup must name the failure policy; an automatic one defaults to abort_stop', () => {
    expect(() => stopBackupPayload({ backup: true })).toThrow(/explicit failurePolicy/);
    expect(stopBackupPayload({ backup: true, automatic: true })).toEqual({ backup: true, automatic: true, failurePolicy: 'abort_stop' });
    expect(stopBackupPayload({ backup: true, failurePolicy: 'stop_without_backup' })).toMatchObject({
      failurePolicy: 'stop_without_backup',
    });
  });

  it('automatic stop: online save, archive, then the stop; a failed backup with abort_stop keeps it running and says why', async () => {
    const s = await setup(ONLINE_SAVE);
    const payload = stopBackupPayload({ backup: true, automatic: true });
    s.a.failNextBackups(1);
    await s.t.o.ctx.lifecycle.request(s.id, 'stop', SYSTEM_ACTOR, { requestId: 'idle-1', payload, deferEnter: true });
    await s.work();
    expect(s.a.calls.some((c) => c.path.endsWith('/stop'))).toBe(false);
    expect(s.a.calls.filter((c) => c.path.endsWith('/rcon')).map((c) => c.body?.command)).toEqual([
      'save-off',
      'save-all flush',
      'save-on',
    ]);
    expect(await s.get()).toMatchObject({ state: 'online', desiredState: 'running', activeAction: null });
    const [last] = await s.history();
    expect(String(last!.reason)).toMatch(/stop aborted: the backup failed .*disk says no.*abort_stop/);

    s.a.calls.length = 0;
    await s.t.o.ctx.lifecycle.request(s.id, 'stop', SYSTEM_ACTOR, { requestId: 'idle-2', payload, deferEnter: true });
    await s.work();
    expect(
      s.a.calls.map((c) => (c.path.endsWith('/rcon') ? `rcon ${String(c.body?.command)}` : `${c.method} ${c.path.split('/').pop()}`)),
    ).toEqual(['rcon save-off', 'rcon save-all flush', 'POST backups', 'rcon save-on', 'POST stop']);
    expect(await s.get()).toMatchObject({ state: 'stopped', desiredState: 'stopped', activeAction: null });
    expect((await s.history()).slice(0, 3).map((h) => h.to)).toEqual(['stopped', 'stopping', 'backup']);
  });

  it('POST /stop with a backup: refused without a failure policy, archived then stopped with one', async () => {
    const s = await setup();
    const refused = await s.t.call('POST', `/api/v1/instances/${s.id}/stop`, { body: { backup: true } });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toMatch(/failurePolicy/);
    expect(s.a.calls.some((c) => c.path.endsWith('/stop') || c.path.endsWith('/backups'))).toBe(false);
    const accepted = await s.t.call('POST', `/api/v1/instances/${s.id}/stop`, { body: { backup: true, failurePolicy: 'abort_stop' } });
    expect(accepted.status).toBe(202);
    await s.work();
    expect(s.a.calls.map((c) => `${c.method} ${c.path.split('/').pop()}`)).toEqual(['POST stop', 'POST backups']);
    expect(await s.get()).toMatchObject({ state: 'stopped', activeAction: null });
  });

  it('stop_without_backup stops anyway and records the failed backup', async () => {
    const s = await setup();
    s.a.failNextBackups(1);
    await s.t.o.ctx.lifecycle.request(s.id, 'stop', SYSTEM_ACTOR, {
      requestId: 'm-1',
      payload: stopBackupPayload({ backup: true, failurePolicy: 'stop_without_backup' }),
      deferEnter: true,
    });
    await s.work();
    expect(s.a.calls.map((c) => `${c.method} ${c.path.split('/').pop()}`)).toEqual(['POST stop', 'POST backups']);
    expect(await s.get()).toMatchObject({ state: 'stopped', activeAction: null });
    expect(String((await s.history())[0]!.reason)).toContain('stays stopped without a backup');
  });
});

describe('restore', () => {
  it('needs a stopped instance and the typed name, is audited, and goes through the agent', async () => {
    const s = await setup();
    const running = await s.t.call('POST', `/api/v1/instances/${s.id}/restore`, { body: { backupId: 'b1', confirm: 'survival' } });
    expect(running.status).toBe(409);
    expect(running.body.error.code).toBe('INVALID_TRANSITION');
    // The planner's refusal (lifecycle/actions.ts), not a second list in the route.
    expect(running.body.error.message).toMatch(/allowed from: stopped, error, intervention_required/);
    await s.t.call('POST', `/api/v1/instances/${s.id}/stop`);
    await s.work();
    s.a.calls.length = 0;
    const unconfirmed = await s.t.call('POST', `/api/v1/instances/${s.id}/restore`, { body: { backupId: 'b1', confirm: 'wrong' } });
    expect(unconfirmed.status).toBe(400);
    expect(unconfirmed.body.error.code).toBe('CONFIRMATION_REQUIRED');
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/restore`, { body: { backupId: '../b1', confirm: 'survival' } })).status).toBe(
      400,
    );
    const ok = await s.t.call('POST', `/api/v1/instances/${s.id}/restore`, { body: { backupId: 'b1', confirm: 'survival' } });
    expect(ok.status).toBe(202);
    expect(ok.body.state).toBe('restore');
    await s.work();
    expect(s.a.calls).toEqual([{ method: 'POST', path: `/instances/${s.id}/restore`, body: { backupId: 'b1' } }]);
    expect(await s.get()).toMatchObject({ state: 'stopped', activeAction: null });
    expect((await s.history())[0]).toMatchObject({
      from: 'restore',
      to: 'stopped',
      details: { backupId: 'b1', safetyBackupId: 'pre-restore-20260101T000000Z' },
    });
    const audit = (await s.t.call('GET', `/api/v1/audit?targetId=${s.id}`)).body.entries as Loose[];
    expect(
      audit
        .filter((e) => e.action === 'instance.restore')
        .map((e) => e.result)
        .sort(),
    ).toEqual(['error', 'error', 'error', 'ok']);
  });
});

describe('deletion scope backups', () => {
  it('deletes the backups through the agent before removing the instance', async () => {
    const s = await setup();
    expect((await s.t.call('DELETE', `/api/v1/instances/${s.id}`, { body: { scopes: ['container', 'backups'] } })).body.error.code).toBe(
      'CONFIRMATION_REQUIRED',
    );
    const del = await s.t.call('DELETE', `/api/v1/instances/${s.id}`, { body: { scopes: ['container', 'backups'], confirm: 'survival' } });
    expect(del.status).toBe(202);
    await s.work();
    const order = s.a.calls.map((c) => `${c.method} ${c.path}`);
    expect(order).toContain(`DELETE /instances/${s.id}/backups`);
    expect(order.indexOf(`DELETE /instances/${s.id}/backups`)).toBeLessThan(order.indexOf(`DELETE /instances/${s.id}`));
    expect((await s.t.call('GET', `/api/v1/instances/${s.id}`)).status).toBe(404);
  });
});
