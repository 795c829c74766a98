// The agent's config-file edits stay inside the instance directory: no
// symlink is followed, no path escapes, a parse failure names the file.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyConfigFiles } from '../../src/agent/egg-runtime.js';
import type { ConfigFileSpec } from '../../src/domain/template.js';
import { planConfigEdits } from '../../src/eggs/config-files.js';

let base: string;
let root: string;
let outside: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'ec-egg-files-'));
  root = join(base, 'instance');
  outside = join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

const edit = (path: string, parser: 'properties' | 'json' = 'properties') => [
  { path, parser, edits: [{ key: 'server-port', value: '25565' }] },
];

describe('applyConfigFiles', () => {
  it('edits and creates files (and parent directories) inside the instance directory', async () => {
    writeFileSync(join(root, 'server.properties'), 'server-port=1\n');
    expect(await applyConfigFiles(root, [...edit('server.properties'), ...edit('config/new.properties')])).toEqual([
      'server.properties',
      'config/new.properties',
    ]);
    expect(readFileSync(join(root, 'server.properties'), 'utf8')).toBe('server-port=25565\n');
    expect(readFileSync(join(root, 'config/new.properties'), 'utf8')).toBe('server-port=25565\n');
  });

  it('reports nothing when the file already says it', async () => {
    writeFileSync(join(root, 'server.properties'), 'server-port=25565\n');
    expect(await applyConfigFiles(root, edit('server.properties'))).toEqual([]);
  });

  for (const path of ['../outside/x.properties', '/etc/passwd', 'a/../../x', '']) {
    it(`refuses the path ${JSON.stringify(path)}`, async () => {
      await expect(applyConfigFiles(root, edit(path))).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
    });
  }

  it('never follows a symlinked file or parent out of the instance directory', async () => {
    writeFileSync(join(outside, 'server.properties'), 'server-port=1\n');
    symlinkSync(join(outside, 'server.properties'), join(root, 'server.properties'));
    symlinkSync(outside, join(root, 'linked'));
    await expect(applyConfigFiles(root, edit('server.properties'))).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
    await expect(applyConfigFiles(root, edit('linked/server.properties'))).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
    expect(readFileSync(join(outside, 'server.properties'), 'utf8')).toBe('server-port=1\n');
  });

  it('a file its parser cannot read fails with the file name', async () => {
    writeFileSync(join(root, 'c.json'), '[1]');
    await expect(applyConfigFiles(root, edit('c.json', 'json'))).rejects.toThrow(/config file c\.json \(json\): not a JSON object/);
  });
});

describe('applyConfigFiles: every parser edits a real file (arrays, wildcards, value matching)', () => {
  const ctx = { port: 25565, ip: '0.0.0.0', memoryMb: 1024, env: { SERVER_NAME: 'Arma', MAX_PLAYERS: '40' } };
  const table: [string, ConfigFileSpec, string, string][] = [
    [
      'yaml (BungeeCord config.yml)',
      {
        path: 'config.yml',
        parser: 'yaml',
        find: {
          'listeners[0].host': '0.0.0.0:{{server.allocations.default.port}}',
          'servers.*.address': { 'regex:^(127\\.0\\.0\\.1|localhost)(:\\d{1,5})?$': '{{config.docker.interface}}$2' },
        },
      },
      'listeners:\n  - host: 0.0.0.0:25577\nservers:\n  lobby:\n    address: localhost:25566\n  far:\n    address: 10.1.1.1:25565\n',
      'listeners:\n  - host: 0.0.0.0:25565\nservers:\n  lobby:\n    address: 0.0.0.0:25566\n  far:\n    address: 10.1.1.1:25565\n',
    ],
    [
      'json (Arma-like, server.environment references and an index)',
      {
        path: 'profile/config.json',
        parser: 'json',
        find: {
          bindPort: '{{server.allocations.default.port}}',
          'game.name': '{{server.environment.SERVER_NAME}}',
          'game.maxPlayers': '{{env.MAX_PLAYERS}}',
          'mods[0].enabled': 'true',
          'mods.*.id': { old: 'new' },
        },
      },
      '{"bindPort": 2001, "game": {"name": "x", "maxPlayers": 8}, "mods": [{"id": "old", "enabled": false}, {"id": "keep"}]}',
      `${JSON.stringify({ bindPort: 25565, game: { name: 'Arma', maxPlayers: 40 }, mods: [{ id: 'new', enabled: true }, { id: 'keep' }] }, null, 2)}\n`,
    ],
    [
      'toml (an array of tables)',
      {
        path: 'velocity.toml',
        parser: 'toml',
        find: { bind: '0.0.0.0:{{server.allocations.default.port}}', 'servers[0].port': '{{server.build.default.port}}' },
      },
      'bind = "0.0.0.0:25577"\n\n[[servers]]\nport = 1\n',
      'bind = "0.0.0.0:25565"\n\n[[servers]]\nport = 25565\n',
    ],
    [
      'properties (value matching)',
      {
        path: 'server.properties',
        parser: 'properties',
        find: { 'server-port': '{{server.allocations.default.port}}', 'server-ip': { 'regex:^127\\.0\\.0\\.1$': '0.0.0.0' } },
      },
      'server-port=1\nserver-ip=127.0.0.1\n',
      'server-port=25565\nserver-ip=0.0.0.0\n',
    ],
    [
      'ini',
      {
        path: 'server.ini',
        parser: 'ini',
        find: { 'net.port': '{{server.allocations.default.port}}', 'net.name': '{{server.environment.SERVER_NAME}}' },
      },
      '[net]\nport=1\n',
      '[net]\nport=25565\nname=Arma\n',
    ],
    [
      'xml',
      { path: 'se.cfg', parser: 'xml', find: { 'MyConfigDedicated.ServerPort': '{{server.allocations.default.port}}' } },
      '<MyConfigDedicated>\n  <ServerPort>27016</ServerPort>\n</MyConfigDedicated>\n',
      '<MyConfigDedicated>\n  <ServerPort>25565</ServerPort>\n</MyConfigDedicated>\n',
    ],
    [
      'file',
      { path: 'server.cfg', parser: 'file', find: { 'maxPlayers = ': 'maxPlayers = {{server.environment.MAX_PLAYERS}};' } },
      'hostname = "x";\nmaxPlayers = 8;\n',
      'hostname = "x";\nmaxPlayers = 40;\n',
    ],
  ];
  for (const [name, spec, before, after] of table) {
    it(name, async () => {
      mkdirSync(join(root, 'profile'), { recursive: true });
      writeFileSync(join(root, spec.path), before);
      // The orchestrator plans (instance-config.ts), the agent applies: the same two functions production calls.
      expect(await applyConfigFiles(root, planConfigEdits([spec], ctx))).toEqual([spec.path]);
      expect(readFileSync(join(root, spec.path), 'utf8')).toBe(after);
    });
  }
});
