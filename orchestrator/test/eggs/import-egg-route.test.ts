// POST /templates/import-egg and `ectl templates import-egg`: preview first,
// stored as an immutable version, refused eggs store nothing and say why.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { testOrchestrator, type TestOrchestrator } from '../server/support.js';

const fixtures = new URL('../fixtures/eggs/', import.meta.url);
const egg = (name: string): unknown => {
  const text = readFileSync(new URL(name, fixtures), 'utf8');
  return name.endsWith('.yaml') ? parseYaml(text) : JSON.parse(text);
};
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
  const code = await runCli(args, {
    output,
    env: { configPath: join(dir, 'config.json'), urlOverride: url, tokenOverride: t.adminToken },
    version: 'test',
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

describe('POST /templates/import-egg', () => {
  it('dryRun answers the preview and the spec, storing nothing', async () => {
    const res = await t.call('POST', '/api/v1/templates/import-egg', {
      body: { egg: egg('test-server.v2.json'), name: 'egg-srv', version: '1', dryRun: true },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ dryRun: true, outcome: 'create', preview: { format: 'PTDL_v2', eggName: 'EnderCloud test server' } });
    expect(res.body.spec).toMatchObject({ stdin: true, stop: { stdin: 'stop', signal: 'SIGTERM' }, install: { entrypoint: 'ash' } });
    // features: [eula] is the operator's acceptance now (variable EULA), mapped, not untranslated.
    expect(res.body.preview.mapped.map((m: { from: string }) => m.from)).toContain('features.eula');
    expect(res.body.spec.eula).toBe(true);
    expect((await t.call('GET', '/api/v1/templates/egg-srv/versions/1')).status).toBe(404);
  });

  it('stores the version; the same egg again is unchanged, another spec for it a conflict', async () => {
    const first = await t.call('POST', '/api/v1/templates/import-egg', {
      body: { egg: egg('test-server.v1.json'), name: 'egg-srv', version: '1' },
    });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ created: true, template: { name: 'egg-srv', version: '1' } });
    // The same egg again (its v2 export differs now: the labels of its docker_images are stored in images).
    const again = await t.call('POST', '/api/v1/templates/import-egg', {
      body: { egg: egg('test-server.v1.json'), name: 'egg-srv', version: '1' },
    });
    expect(again.status).toBe(200);
    expect(again.body.created).toBe(false);
    const other = await t.call('POST', '/api/v1/templates/import-egg', {
      body: { egg: egg('test-server.v2.json'), name: 'egg-srv', version: '1', memoryMb: 2048, dryRun: true },
    });
    expect(other.body.outcome).toBe('conflict');
    const write = await t.call('POST', '/api/v1/templates/import-egg', {
      body: { egg: egg('test-server.v2.json'), name: 'egg-srv', version: '1', memoryMb: 2048 },
    });
    expect(write.status).toBe(409);
  });

  it('refuses an egg it cannot represent, with the reason and the preview', async () => {
    const res = await t.call('POST', '/api/v1/templates/import-egg', {
      body: { egg: egg('refused-extends.v2.json'), name: 'egg-bad', version: '1' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/egg refused: config\.extends inherits the configuration of another egg/);
    expect((await t.call('GET', '/api/v1/templates/egg-bad/versions/1')).status).toBe(404);
    const dry = await t.call('POST', '/api/v1/templates/import-egg', {
      body: { egg: egg('refused-extends.v2.json'), name: 'egg-bad', version: '1', dryRun: true },
    });
    expect(dry.body).toMatchObject({ outcome: 'refused', preview: { refused: expect.stringMatching(/config\.extends/) } });
  });

  const pelican: [string, string, Record<string, unknown>][] = [
    [
      'PLCN_v1',
      'bungeecord.plcn_v1.json',
      {
        stop: { stdin: 'end' },
        eula: true,
        configFiles: [
          {
            path: 'config.yml',
            find: { 'servers.*.address': { 'regex:^(127\\.0\\.0\\.1|localhost)(:\\d{1,5})?$': '{{config.docker.interface}}$2' } },
          },
          { path: 'eula.txt' },
        ],
      },
    ],
    [
      'PLCN_v2',
      'arma3.plcn_v2.yaml',
      { variables: expect.arrayContaining([expect.objectContaining({ name: 'BATTLE_EYE', booleanValues: { true: '1', false: '0' } })]) },
    ],
    [
      'PLCN_v3',
      'space-engineers.plcn_v3.json',
      {
        stop: { signal: 'SIGINT' },
        images: { 'Wine latest': 'ghcr.io/parkervcp/yolks:wine_latest', 'Wine staging': 'ghcr.io/parkervcp/yolks:wine_staging' },
      },
    ],
  ];
  for (const [format, file, spec] of pelican) {
    it(`${format}: the preview maps or lists every field, and the version is stored with what it says`, async () => {
      const name = `egg-${format.toLowerCase().replace('_', '-')}`;
      const dry = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: egg(file), name, version: '1', dryRun: true } });
      expect(dry.status).toBe(200);
      expect(dry.body).toMatchObject({ outcome: 'create', preview: { format, unknownFields: [] } });
      expect(dry.body.preview.refused).toBeUndefined();
      expect(dry.body.preview.mapped).toContainEqual({ from: 'meta.version', to: expect.stringMatching(/^read as Pelican v\d/) });
      expect(dry.body.spec).toMatchObject(spec);
      const stored = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: egg(file), name, version: '1' } });
      expect(stored.status).toBe(201);
      expect((await t.call('GET', `/api/v1/templates/${name}/versions/1`)).body).toMatchObject(spec);
    });
  }

  it('a newer Pelican format is refused by name', async () => {
    const future = { ...(egg('space-engineers.plcn_v3.json') as Record<string, unknown>), meta: { version: 'PLCN_v4' } };
    const res = await t.call('POST', '/api/v1/templates/import-egg', { body: { egg: future, name: 'egg-future', version: '1' } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(
      /egg refused: meta\.version "PLCN_v4" is not a known egg format \(PTDL_v1, PTDL_v2, PLCN_v1, PLCN_v2, PLCN_v3\): a newer format/,
    );
  });

  it('image: any image reference, not only one of docker_images; all of them stored as images', async () => {
    const res = await t.call('POST', '/api/v1/templates/import-egg', {
      body: {
        egg: egg('bungeecord.plcn_v1.json'),
        name: 'egg-own-image',
        version: '1',
        image: 'registry.example.invalid/bungee:21',
        dryRun: true,
      },
    });
    expect(res.body.spec.image).toBe('registry.example.invalid/bungee:21');
    expect(Object.keys(res.body.spec.images)).toEqual(['Java 21', 'Java 17', 'Java 11', 'Java 8']);
  });

  it('needs templates:write', async () => {
    const reader = await t.call('POST', '/api/v1/tokens', { body: { name: 'egg-reader', scopes: ['read'] } });
    const res = await t.call('POST', '/api/v1/templates/import-egg', {
      token: reader.body.secret,
      body: { egg: egg('test-server.v2.json'), name: 'x', version: '1' },
    });
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

  it('reads a YAML egg (as Pelican exports it) and takes --image with any image reference', async () => {
    const file = join(dir, 'arma3.yaml');
    writeFileSync(file, readFileSync(new URL('arma3.plcn_v2.yaml', fixtures), 'utf8'));
    const r = await ectl([
      'templates',
      'import-egg',
      file,
      '--name',
      'arma3',
      '--version',
      '1',
      '--image',
      'registry.example.invalid/arma3:2',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/egg "Arma 3" \(PLCN_v2\) → template arma3@1: create/);
    expect(r.stdout).toMatch(
      /mapped {8}\(import option image\) → image registry\.example\.invalid\/arma3:2, which is not one of the egg's docker_images \(Debian\)/,
    );
    const stored = (await t.call('GET', '/api/v1/templates/arma3/versions/1')).body;
    expect(stored).toMatchObject({ image: 'registry.example.invalid/arma3:2', images: { Debian: 'ghcr.io/parkervcp/games:arma3' } });
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

  it("--version is the template version after the command, ectl's own version before it; --template-version is the same flag", async () => {
    expect(await ectl(['--version'])).toEqual({ code: 0, stdout: 'test\n', stderr: '' });
    const missing = await ectl(['templates', 'import-egg', join(dir, 'paper.json'), '--name', 'paper']);
    expect(missing).toMatchObject({ code: 2, stderr: 'error: import-egg needs the template version: --version V\n' });
    const both = await ectl([
      'templates',
      'import-egg',
      join(dir, 'paper.json'),
      '--name',
      'paper',
      '--version',
      '3',
      '--template-version',
      '4',
    ]);
    expect(both).toMatchObject({ code: 2, stderr: 'error: --version 3 and --template-version 4 disagree: give one\n' });
    const same = await ectl([
      'templates',
      'import-egg',
      join(dir, 'paper.json'),
      '--name',
      'paper',
      '--version',
      '1',
      '--template-version',
      '1',
      '--image',
      'Java 17',
    ]);
    expect(same.stdout).toMatch(/template paper@1 unchanged/);
    // Every other command still parses (and refuses an unknown flag) as before.
    expect((await ectl(['instances', 'ls', '--version'])).code).toBe(2);
    // The global --context is still read after the command too.
    for (const args of [
      ['--context', 'nope', 'templates', 'ls'],
      ['templates', 'ls', '--context', 'nope'],
    ]) {
      expect(await ectl(args)).toMatchObject({ code: 2, stderr: 'error: no context named "nope" (see ectl context ls)\n' });
    }
  });
});
