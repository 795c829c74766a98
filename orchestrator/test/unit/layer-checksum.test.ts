// Guards the canonical layer checksum rule (docs/layer-checksum.md) with the published
// test vector from docs/layer-checksum.md, plus the refusals of non-layer trees.

import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManifestBuilder, layerChecksum, layerManifest, normalizeLayerPath } from '../../src/shared/layer-checksum.js';

// The published vector (docs/layer-checksum.md). Do not change without a format version bump.
const VECTOR_MANIFEST = [
  'f README.md 644 6 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03',
  'd bin',
  'f bin/start.sh 755 18 299001868fb8c02fd431c336c6d058f5558c5dff5b5af5e6fe04b870a6a9cbba',
  'd config',
  'f config-old.txt 644 0 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  'f config/server.properties 644 16 c309ed4c02b9f7384f764ee168fb3febb4b0dcdfd349f749ed8cffd283499e71',
  'd empty',
  'f é.txt 644 3 599c7c0c70071ddf9568a4b07213a61a06ddb301f494a3477c69aaf04c1ad1cd',
]
  .map((line) => `${line}\n`)
  .join('');
const VECTOR_CHECKSUM = '3148597db926a6d8e8dbaeed27f8a6b1f225ffddabff1a2e3f1fea0d1e356092';

async function writeVectorTree(root: string): Promise<void> {
  await mkdir(join(root, 'bin'));
  await writeFile(join(root, 'bin/start.sh'), '#!/bin/sh\necho hi\n');
  await chmod(join(root, 'bin/start.sh'), 0o700); // any execute bit counts as 755
  await mkdir(join(root, 'config'));
  await writeFile(join(root, 'config/server.properties'), 'motd=EnderCloud\n');
  await writeFile(join(root, 'config-old.txt'), '');
  await mkdir(join(root, 'empty'));
  await writeFile(join(root, 'README.md'), 'hello\n');
  await writeFile(join(root, 'é.txt'), 'ü\n');
}

const temps: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ec-checksum-'));
  temps.push(dir);
  return dir;
}

afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('canonical layer checksum', () => {
  it('produces the published manifest and checksum for the test vector tree', async () => {
    const root = await tempDir();
    await writeVectorTree(root);
    expect(await layerManifest(root)).toBe(VECTOR_MANIFEST);
    expect(await layerChecksum(root)).toBe(VECTOR_CHECKSUM);
  });

  it('matches the shell one-liner published in docs/layer-checksum.md', async () => {
    const root = await tempDir();
    await writeVectorTree(root);
    const script = `find . -mindepth 1 -print0 | LC_ALL=C sort -z | while IFS= read -r -d '' p; do p=\${p#./}; if [ -d "$p" ]; then printf 'd %s\\n' "$p"; else m=644; [ -n "$(find "$p" -perm /111)" ] && m=755; printf 'f %s %s %s %s\\n' "$p" "$m" "$(stat -c %s "$p")" "$(sha256sum <"$p" | cut -d' ' -f1)"; fi; done | sha256sum | cut -d' ' -f1`;
    const out = execFileSync('bash', ['-c', script], { cwd: root, encoding: 'utf8' }).trim();
    expect(out).toBe(VECTOR_CHECKSUM);
  });

  it('ignores mtimes and sorts bytewise on UTF-8 (a "-" sorts before "/", uppercase before lowercase)', async () => {
    const root = await tempDir();
    await writeVectorTree(root);
    await utimes(join(root, 'README.md'), new Date(0), new Date(0));
    const manifest = await layerManifest(root);
    expect(manifest.indexOf('config-old.txt')).toBeLessThan(manifest.indexOf('config/server.properties'));
    expect(await layerChecksum(root)).toBe(VECTOR_CHECKSUM);
  });

  it('changes when content, the execute bit or an empty directory changes', async () => {
    const root = await tempDir();
    await writeVectorTree(root);
    await chmod(join(root, 'README.md'), 0o744);
    const execChanged = await layerChecksum(root);
    expect(execChanged).not.toBe(VECTOR_CHECKSUM);
    await chmod(join(root, 'README.md'), 0o600); // read/write bits alone do not matter
    expect(await layerChecksum(root)).toBe(VECTOR_CHECKSUM);
    await rm(join(root, 'empty'), { recursive: true });
    expect(await layerChecksum(root)).not.toBe(VECTOR_CHECKSUM);
  });

  it('hashes an empty tree as the SHA-256 of the empty manifest', async () => {
    const root = await tempDir();
    expect(await layerManifest(root)).toBe('');
    expect(await layerChecksum(root)).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('refuses a tree holding a symlink instead of following it', async () => {
    const root = await tempDir();
    await writeVectorTree(root);
    await symlink('/etc/passwd', join(root, 'config/link'));
    await expect(layerChecksum(root)).rejects.toMatchObject({ code: 'INVALID_ARCHIVE', message: expect.stringContaining('config/link') });
  });

  it('refuses a tree holding a fifo', async () => {
    const root = await tempDir();
    execFileSync('mkfifo', [join(root, 'pipe')]);
    await expect(layerChecksum(root)).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
  });

  it('refuses a name holding a newline, which could forge a manifest line', async () => {
    const root = await tempDir();
    await writeFile(join(root, 'a\nf b 644 0 x'), '');
    await expect(layerChecksum(root)).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
  });
});

describe('ManifestBuilder', () => {
  it('renders the same manifest whatever the insertion order', () => {
    const a = new ManifestBuilder();
    a.addFile('z', false, 0, 'e3b0');
    a.addDir('d');
    a.addFile('d/x', true, 1, 'ab');
    const b = new ManifestBuilder();
    b.addDir('d');
    b.addFile('d/x', true, 1, 'ab');
    b.addFile('z', false, 0, 'e3b0');
    b.addDir('d'); // repeating a directory is a no-op
    expect(a.manifest()).toBe('d d\nf d/x 755 1 ab\nf z 644 0 e3b0\n');
    expect(a.checksum()).toBe(b.checksum());
  });

  it('refuses a path listed as both a file and a directory', () => {
    const builder = new ManifestBuilder();
    builder.addFile('x', false, 0, 'e3b0');
    expect(() => builder.addDir('x')).toThrow();
    expect(() => builder.addFile('x', false, 0, 'e3b0')).toThrow();
  });
});

describe('normalizeLayerPath', () => {
  it.each([
    ['./a/b/', 'a/b'],
    ['a', 'a'],
    ['./', ''],
    ['.', ''],
  ])('normalizes %j to %j', (raw, expected) => {
    expect(normalizeLayerPath(raw)).toEqual({ path: expected });
  });

  it.each(['/etc/passwd', 'a/../../b', '..', 'a//b', 'a/./b', 'a\u0000b', 'a\\b', 'a\nb'])('refuses %j', (raw) => {
    expect(normalizeLayerPath(raw)).toHaveProperty('reason');
  });
});
