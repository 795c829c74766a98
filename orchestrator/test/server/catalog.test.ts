// Template layers (upload checked like the agent checks it, immutable blobs,
// archive download), immutable template versions and group validation.

import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MALICIOUS_ENTRIES, tarGzBuffer } from '../support/malicious-tar.js';
import { AGENT_TOKEN, layerArchive, type Loose, testOrchestrator, type TestOrchestrator } from './support.js';

let t: TestOrchestrator;
beforeAll(async () => {
  t = await testOrchestrator({ env: { ENDERCLOUD_MAX_LAYER_ARCHIVE: '64KiB' } });
});
afterAll(async () => {
  await t?.close();
});

const gz = { 'content-type': 'application/gzip' };
const upload = (id: string, payload: Buffer, token?: string | null) =>
  t.call('PUT', `/api/v1/template-layers/${id}`, { payload, headers: gz, token });

async function leftovers(): Promise<string[]> {
  return readdir(path.join(t.dataDir, 'tmp'));
}

describe('template layers', () => {
  let checksum = '';

  it('stores an upload and answers its canonical checksum', async () => {
    const res = await upload('base', await layerArchive({ 'a.txt': 'A', 'dir/b.txt': 'B' }));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: 'base', checksum: expect.stringMatching(/^[0-9a-f]{64}$/), sizeBytes: expect.any(Number) });
    checksum = res.body.checksum;
    expect(await readdir(path.join(t.dataDir, 'layers', 'base'))).toEqual([`${checksum}.tar.gz`]);
  });

  it('the same tree packed differently is the same (id, checksum): 200, not a new blob', async () => {
    const res = await upload(
      'base',
      await tarGzBuffer([
        { header: { name: 'dir', type: 'directory' } },
        { header: { name: 'dir/b.txt', type: 'file', mode: 0o644, mtime: new Date(0) }, body: 'B' },
        { header: { name: 'a.txt', type: 'file', mode: 0o600 }, body: 'A' },
      ]),
    );
    expect(res.status).toBe(200);
    expect(res.body.checksum).toBe(checksum);
  });

  it('one id can hold several checksums', async () => {
    const res = await upload('base', await layerArchive({ 'a.txt': 'changed' }));
    expect(res.status).toBe(201);
    expect(res.body.checksum).not.toBe(checksum);
    const list = await t.call('GET', '/api/v1/template-layers?id=base');
    expect(list.body.layers).toHaveLength(2);
  });

  it.each(Object.keys(MALICIOUS_ENTRIES))('rejects an archive with %s and leaves nothing behind', async (kind) => {
    const res = await upload('evil', await tarGzBuffer(MALICIOUS_ENTRIES[kind]!));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('INVALID_ARCHIVE');
    expect(await leftovers()).toEqual([]);
    expect((await t.call('GET', '/api/v1/template-layers?id=evil')).body.layers).toEqual([]);
  });

  it('rejects a body that is not gzip, an empty body, and an oversize archive', async () => {
    expect((await upload('junk', Buffer.from('not a tarball'))).body.error.code).toBe('INVALID_ARCHIVE');
    expect((await upload('junk', Buffer.alloc(0))).status).toBeGreaterThanOrEqual(400);
    const big = gzipSync(Buffer.alloc(0)); // valid gzip header, then pad past the limit with random bytes
    const huge = Buffer.concat([big, Buffer.from(Array.from({ length: 70 * 1024 }, () => Math.floor(Math.random() * 256)))]);
    const res = await upload('junk', huge);
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('ARCHIVE_TOO_LARGE');
    expect(await leftovers()).toEqual([]);
    expect(await readdir(path.join(t.dataDir, 'layers'))).toEqual(['base']);
  });

  it('needs layers:write to upload', async () => {
    expect((await upload('base', await layerArchive(), null)).status).toBe(401);
  });

  it('serves the archive to the agent token; 404 LAYER_NOT_FOUND for an unknown pair', async () => {
    const res = await t.o.app.inject({
      method: 'GET',
      url: `/api/v1/template-layers/base/archive?checksum=${checksum}`,
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/gzip');
    expect(res.rawPayload.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    const missing = await t.call('GET', `/api/v1/template-layers/base/archive?checksum=${'0'.repeat(64)}`, { token: AGENT_TOKEN });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('LAYER_NOT_FOUND');
    expect((await t.call('GET', `/api/v1/template-layers/base/archive?checksum=nothex`)).status).toBe(400);
    expect((await t.call('GET', `/api/v1/template-layers/base/archive?checksum=${checksum}`, { token: null })).status).toBe(401);
  });
});

describe('templates', () => {
  let layer = { id: '', checksum: '' };
  beforeAll(async () => {
    const res = await upload('paper-base', await layerArchive({ 'eula.txt': 'eula=true\n' }));
    layer = { id: 'paper-base', checksum: res.body.checksum };
  });
  const body = () => ({
    image: 'itzg/minecraft-server:latest',
    env: { EULA: 'TRUE' },
    variables: [
      { name: 'MOTD', type: 'string', default: 'hello', validation: { maxLength: 60 } },
      { name: 'RCON_PASSWORD', type: 'string', secret: true, required: true },
      { name: 'DIFFICULTY', type: 'enum', validation: { values: ['easy', 'hard'] }, default: 'easy' },
    ],
    resources: { memoryMb: 1024 },
    readiness: { kind: 'minecraft', startupTimeoutMs: 120000 },
    stop: { signal: 'SIGTERM', timeoutMs: 70000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
    dataPaths: ['world'],
    layers: [layer],
  });

  it('creates a version, is idempotent for the same body and 409 IMMUTABLE for a different one', async () => {
    const created = await t.call('PUT', '/api/v1/templates/paper/versions/1.0.0', { body: body() });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'paper',
      version: '1.0.0',
      containerPort: 25565,
      restartPolicy: 'on-failure',
      readiness: { kind: 'minecraft', intervalMs: 2000 },
    });
    expect((await t.call('PUT', '/api/v1/templates/paper/versions/1.0.0', { body: body() })).status).toBe(200);
    const changed = await t.call('PUT', '/api/v1/templates/paper/versions/1.0.0', { body: { ...body(), image: 'other:1' } });
    expect(changed.status).toBe(409);
    expect(changed.body.error.code).toBe('IMMUTABLE');
    expect((await t.call('GET', '/api/v1/templates/paper/versions/1.0.0')).body.image).toBe('itzg/minecraft-server:latest');
    expect((await t.call('GET', '/api/v1/templates?name=paper')).body.templates).toHaveLength(1);
  });

  it('never stores a secret value: a default on a secret variable is refused', async () => {
    const b = body();
    b.variables[1] = { name: 'RCON_PASSWORD', type: 'string', secret: true, default: 'hunter2' } as never;
    const res = await t.call('PUT', '/api/v1/templates/paper/versions/2.0.0', { body: b });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('variables/1/default');
    expect((await t.call('GET', '/api/v1/templates/paper/versions/2.0.0')).status).toBe(404);
  });

  it.each([
    ['a default outside the enum', (b: Loose) => (b.variables[2].default = 'peaceful'), 'variables/2/default'],
    ['a missing layer', (b: Loose) => (b.layers = [{ id: 'nope', checksum: 'a'.repeat(64) }]), 'layers/0'],
    ['a bad readiness kind', (b: Loose) => (b.readiness = { kind: 'ping', startupTimeoutMs: 1000 }), 'readiness.kind'],
    ['an unsafe data path', (b: Loose) => (b.dataPaths = ['../etc']), 'dataPaths/0'],
    ['an rcon variable that is not declared', (b: Loose) => (b.stop.rcon.passwordVariable = 'NOPE'), 'stop/rcon/passwordVariable'],
    ['an unknown field', (b: Loose) => (b.imagee = 'x'), 'imagee'],
    ['too little memory', (b: Loose) => (b.resources.memoryMb = 1), 'resources/memoryMb'],
  ])('refuses %s, naming the field', async (_what, mutate, field) => {
    const b = body();
    mutate(b);
    const res = await t.call('PUT', '/api/v1/templates/bad/versions/1', { body: b });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body.error.message).toContain(field);
  });
});

describe('groups', () => {
  it('validates references and variant ids, then creates and replaces', async () => {
    const tpl = await t.call('PUT', '/api/v1/templates/lobby/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 256 } } });
    expect(tpl.status).toBe(201);
    const group = { kind: 'ephemeral', variants: [{ id: 'default', template: { name: 'lobby', version: '1' }, env: { MODE: 'lobby' } }] };
    const missingTpl = await t.call('PUT', '/api/v1/groups/lobby', {
      body: { ...group, variants: [{ id: 'x', template: { name: 'lobby', version: '9' } }] },
    });
    expect(missingTpl.status).toBe(404);
    expect(missingTpl.body.error.code).toBe('TEMPLATE_NOT_FOUND');
    const dup = await t.call('PUT', '/api/v1/groups/lobby', { body: { ...group, variants: [group.variants[0], group.variants[0]] } });
    expect(dup.status).toBe(400);
    expect(dup.body.error.message).toContain('variants/1/id');
    const badKind = await t.call('PUT', '/api/v1/groups/lobby', { body: { ...group, kind: 'forever' } });
    expect(badKind.status).toBe(400);
    const created = await t.call('PUT', '/api/v1/groups/lobby', { body: group });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: 'lobby', kind: 'ephemeral', placement: 'packed', created: true });
    const same = await t.call('PUT', '/api/v1/groups/lobby', { body: group });
    expect(same.body).toMatchObject({ created: false });
    const replaced = await t.call('PUT', '/api/v1/groups/lobby', {
      body: { ...group, placement: 'distributed', caps: { maxInstances: 3 } },
    });
    expect(replaced.body).toMatchObject({ placement: 'distributed', caps: { maxInstances: 3 }, changed: true });
    expect((await t.call('GET', '/api/v1/groups')).body.groups.map((g: { id: string }) => g.id)).toContain('lobby');
    expect((await t.call('GET', '/api/v1/groups/nope')).body.error.code).toBe('GROUP_NOT_FOUND');
  });
});
