// The router config `npm start` writes (src/server/dev-router-config.ts): every
// group of the example network is routed on its own forced host, the file
// follows groups created and deleted later, and a file the operator took over
// is left alone. Parsed with the router's own parser.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseApplyFile } from '../../src/cli/apply-file.js';
import { parseRouterToml } from '../../src/router/config.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { devRouterToml, followGroups, groupHost, inspectRouterConfig } from '../../src/server/dev-router-config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { freePort } from '../support/registry.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/network.yml', import.meta.url));
const ADMIN_TOKEN = `admin-${'r'.repeat(24)}`;
let base: string;
let o: Orchestrator;

const api = (method: string, path: string, body?: unknown) =>
  fetch(`${o.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'ec-dev-router-'));
  o = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
    }),
    { runSupervisor: false },
  );
  expect((await api('PUT', '/templates/t/versions/1', { image: 'x:1', resources: { memoryMb: 64 } })).status).toBe(201);
});
afterAll(async () => {
  await o?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

describe('the dev stack router config', () => {
  it('routes every group of examples/network.yml on <group>.localhost, and plain localhost to lobby', async () => {
    const groups = parseApplyFile(await readFile(EXAMPLE, 'utf8'), 'network.yml').groups.map((g) => g.id);
    expect(groups).toEqual(expect.arrayContaining(['lobby', 'survival', 'minigame']));
    const routing = parseRouterToml(devRouterToml('0.0.0.0:25565', groups)).routing;
    expect(routing.try).toEqual(['lobby']);
    for (const id of groups) {
      const names = routing.forcedHosts[groupHost(id)];
      expect(names, id).toEqual([id]);
      expect(routing.servers[id]).toEqual({ kind: 'group', id });
    }
  });

  it('with no groups yet it is still a valid config', () => {
    expect(parseRouterToml(devRouterToml('127.0.0.1:25565', [])).routing).toMatchObject({ try: [], servers: {}, forcedHosts: {} });
  });

  it('follows groups created and deleted later', async () => {
    const dataDir = await mkdtemp(join(base, 'follow-'));
    const target = await inspectRouterConfig(dataDir, '127.0.0.1:25599');
    const follower = await followGroups(
      { groupIds: async () => (await o.store.groups.list()).map((g) => g.id), changes: o.ctx.changes },
      target,
      (err) => {
        throw err;
      },
    );
    try {
      const routing = async () => parseRouterToml(await readFile(target.file, 'utf8')).routing;
      expect((await routing()).servers).toEqual({});
      expect(
        (await api('PUT', '/groups/arena', { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 't', version: '1' } }] })).status,
      ).toBe(201);
      await follower.settled();
      expect((await routing()).forcedHosts['arena.localhost']).toEqual(['arena']);
      expect((await routing()).try).toEqual(['arena']);
      expect((await api('DELETE', '/groups/arena')).status).toBe(200);
      await follower.settled();
      expect((await routing()).servers).toEqual({});
    } finally {
      follower.stop();
    }
  });

  it('a file the operator took over (marker line deleted) is never rewritten; the old first-run default is', async () => {
    const dataDir = await mkdtemp(join(base, 'own-'));
    const own = 'bind = "127.0.0.1:25598"\ntry = []\n';
    await writeFile(join(dataDir, 'router.toml'), own);
    const target = await inspectRouterConfig(dataDir, '0.0.0.0:25565');
    expect(target).toMatchObject({ bind: '127.0.0.1:25598', generated: false });
    const follower = await followGroups({ groupIds: async () => ['lobby'], changes: o.ctx.changes }, target, (err) => {
      throw err;
    });
    follower.stop();
    expect(await readFile(target.file, 'utf8')).toBe(own);

    const old = [
      '# Written by `npm start` on its first run; edit freely (the router reloads on save).',
      'bind = "0.0.0.0:25565"',
      'try = ["lobby"]',
      '',
      '[servers]',
      '# A group target takes a Ready instance of the group (waking or spawning one within its caps).',
      'lobby = "group:lobby"',
      '',
    ].join('\n');
    await writeFile(join(dataDir, 'router.toml'), old);
    expect((await inspectRouterConfig(dataDir, '0.0.0.0:25565')).generated).toBe(true);
  });
});
