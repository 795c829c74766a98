// POST /templates/import-egg and `ectl templates import-egg`: preview first,
// stored as an immutable version, refused eggs store nothing and say why.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { testOrchestrator, type TestOrchestrator } from '../server/support.js';

const fixtures = new URL('../fixtures/eggs/', import.meta.url);
const egg = (name: string): unknown => JSON.parse(readFileSync(new URL(name, fixtures), 'utf8'));
let t: TestOrchestrator;
let url: string;
let dir: string;

beforeAll(async () => {
  t = await testOrchestrator();
  url = await t.o.app.listen({ host: '127.0.0.1', port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'ec-eggs-'));
});
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function ectl(args: string[]) {
  const output = bufferOutput();
  const code = await runCli(args, { output, env: { configPath: join(dir, 'config.json'), urlOverride: url, tokenOverride: t.adminToken }, version: 'test' });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

describe('POST /templates/import-egg', () => {
  it('dryRun answers the preview and the spec, storing nothing', async () => {
    const res = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: egg('test-server.v2.json'), name: 'egg-srv', version: '1', dryRun: true } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ dryRun: true, outcome: 'create', preview: { format: 'PTDL_v2', eggName: 'EnderCloud test server' } });
    expect(res.body.spec).toMatchObject({ stdin: true, stop: { stdin: 'stop', signal: 'SIGTERM' }, install: { entrypoint: 'ash' } });
    expect(res.body.preview.untranslated.map((u: { field: string }) => u.field)).toContain('features.eula');
    expect((await t.call('GET', '/api/v1/templates/egg-srv/versions/1')).status).toBe(404);
  });

  it('stores the version; the same egg again is unchanged, another spec for it a conflict', async () => {
    const first = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: egg('test-server.v1.json'), name: 'egg-srv', version: '1' } });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ created: true, template: { name: 'egg-srv', version: '1' } });
    const again = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: egg('test-server.v2.json'), name: 'egg-srv', version: '1' } });
    expect(again.status).toBe(200);
    expect(again.body.created).toBe(false);
    const other = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: egg('test-server.v2.json'), name: 'egg-srv', version: '1', memoryMb: 2048, dryRun: true } });
    expect(other.body.outcome).toBe('conflict');
    const write = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: egg('test-server.v2.json'), name: 'egg-srv', version: '1', memoryMb: 2048 } });
    expect(write.status).toBe(409);
  });

  it('refuses an egg it cannot represent, with the reason and the preview', async () => {
    const res = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: egg('refused-extends.v2.json'), name: 'egg-bad', version: '1' } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/egg refused: config\.extends inherits the configuration of another egg/);
    expect((await t.call('GET', '/api/v1/templates/egg-bad/versions/1')).status).toBe(404);
    const dry = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: egg('refused-extends.v2.json'), name: 'egg-bad', version: '1', dryRun: true } });
    expect(dry.body).toMatchObject({ outcome: 'refused', preview: { refused: expect.stringMatching(/config\.extends/) } });
  });

  it('needs templates:write', async () => {
    const reader = await t.call('POST', '/api/v1/tokens', { body: { name: 'egg-reader', scopes: ['read'] } });
    const res = await t.call('POST', '/api/v1/templates/import-egg', { token: reader.body.secret, body: { egg: egg('test-server.v2.json'), name: 'x', version: '1' } });
    expect(res.status).toBe(403);
  });
});

describe('ectl templates import-egg', () => {
  it('prints the preview, then stores', async () => {
    const file = join(dir, 'paper.json');
    writeFileSync(file, JSON.stringify(egg('paper-like.v2.json')));
    const r = await ectl(['templates', 'import-egg', file, '--name', 'paper', '--template-version', '1', '--image', 'Java 17']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/egg "Paper-like" \(PTDL_v2\) → template paper@1: create/);
    expect(r.stdout).toMatch(/untranslated {2}variables\[1\]\.rules \(BUILD_NUMBER\): url: no equivalent/);
    expect(r.stdout).toMatch(/unknown field extra_field/);
    expect(r.stdout).toMatch(/template paper@1 created/);
    expect((await t.call('GET', '/api/v1/templates/paper/versions/1')).body.image).toBe('ghcr.io/pterodactyl/yolks:java_17');
  });

  it('--dry-run writes nothing; a refused egg exits 1 and names the reason', async () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify(egg('refused-extends.v2.json')));
    const dry = await ectl(['templates', 'import-egg', join(dir, 'paper.json'), '--name', 'paper', '--version', '2', '--dry-run']);
    expect(dry.code).toBe(0);
    expect((await t.call('GET', '/api/v1/templates/paper/versions/2')).status).toBe(404);
    const bad = await ectl(['templates', 'import-egg', file, '--name', 'bad', '--version', '1']);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/REFUSED {7}config\.extends/);
    expect(bad.stderr).toMatch(/egg refused: config\.extends.*nothing was written/);
  });

  it('--version is the template version after the command, ectl\'s own version before it; --template-version is the same flag', async () => {
    expect(await ectl(['--version'])).toEqual({ code: 0, stdout: 'test\n', stderr: '' });
    const missing = await ectl(['templates', 'import-egg', join(dir, 'paper.json'), '--name', 'paper']);
    expect(missing).toMatchObject({ code: 2, stderr: 'error: import-egg needs the template version: --version V\n' });
    const both = await ectl(['templates', 'import-egg', join(dir, 'paper.json'), '--name', 'paper', '--version', '3', '--template-version', '4']);
    expect(both).toMatchObject({ code: 2, stderr: 'error: --version 3 and --template-version 4 disagree: give one\n' });
    const same = await ectl(['templates', 'import-egg', join(dir, 'paper.json'), '--name', 'paper', '--version', '1', '--template-version', '1', '--image', 'Java 17']);
    expect(same.stdout).toMatch(/template paper@1 unchanged/);
    // Every other command still parses (and refuses an unknown flag) as before.
    expect((await ectl(['instances', 'ls', '--version'])).code).toBe(2);
    // The global --context is still read after the command too.
    for (const args of [['--context', 'nope', 'templates', 'ls'], ['templates', 'ls', '--context', 'nope']]) {
      expect(await ectl(args)).toMatchObject({ code: 2, stderr: 'error: no context named "nope" (see ectl context ls)\n' });
    }
  });
});
