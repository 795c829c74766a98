// ectl apply --dry-run finds what the orchestrator would refuse before any
// write, naming file, object and field: local checks with the shared
// contracts, then the server's validate-only mode (?dryRun=true) for what needs
// the store; a changed immutable version shows its diff and says to bump.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { freePort } from '../support/registry.js';

const ADMIN_TOKEN = `admin-${'d'.repeat(24)}`;
let base: string;
let o: Orchestrator;

async function ectl(args: string[]) {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    env: { configPath: join(base, 'config.json'), urlOverride: o.url, tokenOverride: ADMIN_TOKEN },
    version: 'test',
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

const api = (method: string, path: string, body?: unknown) =>
  fetch(`${o.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

async function file(name: string, spec: string): Promise<string> {
  const path = join(base, name);
  await writeFile(
    path,
    `templates:
  - name: minecraft
    version: "1.0.0"
    spec:
      image: example/paper:1
${spec
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
groups:
  - id: lobby
    kind: ephemeral
    variants:
      - id: default
        template: minecraft@1.0.0
`,
  );
  return path;
}

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'ec-cli-dry-'));
  o = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
    }),
    { runSupervisor: false },
  );
});
afterAll(async () => {
  await o?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

describe('ectl apply --dry-run', () => {
  it('names file, object and field of each refusal, and writes nothing', async () => {
    const path = await file('bad.yml', 'resources: { memoryMb: 2G }\ncontainerport: 25565');
    const r = await ectl(['apply', '-f', path, '--dry-run']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${path}: templates[minecraft@1.0.0].spec.resources.memoryMb: must be an integer number of MiB (got "2G")`);
    expect(r.stderr).toContain(`${path}: templates[minecraft@1.0.0].spec.containerport: is not a field here (did you mean containerPort?)`);
    expect((await api('GET', '/templates/minecraft/versions/1.0.0')).status).toBe(404);
  });

  it("checks references against the orchestrator's lists: a layer never uploaded is named, nothing written", async () => {
    const path = await file('layer.yml', `resources: { memoryMb: 1024 }\nlayers: ["cfg@${'e'.repeat(64)}"]`);
    const r = await ectl(['apply', '-f', path, '--dry-run']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: templates\\[minecraft@1\\.0\\.0\\]\\.spec\\.layers\\[0\\]: layer cfg@e{64} was never uploaded .*\\(LAYER_NOT_FOUND\\)`,
      ),
    );
    expect((await api('GET', '/templates/minecraft/versions/1.0.0')).status).toBe(404);
    expect((await api('GET', '/groups/lobby')).status).toBe(404);
  });

  it('an accepted file passes the dry run (a group on a template of the same file is fine) and writes nothing; the server dry run is audited as such', async () => {
    const path = await file('good.yml', 'resources: { memoryMb: 1024 }');
    const r = await ectl(['apply', '-f', path, '--dry-run']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/dry run: nothing written/);
    expect((await api('GET', '/templates/minecraft/versions/1.0.0')).status).toBe(404);
    const direct = await api('PUT', '/templates/other/versions/1?dryRun=true', { image: 'x:1', resources: { memoryMb: 64 } });
    expect(direct.status).toBe(200);
    expect(await direct.json()).toMatchObject({ name: 'other', version: '1', dryRun: true, created: true });
    expect((await api('GET', '/templates/other/versions/1')).status).toBe(404);
  });

  it('a changed immutable version shows each changed value and says to bump the version', async () => {
    expect((await ectl(['apply', '-f', await file('v1.yml', 'resources: { memoryMb: 1024 }')])).code).toBe(0);
    const r = await ectl(['apply', '-f', await file('v2.yml', 'resources: { memoryMb: 2048 }'), '--dry-run']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('template minecraft@1.0.0 already exists with a different body:');
    expect(r.stderr).toContain('resources.memoryMb: 1024 on the orchestrator, 2048 in the file');
    expect(r.stderr).toMatch(/bump the version of minecraft/);
  });
});
