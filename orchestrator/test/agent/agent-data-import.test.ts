// Agent data import (PUT /instances/:id/data) on the real Docker engine: only into
// a created-not-running container, files land owned by the instance user, a
// non-empty (clashing) destination or a running container is refused with 409,
// and a malicious archive is rejected leaving nothing behind.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestAgent,
  randomPortRange,
  removeNetwork,
  startFakeOrchestrator,
  type FakeOrchestrator,
  type TestAgent,
} from '../support/agent-harness.js';
import { removeContainersByLabel, uniqueId } from '../support/docker.js';
import { busyboxImage, ensureImage, imageTag } from '../support/images.js';

const RUN = uniqueId('agent-import');
const NETWORK = `ec-${RUN}`;
const ID = `${RUN}-i1`;
const RUNNING = `${RUN}-i2`;

let orch: FakeOrchestrator;
let agent: TestAgent;

type Entry = { name: string; content?: string; type?: 'file' | 'directory' | 'symlink'; linkname?: string };

async function archive(entries: Entry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => chunks.push(c as Buffer));
  const done = new Promise<void>((r) => pack.on('end', () => r()));
  for (const e of entries) {
    const type = e.type ?? 'file';
    if (type === 'file') pack.entry({ name: e.name, mode: 0o644 }, e.content ?? '');
    else if (type === 'directory') pack.entry({ name: e.name, type: 'directory', mode: 0o755 });
    else pack.entry({ name: e.name, type: 'symlink', linkname: e.linkname ?? '/etc/passwd' });
  }
  pack.finalize();
  await done;
  return gzipSync(Buffer.concat(chunks));
}

const world = () =>
  archive([
    { name: 'world/level.dat', content: 'LEVEL' },
    { name: 'world/region/r.0.0.mca', content: 'REGION' },
  ]);

const putData = (id: string, body: Buffer, path?: string) =>
  agent.app.inject({
    method: 'PUT',
    url: `/api/v1/instances/${id}/data${path === undefined ? '' : `?path=${encodeURIComponent(path)}`}`,
    headers: { 'content-type': 'application/gzip' },
    payload: body,
  });

const createBody = (start: boolean, layer: { id: string; checksum: string }) => ({
  groupId: 'g',
  variantId: 'v',
  image: imageTag(busyboxImage),
  layers: [layer],
  resources: { memoryMb: 64 },
  user: '1000:1000',
  command: ['sh', '-c', 'sleep 600'],
  start,
});

function leftovers(): string[] {
  return readdirSync(join(agent.runtimeDirectory, 'instances')).filter((n) => n.startsWith('.staging-import-'));
}

beforeAll(async () => {
  await ensureImage(busyboxImage);
  orch = await startFakeOrchestrator();
  const layer = await orch.addLayer('base', { 'server.properties': { content: 'level-name=world\n' } });
  agent = await createTestAgent({
    agentId: RUN,
    orchestratorUrl: orch.url,
    portRange: randomPortRange(10),
    network: NETWORK,
    leaderEpoch: 1,
  });
  for (const [id, start] of [
    [ID, false],
    [RUNNING, true],
  ] as const) {
    const res = await agent.app.inject({ method: 'PUT', url: `/api/v1/instances/${id}`, payload: createBody(start, layer) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().state).toBe(start ? 'running' : 'created');
  }
}, 120_000);

afterAll(async () => {
  await removeContainersByLabel({ 'orchestrator.host': RUN });
  await agent?.close();
  await removeNetwork(NETWORK);
  await orch?.close();
});

describe('agent data import', () => {
  it('create with start=false leaves the container created, and a retry does not start it', async () => {
    const layer = {
      id: 'base',
      checksum: (await orch.addLayer('base', { 'server.properties': { content: 'level-name=world\n' } })).checksum,
    };
    const retry = await agent.app.inject({ method: 'PUT', url: `/api/v1/instances/${ID}`, payload: createBody(false, layer) });
    expect(retry.statusCode, retry.body).toBe(200);
    const inspect = await agent.app.inject({ method: 'GET', url: `/api/v1/instances/${ID}` });
    expect(inspect.json().state).toBe('created');
  });

  it('imports a world into a created container, owned by the instance user', async () => {
    const res = await putData(ID, await world());
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ path: '.', entries: 4 });
    const dir = join(agent.runtimeDirectory, 'instances', ID);
    expect(readFileSync(join(dir, 'world', 'level.dat'), 'utf8')).toBe('LEVEL');
    expect(readFileSync(join(dir, 'server.properties'), 'utf8')).toBe('level-name=world\n'); // layer content kept
    expect(statSync(join(dir, 'world')).uid).toBe(1000);
    expect(statSync(join(dir, 'world', 'region', 'r.0.0.mca')).gid).toBe(1000);
    expect(leftovers()).toEqual([]);
  });

  it('imports into a relative destination, creating it', async () => {
    const res = await putData(ID, await world(), 'imports/old');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().path).toBe('imports/old');
    const dir = join(agent.runtimeDirectory, 'instances', ID, 'imports');
    expect(statSync(dir).uid).toBe(1000);
    expect(existsSync(join(dir, 'old', 'world', 'level.dat'))).toBe(true);
  });

  it('never overwrites: a destination already holding an imported name is refused with 409', async () => {
    const res = await putData(ID, await archive([{ name: 'world/level.dat', content: 'OTHER' }]));
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('INSTANCE_CONFLICT');
    expect(readFileSync(join(agent.runtimeDirectory, 'instances', ID, 'world', 'level.dat'), 'utf8')).toBe('LEVEL');
    expect(leftovers()).toEqual([]);
  });

  it('refuses a running container with 409 INSTANCE_BUSY and an escaping path with 400', async () => {
    const running = await putData(RUNNING, await world());
    expect(running.statusCode).toBe(409);
    expect(running.json().error.code).toBe('INSTANCE_BUSY');
    expect(existsSync(join(agent.runtimeDirectory, 'instances', RUNNING, 'world'))).toBe(false);
    const escaping = await putData(ID, await world(), '../x');
    expect(escaping.statusCode).toBe(400);
    expect(escaping.json().error.code).toBe('UNSAFE_PATH');
    expect((await putData(`${RUN}-missing`, await world())).statusCode).toBe(409);
  });

  it('rejects a malicious archive (symlink, escaping entry, garbage) with 4xx, leaving nothing', async () => {
    for (const body of [
      await archive([{ name: 'evil', type: 'symlink', linkname: '/etc/passwd' }]),
      await archive([{ name: '../../escape.txt', content: 'x' }]),
      Buffer.from('not a gzip at all'),
    ]) {
      const res = await putData(ID, body, 'fresh');
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().error.code).toBe('INVALID_ARCHIVE');
    }
    expect(existsSync(join(agent.runtimeDirectory, 'instances', ID, 'fresh'))).toBe(false);
    expect(existsSync(join(agent.runtimeDirectory, 'escape.txt'))).toBe(false);
    expect(leftovers()).toEqual([]);
  });
});
