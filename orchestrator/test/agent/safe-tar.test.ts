// Guards safe extraction and deterministic packing of layer archives: only files
// and directories with normalised modes land on disk, every unsafe entry and
// every limit is refused with a stable code, and what was written hashes canonically.

import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmod, lstat, mkdir, mkdtemp, readFile, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { layerChecksum } from '../../src/shared/layer-checksum.js';
import { extractTarGz, packDirectory, type ExtractLimits } from '../../src/shared/safe-tar.js';
import { MALICIOUS_ENTRIES, setTypeflag, streamOf, tarBuffer, tarGzBuffer } from '../support/malicious-tar.js';

const LIMITS: ExtractLimits = { maxCompressedBytes: 1 << 20, maxExtractedBytes: 4 << 20, maxEntries: 1000 };

const temps: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ec-safe-tar-'));
  temps.push(dir);
  return dir;
}
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function sampleTree(root: string): Promise<void> {
  await mkdir(join(root, 'plugins/deep/er'), { recursive: true });
  await writeFile(join(root, 'server.jar'), Buffer.alloc(70_000, 7));
  await writeFile(join(root, 'start.sh'), '#!/bin/sh\nexec java -jar server.jar\n');
  await chmod(join(root, 'start.sh'), 0o750);
  await writeFile(join(root, 'plugins/deep/er/config.yml'), 'a: 1\n');
  await writeFile(join(root, `${'long-name-'.repeat(15)}.txt`), 'long\n');
  await writeFile(join(root, 'ünïcode.txt'), 'ü\n');
  await mkdir(join(root, 'empty'));
}

describe('packDirectory + extractTarGz', () => {
  it('round-trips a tree and reports the canonical checksum of what it wrote', async () => {
    const src = await tempDir();
    await sampleTree(src);
    const target = join(await tempDir(), 'out');
    const result = await extractTarGz(packDirectory(src), target, LIMITS);
    expect(result.checksum).toBe(await layerChecksum(src));
    expect(await layerChecksum(target)).toBe(result.checksum);
    expect(result.extractedBytes).toBe(70_000 + 36 + 5 + 5 + 3);
    expect(result.entries).toBe(9);
    expect((await lstat(join(target, 'start.sh'))).mode & 0o7777).toBe(0o755);
    expect((await lstat(join(target, 'server.jar'))).mode & 0o7777).toBe(0o644);
    expect((await lstat(join(target, 'plugins/deep'))).mode & 0o7777).toBe(0o755);
  });

  it('packs deterministically: same bytes whatever the mtimes', async () => {
    const src = await tempDir();
    await sampleTree(src);
    const first = await collect(packDirectory(src));
    await utimes(join(src, 'server.jar'), new Date(1_000_000), new Date(1_000_000));
    expect((await collect(packDirectory(src))).equals(first)).toBe(true);
  });

  it('refuses to pack a tree holding a symlink', async () => {
    const src = await tempDir();
    await writeFile(join(src, 'a.txt'), 'a');
    await symlink('/etc/passwd', join(src, 'passwd'));
    await expect(collect(packDirectory(src))).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
  });

  it('extracts GNU long-name and pax archives made by the system tar', async () => {
    const src = await tempDir();
    await sampleTree(src);
    for (const format of ['gnu', 'posix']) {
      const archive = execFileSync('tar', [`--format=${format}`, '-czf', '-', '-C', src, '.']);
      const target = join(await tempDir(), format);
      const result = await extractTarGz(streamOf(archive), target, LIMITS);
      expect(result.checksum).toBe(await layerChecksum(src));
    }
  });
});

describe('extractTarGz', () => {
  it('creates implicit parents, keeps any execute bit as 0755 and never setuid/setgid/sticky', async () => {
    const archive = await tarGzBuffer([
      { header: { name: 'a/b/tool', type: 'file', mode: 0o6711 }, body: 'bin' },
      { header: { name: 'a/sticky', type: 'directory', mode: 0o1777 } },
      { header: { name: 'a/b/data', type: 'file', mode: 0o666 }, body: 'd' },
    ]);
    const target = join(await tempDir(), 'out');
    const result = await extractTarGz(streamOf(archive), target, LIMITS);
    expect((await lstat(join(target, 'a/b/tool'))).mode & 0o7777).toBe(0o755);
    expect((await lstat(join(target, 'a/b/data'))).mode & 0o7777).toBe(0o644);
    expect((await lstat(join(target, 'a/sticky'))).mode & 0o7777).toBe(0o755);
    expect(result.checksum).toBe(await layerChecksum(target));
    expect(result.entries).toBe(5);
  });

  it('accepts a leading "./" root entry and repeated directory entries', async () => {
    const archive = await tarGzBuffer([
      { header: { name: './', type: 'directory' } },
      { header: { name: './d/f', type: 'file' }, body: 'x' },
      { header: { name: './d/', type: 'directory' } },
    ]);
    const target = join(await tempDir(), 'out');
    await extractTarGz(streamOf(archive), target, LIMITS);
    expect(await readFile(join(target, 'd/f'), 'utf8')).toBe('x');
  });

  it('refuses to extract into an existing directory', async () => {
    const target = await tempDir();
    await expect(extractTarGz(streamOf(await tarGzBuffer([])), target, LIMITS)).rejects.toMatchObject({ code: 'INTERNAL' });
  });

  for (const [kind, entries] of Object.entries(MALICIOUS_ENTRIES)) {
    it(`rejects an archive with a ${kind} as INVALID_ARCHIVE naming the entry, writing nothing outside the target`, async () => {
      const parent = await tempDir();
      const target = join(parent, 'out');
      const err = await extractTarGz(streamOf(await tarGzBuffer(entries)), target, LIMITS).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'INVALID_ARCHIVE' });
      expect((err as Error).message).toMatch(/^archive entry ".+" /);
      expect(await readdir(parent)).toEqual(['out']);
    });
  }

  it('rejects an entry type tar-stream does not know (GNU sparse)', async () => {
    const plain = await tarBuffer([{ header: { name: 'sparse', type: 'file' }, body: '' }]);
    const archive = gzipSync(setTypeflag(plain, 0, 'S'));
    const target = join(await tempDir(), 'out');
    await expect(extractTarGz(streamOf(archive), target, LIMITS)).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
  });

  it('rejects more entries than allowed as ARCHIVE_TOO_LARGE', async () => {
    const entries = Array.from({ length: 11 }, (_, i) => ({ header: { name: `f${i}`, type: 'file' as const }, body: '' }));
    const target = join(await tempDir(), 'out');
    await expect(extractTarGz(streamOf(await tarGzBuffer(entries)), target, { ...LIMITS, maxEntries: 10 })).rejects.toMatchObject({
      code: 'ARCHIVE_TOO_LARGE',
    });
  });

  it('rejects extracted content over the limit before writing it, even when it compresses well', async () => {
    const archive = await tarGzBuffer([{ header: { name: 'zeros', type: 'file' }, body: Buffer.alloc(5 << 20) }]);
    expect(archive.length).toBeLessThan(LIMITS.maxCompressedBytes);
    const target = join(await tempDir(), 'out');
    await expect(extractTarGz(streamOf(archive), target, LIMITS)).rejects.toMatchObject({ code: 'ARCHIVE_TOO_LARGE' });
    expect(await readdir(target)).toEqual([]);
  });

  it('rejects a compressed stream over the limit as ARCHIVE_TOO_LARGE', async () => {
    const archive = await tarGzBuffer([{ header: { name: 'noise', type: 'file' }, body: randomBytes(4096) }]);
    const target = join(await tempDir(), 'out');
    await expect(extractTarGz(streamOf(archive), target, { ...LIMITS, maxCompressedBytes: 100 })).rejects.toMatchObject({
      code: 'ARCHIVE_TOO_LARGE',
    });
  });

  it('rejects a gzip bomb of tar padding (zero blocks) as ARCHIVE_TOO_LARGE', async () => {
    const archive = gzipSync(Buffer.alloc(8 << 20));
    const target = join(await tempDir(), 'out');
    await expect(
      extractTarGz(streamOf(archive), target, { maxCompressedBytes: 1 << 20, maxExtractedBytes: 1 << 20, maxEntries: 10 }),
    ).rejects.toMatchObject({ code: 'ARCHIVE_TOO_LARGE' });
  });

  it.each([
    [
      'truncated gzip',
      async () => (await tarGzBuffer([{ header: { name: 'a', type: 'file' }, body: Buffer.alloc(10_000, 1) }])).subarray(0, 40),
    ],
    ['non-gzip garbage', async () => Buffer.from('this is not an archive at all, just text\n'.repeat(20))],
    ['gzip of garbage', async () => gzipSync(Buffer.from('x'.repeat(2048)))],
    ['empty input', async () => Buffer.alloc(0)],
  ])('rejects %s as INVALID_ARCHIVE', async (_name, make) => {
    const target = join(await tempDir(), 'out');
    await expect(extractTarGz(streamOf(await make()), target, LIMITS)).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
  });

  it('reports a failing source stream as UPSTREAM_FAILED (retryable)', async () => {
    const good = await tarGzBuffer([{ header: { name: 'a', type: 'file' }, body: Buffer.alloc(100_000, 1) }]);
    const source = new Readable({ read() {} });
    source.push(good.subarray(0, 50));
    setTimeout(() => source.destroy(new Error('connection reset')), 10);
    const target = join(await tempDir(), 'out');
    await expect(extractTarGz(source, target, LIMITS)).rejects.toMatchObject({ code: 'UPSTREAM_FAILED', retryable: true });
  });
});
