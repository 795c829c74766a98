// ectl's removal commands against a real in-process orchestrator (fresh SQLite)
// and an in-test agent (the real agent app over an in-memory runtime):
// templates/groups/layers delete, layers prune, hosts remove [--forget],
// kept-data ls/purge. Refusals come back as the server's 409 message.

import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { freePort } from '../support/registry.js';
import { heartbeatBody, layerArchive, startFakeAgent, type FakeAgent } from '../server/support.js';
import { instance } from '../store/fixtures.js';

const ADMIN_TOKEN = `admin-${'r'.repeat(24)}`;
let base: string;
let o: Orchestrator;
let agent: FakeAgent;

async function ectl(args: string[]) {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    env: { configPath: join(base, 'config.json'), urlOverride: o.url, tokenOverride: ADMIN_TOKEN },
    version: 'test',
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

async function api(method: string, path: string, body?: unknown, raw?: Buffer): Promise<Response> {
  const type = raw ? 'application/gzip' : 'application/json';
  return fetch(`${o.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body || raw ? { 'content-type': type } : {}) },
    ...(raw ? { body: new Uint8Array(raw) } : body ? { body: JSON.stringify(body) } : {}),
  });
}

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'ec-cli-rm-'));
  agent = await startFakeAgent({ agentId: 'cli-rm-host' });
  o = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
    }),
    { runSupervisor: false },
  );
  expect(
    (
      await fetch(`${o.url}/api/v1/agents/cli-rm-host/heartbeat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(heartbeatBody(agent.url)),
      })
    ).status,
  ).toBe(200);
  await o.ctx.hosts.whenIdle();
});
afterAll(async () => {
  await o?.stop();
  await agent?.close();
  if (base) await rm(base, { recursive: true, force: true });
});

describe('ectl removal commands', () => {
  it('templates delete and groups delete refuse while in use (the server says by whom), then delete', async () => {
    expect((await api('PUT', '/templates/t/versions/1', { image: 'busybox:1', resources: { memoryMb: 64 } })).status).toBe(201);
    expect(
      (await api('PUT', '/groups/g', { kind: 'persistent', variants: [{ id: 'v', template: { name: 't', version: '1' } }] })).status,
    ).toBe(201);
    const used = await ectl(['templates', 'delete', 't', '1']);
    expect(used.code).toBe(1);
    expect(used.stderr).toMatch(/group g variant v/);
    await o.store.instances.create(instance('i-cli', { name: 'cli-one', groupId: 'g', variantId: 'v', hostId: 'cli-rm-host' }));
    expect((await ectl(['groups', 'delete', 'g'])).stderr).toMatch(/still has instances/);
    await o.store.instances.delete('i-cli');
    expect(await ectl(['groups', 'delete', 'g'])).toMatchObject({ code: 0, stdout: 'deleted group g\n' });
    expect(await ectl(['templates', 'delete', 't', '1'])).toMatchObject({ code: 0, stdout: 'deleted template t@1\n' });
  });

  it('layers delete removes one checksum; layers prune removes the rest nothing uses', async () => {
    const a = (
      (await (await api('PUT', '/template-layers/l', undefined, await layerArchive({ 'a.txt': 'A' }))).json()) as { checksum: string }
    ).checksum;
    const b = (
      (await (await api('PUT', '/template-layers/l', undefined, await layerArchive({ 'a.txt': 'B' }))).json()) as { checksum: string }
    ).checksum;
    expect(await ectl(['layers', 'delete', 'l', a])).toMatchObject({ code: 0, stdout: `deleted layer l@${a}\n` });
    const pruned = await ectl(['layers', 'prune']);
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toMatch(new RegExp(`deleted layer l@${b}.*\\npruned 1 layer version\\(s\\)\\n$`));
    expect((await ectl(['layers', 'prune'])).stdout).toBe('nothing to prune: every layer is in use\n');
  });

  it("kept-data ls shows a deleted instance's world and backups; purge needs --yes and removes them", async () => {
    await mkdir(join(agent.runtimeDirectory, 'instances', 'i-old'), { recursive: true });
    await writeFile(join(agent.runtimeDirectory, 'instances', 'i-old', 'level.dat'), 'w');
    const ls = await ectl(['kept-data', 'ls']);
    expect(ls.stdout).toMatch(/^HOST\s+INSTANCE\s+WORLD\s+BACKUPS.*\ncli-rm-host\s+i-old\s+yes\s+0/);
    expect((await ectl(['kept-data', 'purge', 'cli-rm-host', 'i-old'])).stderr).toMatch(/needs confirmation: pass --yes/);
    const purged = await ectl(['kept-data', 'purge', 'cli-rm-host', 'i-old', '--yes']);
    expect(purged.stdout).toBe('purged kept data of i-old on host cli-rm-host: world deleted, 0 backup(s) deleted\n');
    expect((await readdir(join(agent.runtimeDirectory, 'instances'))).filter((n) => !n.startsWith('.'))).toEqual([]);
  });

  it("kept-data attach gives a new instance created with --no-start and the world's user the kept world", async () => {
    expect((await api('PUT', '/templates/k/versions/1', { image: 'busybox:1', resources: { memoryMb: 64 } })).status).toBe(201);
    expect(
      (await api('PUT', '/groups/k', { kind: 'persistent', variants: [{ id: 'v', template: { name: 'k', version: '1' } }] })).status,
    ).toBe(201);
    await mkdir(join(agent.runtimeDirectory, 'instances', 'i-kept'), { recursive: true });
    await writeFile(join(agent.runtimeDirectory, 'instances', 'i-kept', 'level.dat'), 'kept');
    expect((await ectl(['instances', 'create', '--group', 'k', '--variant', 'v', '--name', 'k-bad-user', '--user', 'x'])).stderr).toMatch(
      /--user must be UID:GID/,
    );
    const created = await ectl([
      'instances',
      'create',
      '--group',
      'k',
      '--variant',
      'v',
      '--name',
      'k-new',
      '--no-start',
      '--wait',
      '--timeout',
      '20',
      '--user',
      `${process.getuid!()}:${process.getgid!()}`,
    ]);
    expect(created.code).toBe(0);
    const r = await ectl(['kept-data', 'attach', 'cli-rm-host', 'i-kept', '--to', 'k-new']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('attached the kept world of i-kept to k-new on host cli-rm-host; start it with: ectl instances start k-new\n');
    const id = (await o.store.instances.getByName('k-new'))!.id;
    expect(await readFile(join(agent.runtimeDirectory, 'instances', id, 'level.dat'), 'utf8')).toBe('kept');
    await o.store.instances.delete(id);
  });

  it('hosts remove refuses a host with instances; --forget needs --yes and an OFFLINE host', async () => {
    await o.store.instances.create(instance('i-host', { name: 'host-one', hostId: 'cli-rm-host' }));
    expect((await ectl(['hosts', 'remove', 'cli-rm-host'])).stderr).toMatch(/still holds 1 instance/);
    expect((await ectl(['hosts', 'remove', 'cli-rm-host', '--forget'])).stderr).toMatch(/pass --yes/);
    expect((await ectl(['hosts', 'remove', 'cli-rm-host', '--forget', '--yes'])).stderr).toMatch(/forget is only for an OFFLINE/);
    await o.store.hosts.setStatus('cli-rm-host', 'OFFLINE', { now: Date.now() });
    const forgotten = await ectl(['hosts', 'remove', 'cli-rm-host', '--forget', '--yes']);
    expect(forgotten.code).toBe(0);
    expect(forgotten.stdout).toMatch(/^removed host cli-rm-host; 1 instance\(s\) now intervention_required: i-host\n/);
  });
});
