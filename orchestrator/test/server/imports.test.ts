// Imports of existing worlds: upload + inspection (confidence), bad archives
// refused with the safe-tar code and nothing kept, create with an unknown upload
// 404, and create with an import: the agent creates without starting, receives
// the stored archive BEFORE the first start, and history records the import.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { MALICIOUS_ENTRIES, tarGzBuffer, type TarEntrySpec } from '../support/malicious-tar.js';
import { AGENT_TOKEN, heartbeatBody, testOrchestrator, until, type TestOrchestrator } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const gz = { 'content-type': 'application/gzip' };
const file = (name: string, body = 'x'): TarEntrySpec => ({ header: { name, type: 'file', mode: 0o644 }, body });

interface Call {
  method: string;
  path: string;
  contentType: string;
  bytes: Buffer;
}

/** A fake agent that keeps raw bodies (the shared one parses JSON only). */
async function fakeAgent(): Promise<{ url: string; calls: Call[] }> {
  const calls: Call[] = [];
  let state = 'absent';
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const p = (req.url ?? '').replace(/^\/api\/v1/, '');
      const bytes = Buffer.concat(chunks);
      if (!(req.method === 'GET' && p === '/instances'))
        calls.push({ method: req.method ?? '', path: p, contentType: String(req.headers['content-type'] ?? ''), bytes });
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const endpoint = () => ({
        instanceId: 'x',
        containerId: 'c1',
        containerName: 'endercloud-v-x',
        hostPort: 31000,
        endpoint: '127.0.0.1:31000',
        state,
      });
      if (req.method === 'GET' && p === '/instances') return send(200, { instances: [] });
      if (req.method === 'PUT' && /^\/instances\/[^/]+$/.test(p)) {
        state = JSON.parse(bytes.toString('utf8')).start === false ? 'created' : 'running';
        return send(200, endpoint());
      }
      if (req.method === 'PUT' && /\/data\?path=/.test(p)) {
        if (state !== 'created') return send(409, { error: { code: 'INSTANCE_BUSY', message: 'running' } });
        return send(200, { path: '.', entries: 3, sizeBytes: 10 });
      }
      if (req.method === 'POST' && /\/start$/.test(p)) {
        state = 'running';
        return send(200, endpoint());
      }
      return send(404, { error: { code: 'NOT_FOUND', message: `no route ${p}` } });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls };
}

async function orchestrator(): Promise<TestOrchestrator> {
  const t = await testOrchestrator();
  cleanups.push(() => t.close());
  return t;
}

async function setup(t: TestOrchestrator, agentUrl: string): Promise<void> {
  expect(
    (await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 256 } } })).status,
  ).toBe(201);
  expect(
    (
      await t.call('PUT', '/api/v1/groups/g', {
        body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
      })
    ).status,
  ).toBe(201);
  const hb = await t.call('POST', '/api/v1/agents/host-a/heartbeat', {
    body: heartbeatBody(agentUrl, { resources: { cpuCount: 2, memoryTotalBytes: 4096 * 1024 * 1024 } }),
    token: AGENT_TOKEN,
  });
  expect(hb.status).toBe(200);
  await t.o.ctx.hosts.whenIdle();
}

const world = () =>
  tarGzBuffer([file('server.properties', 'level-name=world\n'), file('world/level.dat', 'LEVEL'), file('world/region/r.0.0.mca', 'R')]);
const importsDir = (t: TestOrchestrator) => path.join(t.dataDir, 'imports');
const kept = (t: TestOrchestrator) => readdirSync(importsDir(t)).filter((n) => n !== '.tmp');

describe('PUT /api/v1/imports', () => {
  it('keeps a world with its inspection: level file + region = high confidence', async () => {
    const t = await orchestrator();
    const res = await t.call('PUT', '/api/v1/imports', { payload: await world(), headers: gz });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      uploadId: expect.stringMatching(/^imp-[0-9a-f]+$/),
      entries: 5,
      sizeBytes: expect.any(Number),
      detected: { world: true, levelFile: 'world/level.dat', serverProperties: true },
      confidence: 'high',
    });
    expect(res.body.notes.join(' ')).toContain('level "world"');
    expect(kept(t).sort()).toEqual([`${res.body.uploadId}.json`, `${res.body.uploadId}.tar.gz`]);
    expect((await t.call('GET', `/api/v1/imports/${res.body.uploadId}`)).body).toEqual(res.body);
    // A bare world folder at the root without region data: medium; unrelated files: low.
    const bare = await t.call('PUT', '/api/v1/imports', { payload: await tarGzBuffer([file('level.dat')]), headers: gz });
    expect(bare.body).toMatchObject({ detected: { world: true, levelFile: 'level.dat', serverProperties: false }, confidence: 'medium' });
    const junk = await t.call('PUT', '/api/v1/imports', { payload: await tarGzBuffer([file('notes.txt')]), headers: gz });
    expect(junk.body).toMatchObject({ detected: { world: false, levelFile: null }, confidence: 'low' });
  });

  it('refuses garbage and malicious archives with the safe-tar code, keeping nothing', async () => {
    const t = await orchestrator();
    const garbage = await t.call('PUT', '/api/v1/imports', { payload: Buffer.from('definitely not gzip'), headers: gz });
    expect(garbage.status).toBe(422);
    expect(garbage.body.error.code).toBe('INVALID_ARCHIVE');
    for (const name of ['symlink', "'../' escape", 'absolute path', 'character device']) {
      const res = await t.call('PUT', '/api/v1/imports', { payload: await tarGzBuffer(MALICIOUS_ENTRIES[name]!), headers: gz });
      expect(res.status, name).toBe(422);
      expect(res.body.error.code).toBe('INVALID_ARCHIVE');
    }
    expect(kept(t)).toEqual([]);
    expect(readdirSync(path.join(importsDir(t), '.tmp'))).toEqual([]);
    expect((await t.call('PUT', '/api/v1/imports', { payload: await world(), headers: gz, token: null })).status).toBe(401);
  });
});

describe('POST /api/v1/instances with import', () => {
  it('answers 404 for an unknown upload and 400 for an escaping destination, creating nothing', async () => {
    const t = await orchestrator();
    const a = await fakeAgent();
    await setup(t, a.url);
    const unknown = await t.call('POST', '/api/v1/instances', {
      body: { groupId: 'g', variantId: 'v', import: { uploadId: 'imp-0123456789ab' } },
    });
    expect(unknown.status).toBe(404);
    const up = await t.call('PUT', '/api/v1/imports', { payload: await world(), headers: gz });
    const bad = await t.call('POST', '/api/v1/instances', {
      body: { groupId: 'g', variantId: 'v', import: { uploadId: up.body.uploadId, destination: '../etc' } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('UNSAFE_PATH');
    expect(await t.o.store.instances.list({})).toEqual([]);
  });

  it('creates without starting, sends the stored archive, then starts; history records the import', async () => {
    const t = await orchestrator();
    const a = await fakeAgent();
    await setup(t, a.url);
    const archive = await world();
    const up = await t.call('PUT', '/api/v1/imports', { payload: archive, headers: gz });
    const res = await t.call('POST', '/api/v1/instances', {
      body: { groupId: 'g', variantId: 'v', import: { uploadId: up.body.uploadId, destination: 'worlds' } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    t.o.worker.start();
    await until(
      async () => ((await t.call('GET', `/api/v1/commands/${res.body.commandId}`)).body.status === 'succeeded' ? true : undefined),
      'create command',
    );
    const calls = a.calls.filter((c) => c.path !== '/leader'); // the engine announces its epoch to each host first
    expect(calls.map((c) => `${c.method} ${c.path.replace(/\/instances\/[^/?]+/, '/instances/:id')}`)).toEqual([
      'PUT /instances/:id',
      'PUT /instances/:id/data?path=worlds',
      'POST /instances/:id/start',
    ]);
    expect(JSON.parse(calls[0]!.bytes.toString('utf8')).start).toBe(false);
    expect(calls[1]!.contentType).toBe('application/gzip');
    expect(gunzipSync(calls[1]!.bytes).equals(gunzipSync(archive))).toBe(true);
    const history = await t.o.store.history.list(res.body.id);
    expect(history.map((h) => h.reason).join('\n')).toContain(`imported upload ${up.body.uploadId} into worlds`);
    expect((await t.call('GET', `/api/v1/instances/${res.body.id}`)).body.state).toBe('starting');
  });
});
