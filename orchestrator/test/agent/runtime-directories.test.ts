// Guards instance runtime directories: ordered layer copies through staging,
// overwrite and execute-bit rules, variant.yml removal, id validation, and
// removal that never follows a symlink out of <runtime>/instances.

import { chmod, lstat, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FsRuntimeDirectories } from '../../src/agent/runtime-directories.js';

const temps: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ec-runtime-'));
  temps.push(dir);
  return dir;
}
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tree(files: Record<string, string | { content: string; mode: number }>): Promise<string> {
  const root = await tempDir();
  for (const [path, spec] of Object.entries(files)) {
    const full = join(root, path);
    if (path.endsWith('/')) {
      await mkdir(full, { recursive: true });
      continue;
    }
    await mkdir(join(full, '..'), { recursive: true });
    const { content, mode } = typeof spec === 'string' ? { content: spec, mode: 0o644 } : spec;
    await writeFile(full, content);
    await chmod(full, mode);
  }
  return root;
}

async function setup() {
  const runtime = await tempDir();
  const dirs = new FsRuntimeDirectories({ runtimeDirectory: runtime, runtimeHostDirectory: '/host/runtime/' });
  await dirs.init();
  return { runtime, dirs, instances: join(runtime, 'instances') };
}

describe('FsRuntimeDirectories paths', () => {
  it('maps an instance id to <runtime>/instances/<id> and the host-visible twin', async () => {
    const { dirs, instances } = await setup();
    expect(dirs.localPath('lobby-1')).toBe(join(instances, 'lobby-1'));
    expect(dirs.hostPath('lobby-1')).toBe('/host/runtime/instances/lobby-1');
  });

  it.each(['..', '.', '../etc', 'a/b', '', '.staging-x', '-lead', 'a\\b', 'x'.repeat(200)])(
    'refuses the instance id %j with INVALID_ID',
    async (id) => {
      const { dirs } = await setup();
      expect(() => dirs.localPath(id)).toThrow(expect.objectContaining({ code: 'INVALID_ID' }));
      expect(() => dirs.hostPath(id)).toThrow(expect.objectContaining({ code: 'INVALID_ID' }));
      await expect(dirs.remove(id)).rejects.toMatchObject({ code: 'INVALID_ID' });
      await expect(dirs.materialize(id, [])).rejects.toMatchObject({ code: 'INVALID_ID' });
    },
  );
});

describe('FsRuntimeDirectories.materialize', () => {
  it('copies layers in order: later files overwrite earlier ones, the rest is merged', async () => {
    const { dirs } = await setup();
    const base = await tree({ 'server.properties': 'motd=base\n', 'plugins/a.jar': 'A', 'world/': '' });
    const extra = await tree({ 'server.properties': 'motd=extra\n', 'plugins/b.jar': 'B' });
    const path = await dirs.materialize('i-1', [base, extra]);
    expect(await readFile(join(path, 'server.properties'), 'utf8')).toBe('motd=extra\n');
    expect((await readdir(join(path, 'plugins'))).sort()).toEqual(['a.jar', 'b.jar']);
    expect((await stat(join(path, 'world'))).isDirectory()).toBe(true);
  });

  it('lets a later layer replace a file with a directory and a directory with a file', async () => {
    const { dirs } = await setup();
    const first = await tree({ 'thing/inner.txt': 'dir', other: 'file' });
    const second = await tree({ thing: 'now a file', 'other/inner.txt': 'now a dir' });
    const path = await dirs.materialize('swap', [first, second]);
    expect(await readFile(join(path, 'thing'), 'utf8')).toBe('now a file');
    expect(await readFile(join(path, 'other/inner.txt'), 'utf8')).toBe('now a dir');
  });

  it('keeps execute bits, including when a later layer overwrites a file', async () => {
    const { dirs } = await setup();
    const first = await tree({ 'start.sh': { content: 'old', mode: 0o644 }, 'run.sh': { content: 'x', mode: 0o755 } });
    const second = await tree({ 'start.sh': { content: '#!/bin/sh\n', mode: 0o755 } });
    const path = await dirs.materialize('exec', [first, second]);
    expect((await lstat(join(path, 'start.sh'))).mode & 0o777).toBe(0o755);
    expect((await lstat(join(path, 'run.sh'))).mode & 0o777).toBe(0o755);
  });

  it('removes every variant.yml at any depth', async () => {
    const { dirs } = await setup();
    const layer = await tree({
      'variant.yml': 'name: x',
      'config/variant.yml': 'nested',
      'config/keep.yml': 'k',
      'variant.yml.bak': 'kept',
    });
    const path = await dirs.materialize('novariant', [layer]);
    expect((await readdir(path)).sort()).toEqual(['config', 'variant.yml.bak']);
    expect(await readdir(join(path, 'config'))).toEqual(['keep.yml']);
  });

  it('builds in a .staging-<id>-<random> directory and renames it into place', async () => {
    const { dirs, instances } = await setup();
    const layer = await tree({ 'a.txt': 'a' });
    const path = await dirs.materialize('staged', [layer]);
    expect(path).toBe(join(instances, 'staged'));
    expect(await readdir(instances)).toEqual(['staged']);
  });

  it('refuses a layer holding a symlink and leaves no staging or instance directory', async () => {
    const { dirs, instances } = await setup();
    const layer = await tree({ 'a.txt': 'a' });
    await symlink('/etc', join(layer, 'etc'));
    await expect(dirs.materialize('linked', [layer])).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
    expect(await readdir(instances)).toEqual([]);
  });

  it('refuses a layer directory that is itself a symlink', async () => {
    const { dirs } = await setup();
    const layer = await tree({ 'a.txt': 'a' });
    const link = join(await tempDir(), 'layer-link');
    await symlink(layer, link);
    await expect(dirs.materialize('via-link', [link])).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
  });

  it('fails with INSTANCE_CONFLICT when the instance directory already exists (even as a symlink)', async () => {
    const { dirs, instances } = await setup();
    const layer = await tree({ 'a.txt': 'a' });
    await dirs.materialize('twice', [layer]);
    await expect(dirs.materialize('twice', [layer])).rejects.toMatchObject({ code: 'INSTANCE_CONFLICT' });
    await symlink(await tempDir(), join(instances, 'linked'));
    await expect(dirs.materialize('linked', [layer])).rejects.toMatchObject({ code: 'INSTANCE_CONFLICT' });
    expect((await readdir(instances)).sort()).toEqual(['linked', 'twice']);
  });

  it('init() removes staging directories left by a crash', async () => {
    const { dirs, instances } = await setup();
    await mkdir(join(instances, '.staging-x-123', 'deep'), { recursive: true });
    await mkdir(join(instances, 'keep-me'));
    await dirs.init();
    expect(await readdir(instances)).toEqual(['keep-me']);
  });
});

describe('FsRuntimeDirectories.remove', () => {
  it('removes the instance directory and is fine when it is already gone', async () => {
    const { dirs } = await setup();
    const path = await dirs.materialize('gone', [await tree({ 'a/b/c.txt': 'c' })]);
    await dirs.remove('gone');
    await expect(lstat(path)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(dirs.remove('gone')).resolves.toBeUndefined();
  });

  it('unlinks a symlinked instance directory without touching its target', async () => {
    const { dirs, instances } = await setup();
    const victim = await tree({ 'precious.txt': 'keep' });
    await symlink(victim, join(instances, 'evil'));
    await dirs.remove('evil');
    await expect(lstat(join(instances, 'evil'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(join(victim, 'precious.txt'), 'utf8')).toBe('keep');
  });

  it('does not follow symlinks inside the instance directory', async () => {
    const { dirs, instances } = await setup();
    const victim = await tree({ 'precious.txt': 'keep' });
    await dirs.materialize('inner-link', [await tree({ 'a.txt': 'a' })]);
    await symlink(victim, join(instances, 'inner-link', 'escape'));
    await dirs.remove('inner-link');
    expect(await readFile(join(victim, 'precious.txt'), 'utf8')).toBe('keep');
  });

  it('works when <runtime>/instances is reached through a symlink (realpath of the parent)', async () => {
    const real = await tempDir();
    const linkRoot = join(await tempDir(), 'runtime-link');
    await symlink(real, linkRoot);
    const dirs = new FsRuntimeDirectories({ runtimeDirectory: linkRoot, runtimeHostDirectory: linkRoot });
    await dirs.materialize('via', [await tree({ 'a.txt': 'a' })]);
    await dirs.remove('via');
    expect(await readdir(join(real, 'instances'))).toEqual([]);
  });
});

describe('FsRuntimeDirectories.removeScoped', () => {
  it('removes files and directories inside the instance and counts what existed', async () => {
    const { dirs } = await setup();
    const path = await dirs.materialize('scoped', [await tree({ 'world/region/r.0.0.mca': 'r', 'logs/latest.log': 'l', 'keep.txt': 'k' })]);
    expect(await dirs.removeScoped('scoped', ['world', 'logs/latest.log', 'missing/file'])).toBe(2);
    expect((await readdir(path)).sort()).toEqual(['keep.txt', 'logs']);
  });

  it.each(['/etc/passwd', '../other', 'a/../../b', '', '.', 'a//b'])('refuses the path %j before deleting anything', async (bad) => {
    const { dirs } = await setup();
    const path = await dirs.materialize('guarded', [await tree({ 'keep.txt': 'k' })]);
    await expect(dirs.removeScoped('guarded', ['keep.txt', bad])).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
    expect(await readdir(path)).toEqual(['keep.txt']);
  });

  it('refuses to traverse a symlinked parent, and unlinks a symlink named directly', async () => {
    const { dirs, instances } = await setup();
    const victim = await tree({ 'sub/precious.txt': 'keep' });
    await dirs.materialize('sym', [await tree({ 'a.txt': 'a' })]);
    await symlink(victim, join(instances, 'sym', 'link'));
    await expect(dirs.removeScoped('sym', ['link/sub'])).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
    expect(await dirs.removeScoped('sym', ['link'])).toBe(1);
    expect(await readFile(join(victim, 'sub/precious.txt'), 'utf8')).toBe('keep');
  });

  it('answers INSTANCE_NOT_FOUND for an instance without a directory', async () => {
    const { dirs } = await setup();
    await expect(dirs.removeScoped('nobody', ['x'])).rejects.toMatchObject({ code: 'INSTANCE_NOT_FOUND' });
  });
});

describe('FsRuntimeDirectories.materialize with an owner, run by a non-root agent', () => {
  // Only root may give files to another uid: an agent running as `nobody`
  // must fail with a coded error that says what to change, and leave nothing behind.
  const isRoot = process.getuid?.() === 0;
  it.skipIf(!isRoot)('fails with OWNERSHIP_FAILED naming the uid:gid and removes its staging directory', async () => {
    const base = await mkdtemp(join(tmpdir(), 'ec-owner-'));
    temps.push(base);
    await chmod(base, 0o777);
    const layer = join(base, 'layer');
    await mkdir(layer, { mode: 0o755 });
    await writeFile(join(layer, 'a.txt'), 'a', { mode: 0o644 });
    const script = [
      "import { FsRuntimeDirectories } from './src/agent/runtime-directories.ts';",
      `const dirs = new FsRuntimeDirectories({ runtimeDirectory: ${JSON.stringify(join(base, 'runtime'))}, runtimeHostDirectory: '/h' });`,
      `dirs.materialize('owned', [${JSON.stringify(layer)}], { uid: 1000, gid: 1000 })`,
      '  .then(() => console.log(JSON.stringify({ ok: true })))',
      '  .catch((e) => console.log(JSON.stringify({ code: e.code, message: e.message })));',
    ].join('\n');
    const res = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..', '..'),
      uid: 65534,
      gid: 65534,
      env: { PATH: process.env.PATH, HOME: base, TMPDIR: base },
      encoding: 'utf8',
      timeout: 30_000,
    });
    const out = JSON.parse(res.stdout.trim().split('\n').pop() ?? '{}') as { code?: string; message?: string };
    expect(out.code, res.stderr).toBe('OWNERSHIP_FAILED');
    expect(out.message).toMatch(/1000:1000/);
    expect(await readdir(join(base, 'runtime', 'instances'))).toEqual([]);
  });
});
