// Agent backups against the real Docker engine and the Minecraft test server:
// archive while running, list, path validation, restore refused while running,
// restore after a stop brings the original world back (owned by the instance
// user) with a safety backup of what it replaced, and deletion of backups.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
import { ensureImage } from '../support/images.js';
import { mcServerImage, mcServerImageTag } from '../support/mc-server.js';

const RUN = uniqueId('agent-backups');
const NETWORK = `ec-${RUN}`;
const ID = `${RUN}-i1`;

let orch: FakeOrchestrator;
let agent: TestAgent;
let dataDir: string;

async function waitFor(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const call = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) =>
  agent.app.inject({ method, url: `/api/v1/instances/${ID}${url}`, ...(payload !== undefined ? { payload: payload as object } : {}) });

beforeAll(async () => {
  await ensureImage(mcServerImage);
  orch = await startFakeOrchestrator();
  const layer = await orch.addLayer('base', { 'server.properties': { content: 'motd=backup\n' } });
  agent = await createTestAgent({
    agentId: RUN,
    orchestratorUrl: orch.url,
    portRange: randomPortRange(20),
    network: NETWORK,
    leaderEpoch: 1,
  });
  const created = await agent.app.inject({
    method: 'PUT',
    url: `/api/v1/instances/${ID}`,
    payload: {
      groupId: 'g',
      variantId: 'v',
      image: mcServerImageTag(),
      layers: [layer],
      resources: { memoryMb: 256 },
      user: '1000:1000',
      env: { RCON_PASSWORD: 'pw' },
    },
  });
  expect(created.statusCode, created.body).toBe(200);
  dataDir = join(agent.runtimeDirectory, 'instances', ID);
  await waitFor(() => existsSync(join(dataDir, 'level.json')), 'the world to be written');
}, 120_000);

afterAll(async () => {
  await removeContainersByLabel({ 'orchestrator.host': RUN });
  await agent?.close();
  await removeNetwork(NETWORK);
  await orch?.close();
});

describe('agent backups', () => {
  it('archives a running instance atomically and lists it', async () => {
    const res = await call('POST', '/backups', { backupId: 'b1' });
    expect(res.statusCode, res.body).toBe(200);
    const info = res.json() as { backupId: string; sizeBytes: number; sha256: string; createdAt: string };
    expect(info.backupId).toBe('b1');
    expect(info.sha256).toMatch(/^[0-9a-f]{64}$/);
    const archive = join(agent.runtimeDirectory, 'backups', ID, 'b1.tar.gz');
    expect(statSync(archive).size).toBe(info.sizeBytes);
    // A retried create answers the same backup instead of overwriting it.
    expect((await call('POST', '/backups', { backupId: 'b1' })).json()).toEqual(info);
    const partial = await call('POST', '/backups', { backupId: 'only-level', paths: ['level.json', 'missing-dir'] });
    expect(partial.statusCode, partial.body).toBe(200);
    expect((partial.json() as { paths: string[] }).paths).toEqual(['level.json', 'missing-dir']);
    const list = (await call('GET', '/backups')).json() as { backups: Array<{ backupId: string }> };
    expect(list.backups.map((b) => b.backupId).sort()).toEqual(['b1', 'only-level']);
  });

  it('rejects unsafe paths and ids with a 400 naming them, writing nothing', async () => {
    const bad = await call('POST', '/backups', { backupId: 'x1', paths: ['../etc'] });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('UNSAFE_PATH');
    expect(bad.json().error.message).toContain('../etc');
    expect((await call('POST', '/backups', { backupId: '../x' })).statusCode).toBe(400);
    expect(existsSync(join(agent.runtimeDirectory, 'backups', ID, 'x1.tar.gz'))).toBe(false);
  });

  it('refuses to restore while the container runs', async () => {
    const res = await call('POST', '/restore', { backupId: 'b1' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('INSTANCE_BUSY');
  });

  it('restores the original data after a stop, with a safety backup of the replaced data', async () => {
    const original = readFileSync(join(dataDir, 'server.properties'), 'utf8');
    const stopped = await call('POST', '/stop', {});
    expect(stopped.statusCode, stopped.body).toBe(200);
    const levelBefore = JSON.parse(readFileSync(join(dataDir, 'level.json'), 'utf8')) as { seed: string };
    writeFileSync(join(dataDir, 'server.properties'), 'motd=changed\n');
    writeFileSync(join(dataDir, 'junk.txt'), 'later data');

    expect((await call('POST', '/restore', { backupId: 'nope' })).statusCode).toBe(404);
    const res = await call('POST', '/restore', { backupId: 'b1' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { restored: string; safetyBackupId: string };
    expect(body.restored).toBe('b1');
    expect(body.safetyBackupId).toMatch(/^pre-restore-\d{8}T\d{6}Z$/);

    expect(readFileSync(join(dataDir, 'server.properties'), 'utf8')).toBe(original);
    expect(existsSync(join(dataDir, 'junk.txt'))).toBe(false);
    expect((JSON.parse(readFileSync(join(dataDir, 'level.json'), 'utf8')) as { seed: string }).seed).toBe(levelBefore.seed);
    // The restored tree belongs to the instance user, as at creation.
    expect(statSync(dataDir).uid).toBe(1000);
    expect(statSync(join(dataDir, 'level.json')).uid).toBe(1000);
    const list = (await call('GET', '/backups')).json() as { backups: Array<{ backupId: string }> };
    expect(list.backups.map((b) => b.backupId)).toContain(body.safetyBackupId);
    // No staging or old directories are left beside the instance.
    expect(existsSync(join(agent.runtimeDirectory, 'instances'))).toBe(true);
    const leftovers = (await import('node:fs')).readdirSync(join(agent.runtimeDirectory, 'instances')).filter((n) => n !== ID);
    expect(leftovers).toEqual([]);

    // The server starts again on the restored directory.
    const started = await call('POST', '/start');
    expect(started.statusCode, started.body).toBe(200);
    expect(started.json().state).toBe('running');
  });

  it('deletes one backup, then all of them', async () => {
    expect((await call('DELETE', '/backups/only-level')).json()).toEqual({ deleted: true });
    expect((await call('DELETE', '/backups/only-level')).json()).toEqual({ deleted: false });
    const all = await call('DELETE', '/backups');
    expect(all.statusCode).toBe(200);
    expect((all.json() as { deleted: number }).deleted).toBe(2);
    expect((await call('GET', '/backups')).json()).toEqual({ backups: [] });
  });
});
