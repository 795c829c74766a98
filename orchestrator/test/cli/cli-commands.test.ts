// ectl commands against a real in-process orchestrator (SQLite in a temp data
// dir) and simulated agents: login writes a 0600 config, hosts, layers push,
// layers push of a file, progress bar, hosts maintenance, apply (+ re-apply,
// conflict, dry run), instances create (--wait)/ls/get, exit codes.

import { chmodSync, createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulatedAgents, type SimulatedAgents } from '../../bench/simulated-agents.js';
import { bufferOutput, type BufferedOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator } from '../../src/server/orchestrator.js';
import { layerChecksum } from '../../src/shared/layer-checksum.js';
import { packDirectory } from '../../src/shared/safe-tar.js';
import { freePort } from '../support/registry.js';
import { uniqueId } from '../support/docker.js';

const ADMIN_TOKEN = `admin-${'x'.repeat(24)}`;
const run = uniqueId('cli');
let base: string;
let configPath: string;
let orchestrator: { url: string; stop(): Promise<void> };
let agents: SimulatedAgents;

async function ectl(args: string[], env: { url?: string; token?: string } = {}) {
  const output = bufferOutput();
  const code = await runCli(args, { output, env: { configPath, urlOverride: env.url, tokenOverride: env.token }, version: 'test' });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

async function ectlJson<T>(args: string[]): Promise<T> {
  const r = await ectl([...args, '--json']);
  expect(r.stderr).not.toMatch(/error/);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ectl-test-'));
  configPath = join(base, 'home', 'endercloud', 'config.json');
  agents = await startSimulatedAgents();
  const port = await freePort();
  orchestrator = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${port}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
      ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
    }),
  );
});

afterAll(async () => {
  await orchestrator?.stop();
  await agents?.close();
  rmSync(base, { recursive: true, force: true });
});

describe('ectl against a real orchestrator', () => {
  it('login verifies the token, then writes the context to a 0600 file in a 0700 dir', async () => {
    const bad = await ectl(['login', '--url', orchestrator.url, '--token', 'wrong-token']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/error: UNAUTHORIZED: .* \(HTTP 401\)/);
    expect(() => statSync(configPath)).toThrow();

    const ok = await ectl(['login', '--url', `${orchestrator.url}/api/v1/`, '--token', ADMIN_TOKEN]);
    expect(ok.code).toBe(0);
    expect(statSync(configPath).mode & 0o777).toBe(0o600);
    expect(statSync(join(base, 'home', 'endercloud')).mode & 0o777).toBe(0o700);
    const contexts = await ectlJson<{ name: string; current: boolean; url: string; token: string }[]>(['context', 'ls']);
    expect(contexts).toEqual([{ name: 'default', current: true, url: orchestrator.url, token: 'set' }]);
  });

  it('hosts ls lists a host after its first heartbeat, as a table and as JSON', async () => {
    const hostId = `${run}-h1`;
    const res = await fetch(`${orchestrator.url}/api/v1/agents/${hostId}/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(agents.heartbeatBody(hostId)),
    });
    expect(res.status).toBeLessThan(300);
    const host = await until('host ONLINE', async () => {
      const hosts = await ectlJson<{ id: string; status: string }[]>(['hosts', 'ls']);
      return hosts.find((h) => h.id === hostId && h.status === 'ONLINE');
    });
    expect(host.id).toBe(hostId);
    const table = await ectl(['hosts', 'ls']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+STATUS\s+GAME ADDRESS\s+MEMORY\s+INSTANCES\s+LAST HEARTBEAT$/);
    expect(table.stdout).toMatch(new RegExp(`${hostId}\\s+ONLINE\\s+127\\.0\\.0\\.1`));
    const one = await ectl(['hosts', 'get', hostId]);
    expect(one.stdout).toMatch(/status:\s+ONLINE/);
  });

  it('hosts get of an unknown host shows the API error code and exits 1; a usage error exits 2', async () => {
    const missing = await ectl(['hosts', 'get', 'no-such-host']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/error: HOST_NOT_FOUND: .*\(HTTP 404\)/);
    expect((await ectl(['hosts', 'ls', '--bogus'])).code).toBe(2);
    expect((await ectl(['hosts', 'maintenance', 'x'])).code).toBe(2);
    expect((await ectl(['instances', 'create', '--group', 'g'])).code).toBe(2);
  });

  let layerSum: string;
  it('layers push of a directory uploads it and prints the canonical checksum of that directory', async () => {
    const dir = join(base, 'layer');
    mkdirSync(join(dir, 'plugins'), { recursive: true });
    writeFileSync(join(dir, 'server.properties'), 'motd=cli test\n');
    writeFileSync(join(dir, 'plugins', 'start.sh'), '#!/bin/sh\necho hi\n');
    chmodSync(join(dir, 'plugins', 'start.sh'), 0o755);
    const raw = await ectl(['layers', 'push', `${run}-config`, dir, '--json']);
    expect(raw.code).toBe(0);
    expect(raw.stderr).toMatch(new RegExp(`^uploading ${run}-config: \\d+ B\\n$`));
    const pushed = JSON.parse(raw.stdout) as { id: string; checksum: string; sizeBytes: number };
    layerSum = await layerChecksum(dir);
    expect(pushed).toMatchObject({ id: `${run}-config`, checksum: layerSum });
    expect(pushed.sizeBytes).toBeGreaterThan(0);
    const layers = await ectlJson<{ id: string; checksum: string }[]>(['layers', 'ls']);
    expect(layers).toContainEqual(expect.objectContaining({ id: `${run}-config`, checksum: layerSum }));
    const notTar = join(base, 'notes.txt');
    writeFileSync(notTar, 'hello');
    expect((await ectl(['layers', 'push', 'x', notTar])).code).toBe(2);
  });

  it('layers push of a .tar.gz FILE uploads it as is; the server computes the same canonical checksum', async () => {
    const dir = join(base, 'layer');
    const file = join(base, 'layer.tar.gz');
    await pipeline(packDirectory(dir), createWriteStream(file));
    const raw = await ectl(['layers', 'push', `${run}-file`, file, '--json']);
    expect(raw.code).toBe(0);
    expect(raw.stderr).toMatch(new RegExp(`^uploading ${run}-file: \\d+ B\\n$`));
    expect(JSON.parse(raw.stdout)).toMatchObject({ id: `${run}-file`, checksum: layerSum });
  });

  it('layers push draws a progress bar on an interactive terminal', async () => {
    const output = { ...bufferOutput(), interactive: true };
    const o = output as BufferedOutput;
    o.line = (text) => void (o.stdout += `${text}\n`);
    o.write = (text) => void (o.stdout += text);
    o.error = (text) => void (o.stderr += `${text}\n`);
    o.status = (text) => void (o.stderr += text);
    const code = await runCli(['layers', 'push', `${run}-tty`, join(base, 'layer')], {
      output: o,
      env: { configPath, urlOverride: undefined, tokenOverride: undefined },
    });
    expect(code).toBe(0);
    expect(o.stderr).toMatch(/\[#{30}\] 100% /);
  });

  it('hosts maintenance --on/--off switches the host and prints it (table and --json)', async () => {
    const hostId = `${run}-h1`;
    const on = await ectl(['hosts', 'maintenance', hostId, '--on', '--message', 'kernel update']);
    expect(on.code).toBe(0);
    expect(on.stdout).toBe(`host ${hostId}: maintenance on (status MAINTENANCE)\n`);
    const off = await ectlJson<{ status: string; maintenance: unknown }>(['hosts', 'maintenance', hostId, '--off']);
    expect(off).toMatchObject({ status: 'ONLINE', maintenance: null });
  });

  const applyFile = (memoryMb: number, dryRunGroup = 'lobby'): string => {
    const file = join(base, `apply-${memoryMb}-${dryRunGroup}.yml`);
    writeFileSync(
      file,
      [
        'templates:',
        `  - name: ${run}-tpl`,
        '    version: "1.0.0"',
        '    spec:',
        '      image: endercloud-test/busybox:none',
        `      resources: { memoryMb: ${memoryMb} }`,
        `      layers: [${run}-config]`,
        'groups:',
        `  - id: ${run}-${dryRunGroup}`,
        '    kind: ephemeral',
        '    variants:',
        `      - { id: default, template: ${run}-tpl@1.0.0, env: { MOTD: hi } }`,
        '',
      ].join('\n'),
    );
    return file;
  };

  it('apply --dry-run shows the preview and writes nothing', async () => {
    const r = await ectl(['apply', '-f', applyFile(256), '--dry-run']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`\\+ template ${run}-tpl@1\\.0\\.0\\s+create`));
    expect(r.stdout).toMatch(/dry run: nothing written/);
    expect((await ectl(['instances', 'ls'])).code).toBe(0);
    const groups = (await fetch(`${orchestrator.url}/api/v1/groups`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then((x) =>
      x.json(),
    )) as { groups: { id: string }[] };
    expect(groups.groups.map((g) => g.id)).not.toContain(`${run}-lobby`);
  });

  it('apply creates everything, and a second apply shows everything unchanged', async () => {
    const first = await ectl(['apply', '-f', applyFile(256)]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/applied: 2 created, 0 updated, 0 unchanged/);
    const again = await ectlJson<{ plan: { key: string; action: string }[]; applied: boolean }>(['apply', '-f', applyFile(256)]);
    expect(again.applied).toBe(false);
    expect(again.plan.map((i) => i.action)).toEqual(['unchanged', 'unchanged']);
  });

  it('apply refuses a changed body for an existing template version before writing anything', async () => {
    const r = await ectl(['apply', '-f', applyFile(512, 'other')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`! template ${run}-tpl@1\\.0\\.0\\s+conflict\\n\\s+resources\\.memoryMb`));
    expect(r.stderr).toMatch(/nothing written/);
    const missing = await ectl(['instances', 'create', '--group', `${run}-other`, '--variant', 'default']);
    expect(missing.stderr).toMatch(/GROUP_NOT_FOUND/);
  });

  it('instances create, ls and get --json show the placed instance', async () => {
    const created = await ectlJson<{ id: string; commandId: string; state: string }>([
      'instances',
      'create',
      '--group',
      `${run}-lobby`,
      '--variant',
      'default',
      '--name',
      `${run}-one`,
    ]);
    expect(created.commandId).toBeTruthy();
    const list = await ectlJson<{ id: string; groupId: string; hostId: string }[]>(['instances', 'ls', '--group', `${run}-lobby`]);
    expect(list.map((i) => i.id)).toEqual([created.id]);
    expect(list[0]!.hostId).toBe(`${run}-h1`);
    const one = await ectlJson<{ id: string; name: string; variantId: string }>(['instances', 'get', created.id]);
    expect(one).toMatchObject({ id: created.id, name: `${run}-one`, variantId: 'default' });
    const table = await ectl(['instances', 'ls']);
    expect(table.stdout).toMatch(new RegExp(`${created.id}\\s+${run}-lobby\\s+default\\s+${run}-h1`));
  });

  it('instances create --wait waits for online (readiness), not for the create command: a server still starting at --timeout fails', async () => {
    // The simulated agent's servers never pass a readiness check; online --wait is covered in instance-commands.test.ts.
    const r = await ectl(['instances', 'create', '--group', `${run}-lobby`, '--variant', 'default', '--wait', '--timeout', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^waiting for instance i-[0-9a-f]+ to be online…\n/);
    // It waited past the create command: either the 1 s ran out while starting, or (on a loaded machine, before that)
    // the supervisor judged the simulated container, which no readiness check can pass, and it stopped waiting on that.
    expect(r.stderr).toMatch(
      /error: instance [\w-]+ (still starting after 1s \(ectl instances get [\w-]+ shows it\)|did not become online: it is intervention_required .*)\n$/,
    );
    expect(r.stdout).toBe('');
  });

  it('examples/network.yml applies as documented (it pushes its own layers) and re-applies unchanged', async () => {
    const repo = join(import.meta.dirname, '..', '..', '..');
    const file = join(repo, 'examples', 'network.yml');
    const first = await ectl(['apply', '-f', file]);
    expect(first.stderr).toMatch(/^uploading lobby-config: /);
    expect(first.stdout).toMatch(/applied: 2 layer\(s\) pushed, 4 created, 0 updated, 0 unchanged/);
    const again = await ectlJson<{ plan: { action: string }[] }>(['apply', '-f', file]);
    expect(again.plan.map((p) => p.action)).toEqual(Array(6).fill('unchanged'));
  });

  it('ENDERCLOUD_URL and ENDERCLOUD_TOKEN override the stored context', async () => {
    const r = await ectl(['hosts', 'ls', '--json'], { url: orchestrator.url, token: 'not-the-token' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/UNAUTHORIZED/);
  });
});
