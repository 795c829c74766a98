// The agent's config-file edits stay inside the instance directory: no
// symlink is followed, no path escapes, a parse failure names the file.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyConfigFiles } from '../../src/agent/egg-runtime.js';

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

const edit = (path: string, parser: 'properties' | 'json' = 'properties') => [{ path, parser, edits: [{ key: 'server-port', value: '25565' }] }];

describe('applyConfigFiles', () => {
  it('edits and creates files (and parent directories) inside the instance directory', async () => {
    writeFileSync(join(root, 'server.properties'), 'server-port=1\n');
    expect(await applyConfigFiles(root, [...edit('server.properties'), ...edit('config/new.properties')])).toEqual(['server.properties', 'config/new.properties']);
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
