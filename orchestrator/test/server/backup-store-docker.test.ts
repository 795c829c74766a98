// Off-host backups on the real Docker engine: an in-process orchestrator and a
// real in-process agent running the Minecraft-protocol test server. A backup is
// copied to the orchestrator's backup store; the host then loses the instance's
// runtime directory and every backup it kept, and a restore from the store
// brings the world back. Also: download streams the stored archive, and a
// restore from an uploaded archive goes through the import checks.

import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import type { Orchestrator } from '../../src/server/orchestrator.js';
import { packDirectory } from '../../src/shared/safe-tar.js';
import type { TestAgent } from '../support/agent-harness.js';
import { uniqueId } from '../support/docker.js';
import { mcServerImageTag } from '../support/mc-server.js';
import { startRealAgentStack, type RealAgentStack } from '../support/real-agent-stack.js';
import type { Loose } from './support.js';

const AGENT_ID = `${uniqueId('bk')}-host`;

let stack: RealAgentStack;
let agent: TestAgent;
let dataDir: string;
let o: Orchestrator;
let call: RealAgentStack['call'];
const scratch = mkdtempSync(join(tmpdir(), 'ec-backup-upload-'));

const get = async (id: string): Promise<Loose> => (await call('GET', `/instances/${id}`)).body;

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function waitIdle(id: string, state: string): Promise<Loose> {
  let last: Loose = {};
  try {
    return await waitFor(
      `instance ${id} ${state} and idle`,
      async () => {
        last = await get(id);
        return last.state === state && !last.activeAction ? last : undefined;
      },
      45_000,
    );
  } catch (err) {
    // What it was doing instead: the state, its reason, the action in flight and the latest history.
    const history = ((await call('GET', `/instances/${id}/history`)).body.history as Loose[] | undefined)?.slice(0, 6) ?? [];
    throw new Error(
      `${(err as Error).message}; last seen ${JSON.stringify({ state: last.state, stateReason: last.stateReason, activeAction: last.activeAction })}; history ${JSON.stringify(history.map((h) => [h.from, h.to, h.reason]))}`,
    );
  }
}

async function ectl(args: string[]) {
  const output = bufferOutput();
  const addr = o.app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const code = await runCli(args, {
    output,
    version: 'test',
    env: { configPath: join(scratch, 'ectl.json'), urlOverride: url, tokenOverride: stack.adminToken },
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

const instanceDir = (id: string) => join(agent.runtimeDirectory, 'instances', id);
const hostBackups = (id: string) => join(agent.runtimeDirectory, 'backups', id);
const seedOf = (id: string): string => (JSON.parse(readFileSync(join(instanceDir(id), 'level.json'), 'utf8')) as { seed: string }).seed;

beforeAll(async () => {
  stack = await startRealAgentStack({
    agentId: AGENT_ID,
    env: { ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms', ENDERCLOUD_COMMAND_RETRY_MAX: '500ms', ENDERCLOUD_UNKNOWN_GRACE: '10m' },
    deps: { runBackupScheduler: false },
  });
  ({ agent, dataDir, o, call } = stack);
  await o.app.listen({ host: '127.0.0.1', port: 0 });
  expect(
    (
      await call('PUT', '/templates/mc/versions/1', {
        image: mcServerImageTag(),
        resources: { memoryMb: 256 },
        containerPort: 25565,
        restartPolicy: 'on-failure',
        variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true }],
        readiness: { kind: 'minecraft', startupTimeoutMs: 20_000, intervalMs: 150, probeTimeoutMs: 1000 },
        stop: { signal: 'SIGTERM', timeoutMs: 2000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
        dataPaths: ['level.json', 'playerdata'],
        backup: { onlineSave: true },
      })
    ).status,
  ).toBe(201);
  expect(
    (await call('PUT', '/groups/mc', { kind: 'persistent', variants: [{ id: 'plain', template: { name: 'mc', version: '1' } }] })).status,
  ).toBe(201);
}, 120_000);

afterAll(async () => {
  try {
    await stack?.close();
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

describe('off-host backups on the real engine', () => {
  let id: string;
  let backupId: string;
  let seed: string;

  it('a backup is copied to the orchestrator backup store and listed from there', async () => {
    const created = await call('POST', '/instances', { groupId: 'mc', variantId: 'plain', name: 'bk-world' });
    expect(created.status).toBe(202);
    id = created.body.id as string;
    await waitIdle(id, 'online');
    seed = seedOf(id);
    const res = await call('POST', `/instances/${id}/backups`, { reason: 'before the host dies' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitIdle(id, 'online');
    const list = (await call('GET', `/instances/${id}/backups`)).body.backups as Loose[];
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      stored: true,
      onHost: true,
      trigger: 'manual',
      originHost: AGENT_ID,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    backupId = list[0]!.backupId as string;
    const kept = join(dataDir, 'backups', id, `${backupId}.tar.gz`);
    expect(
      createHash('sha256')
        .update(await readFile(kept))
        .digest('hex'),
    ).toBe(list[0]!.sha256);
  }, 90_000);

  it('download streams the stored archive', async () => {
    const res = await call('GET', `/instances/${id}/backups/${backupId}/download`);
    expect(res.status).toBe(200);
    const stored = (await call('GET', `/instances/${id}/backups`)).body.backups[0] as Loose;
    expect(createHash('sha256').update(res.raw).digest('hex')).toBe(stored.sha256);
    expect(res.raw.length).toBe(stored.sizeBytes);
  });

  it('after the host lost the runtime directory and its backups, a restore from the store brings the world back', async () => {
    expect((await call('POST', `/instances/${id}/stop`)).status).toBe(202);
    await waitIdle(id, 'stopped');
    rmSync(instanceDir(id), { recursive: true, force: true });
    rmSync(hostBackups(id), { recursive: true, force: true });
    expect(existsSync(join(instanceDir(id), 'level.json'))).toBe(false);
    const listed = (await call('GET', `/instances/${id}/backups`)).body.backups as Loose[];
    expect(listed).toEqual([expect.objectContaining({ backupId, stored: true, onHost: false })]);

    const res = await call('POST', `/instances/${id}/restore`, { backupId, confirm: 'bk-world' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitIdle(id, 'stopped');
    const [last] = (await call('GET', `/instances/${id}/history`)).body.history as Loose[];
    expect(last).toMatchObject({ from: 'restore', to: 'stopped', details: { backupId } });
    expect(seedOf(id)).toBe(seed);
    // The host has it again (pushed from the store), and the world runs.
    expect(existsSync(join(hostBackups(id), `${backupId}.tar.gz`))).toBe(true);
    expect((await call('POST', `/instances/${id}/start`)).status).toBe(202);
    await waitIdle(id, 'online');
    expect(seedOf(id)).toBe(seed);
  }, 150_000);

  it('restore from an uploaded archive goes through the import checks and replaces the world', async () => {
    expect((await call('POST', `/instances/${id}/stop`)).status).toBe(202);
    await waitIdle(id, 'stopped');
    const world = join(scratch, 'world');
    rmSync(world, { recursive: true, force: true });
    await import('node:fs/promises').then((fs) => fs.mkdir(world, { recursive: true }));
    writeFileSync(join(world, 'level.json'), JSON.stringify({ seed: '4242', saves: 0 }));
    const chunks: Buffer[] = [];
    for await (const c of packDirectory(world)) chunks.push(c as Buffer);
    const upload = await call('PUT', '/imports', Buffer.concat(chunks), { headers: { 'content-type': 'application/gzip' } });
    expect(upload.status, JSON.stringify(upload.body)).toBe(201);
    const res = await call('POST', `/instances/${id}/restore`, { uploadId: upload.body.uploadId, confirm: 'bk-world' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.backupId).toMatch(/^upload-/);
    await waitIdle(id, 'stopped');
    expect(seedOf(id)).toBe('4242');
    const list = (await call('GET', `/instances/${id}/backups`)).body.backups as Loose[];
    expect(list.find((b) => b.backupId === res.body.backupId)).toMatchObject({ stored: true, onHost: true, trigger: 'upload' });
    // A malformed upload never reaches the instance.
    const bad = await call('PUT', '/imports', Buffer.from('not a gzip tar'), { headers: { 'content-type': 'application/gzip' } });
    expect(bad.status).toBeGreaterThanOrEqual(400);
  }, 90_000);

  it('ectl: backup download writes the stored archive; restore --upload restores a directory through the import checks', async () => {
    const file = join(scratch, 'download.tar.gz');
    const down = await ectl(['instances', 'backup', 'download', 'bk-world', backupId, '-o', file]);
    expect(down.stderr).toBe('');
    expect(down.code).toBe(0);
    const stored = ((await call('GET', `/instances/${id}/backups`)).body.backups as Loose[]).find((b) => b.backupId === backupId)!;
    expect(createHash('sha256').update(readFileSync(file)).digest('hex')).toBe(stored.sha256);
    expect(down.stdout).toContain(`written to ${file}`);

    const world = join(scratch, 'world2');
    await import('node:fs/promises').then((fs) => fs.mkdir(world, { recursive: true }));
    writeFileSync(join(world, 'level.json'), JSON.stringify({ seed: '777', saves: 0 }));
    const up = await ectl(['instances', 'restore', 'bk-world', '--upload', world, '--confirm', 'bk-world', '--wait', '--timeout', '60']);
    expect(up.stderr).not.toMatch(/error/);
    expect(up.code).toBe(0);
    expect(seedOf(id)).toBe('777');
    expect((await ectl(['instances', 'restore', 'bk-world', '--confirm', 'bk-world'])).stderr).toMatch(/either a backup id or --upload/);
  }, 90_000);

  it('deleting the instance with the backups scope removes the store copies too', async () => {
    expect(existsSync(join(dataDir, 'backups', id))).toBe(true);
    const res = await call('DELETE', `/instances/${id}`, {
      scopes: ['container', 'technical', 'player_data', 'backups'],
      confirm: 'bk-world',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitFor('record gone', async () => ((await call('GET', `/instances/${id}`)).status === 404 ? true : undefined));
    expect(existsSync(join(dataDir, 'backups', id))).toBe(false);
    expect(await o.store.storedBackups.listForInstance(id)).toEqual([]);
  }, 60_000);
});
