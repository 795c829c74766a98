// `ectl apply` (the real CLI) on the shipped example files against a real
// orchestrator: the layers the file names are pushed before the templates and
// groups that use them, a second apply is "nothing to do", and apply's own
// checks leave no not-found error in the audit log.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { layerChecksum } from '../../src/shared/layer-checksum.js';
import { freePort } from '../support/registry.js';

const EXAMPLES = resolve(fileURLToPath(new URL('../../../examples/', import.meta.url)));
const ADMIN_TOKEN = `admin-${'e'.repeat(24)}`;
let base: string;
let o: Orchestrator;

async function ectl(args: string[]) {
  const output = bufferOutput();
  // cwd is orchestrator/, as after `npm start`: the file path is the banner's ../examples/network.yml.
  const code = await runCli(args, {
    output,
    env: {
      configPath: join(base, 'config.json'),
      urlOverride: o.url,
      tokenOverride: ADMIN_TOKEN,
      cwd: resolve(EXAMPLES, '..', 'orchestrator'),
    },
    version: 'test',
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

async function get<T>(path: string): Promise<T> {
  const res = await fetch(`${o.url}/api/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'ec-cli-example-'));
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

describe('ectl apply -f ../examples/network.yml', () => {
  it('the dry run shows the layer pushes and writes nothing', async () => {
    const r = await ectl(['apply', '-f', '../examples/network.yml', '--dry-run']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\+ layer lobby-config +push {2}\.\.\/examples\/layers\/lobby \([0-9a-f]{12}\)$/m);
    expect(r.stdout).toMatch(/2 layer\(s\) to push, 4 to create, 0 to update, 0 unchanged, 0 in conflict/);
    expect((await get<{ layers: unknown[] }>('/template-layers')).layers).toEqual([]);
  });

  it('pushes the layers, then creates the template and groups; a second apply has nothing to do', async () => {
    const first = await ectl(['apply', '-f', '../examples/network.yml']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.split('\n').filter((l) => /^(pushed|created) /.test(l))).toEqual([
      'pushed layer lobby-config',
      'pushed layer survival-config',
      'created template mc-local@1.0.0',
      'created group lobby',
      'created group survival',
      'created group minigame',
    ]);
    const lobbySum = await layerChecksum(join(EXAMPLES, 'layers', 'lobby'));
    const layers = (await get<{ layers: { id: string; checksum: string }[] }>('/template-layers')).layers;
    expect(layers.map((l) => `${l.id}@${l.checksum}`)).toContain(`lobby-config@${lobbySum}`);
    const lobby = await get<{ variants: { extraLayers: unknown[] }[]; scaling: { minInstances: number } | null }>('/groups/lobby');
    expect(lobby.variants[0]!.extraLayers).toEqual([{ id: 'lobby-config', checksum: lobbySum }]);
    expect(lobby.scaling?.minInstances).toBe(1);
    expect((await get<{ backup?: { schedule: string } }>('/groups/survival')).backup?.schedule).toBe('0 4 * * *');
    expect((await get<{ scaling: { minInstances: number } | null }>('/groups/minigame')).scaling?.minInstances).toBe(0);

    const second = await ectl(['apply', '-f', '../examples/network.yml']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^= layer lobby-config +unchanged/m);
    expect(second.stdout).toMatch(/0 layer\(s\) to push, 0 to create, 0 to update, 6 unchanged, 0 in conflict\nnothing to do\n$/);
    expect((await get<{ layers: unknown[] }>('/template-layers')).layers).toHaveLength(2);
  });

  it('the real-Minecraft file passes a dry run on top (groups move to its template)', async () => {
    const r = await ectl(['apply', '-f', '../examples/network-itzg.yml', '--dry-run']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\+ template minecraft@1\.0\.0 +create$/m);
    expect(r.stdout).toMatch(/^~ group survival +update$/m);
  });

  it('the fleet example applies on top', async () => {
    const r = await ectl(['apply', '-f', '../examples/fleet.yml']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/created group bedwars/);
  });

  it("apply's own checks leave no not-found error in the audit log", async () => {
    const { entries } = await get<{ entries: { action: string; result: string; errorCode?: string | null }[] }>('/audit?limit=500');
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.filter((e) => e.result !== 'ok')).toEqual([]);
  });
});
