// Guards the agent's template layer cache against a real HTTP server on
// 127.0.0.1: verified downloads, one download for concurrent callers, the bearer
// token, and every kind of malicious or broken archive rejected with its code
// and nothing left in the cache or staging.

import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { access, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FsLayerCache, HttpLayerSource } from '../../src/agent/layer-cache.js';
import { createLogger } from '../../src/shared/logger.js';
import { layerChecksum } from '../../src/shared/layer-checksum.js';
import { packDirectory } from '../../src/shared/safe-tar.js';
import { MALICIOUS_ENTRIES, tarGzBuffer } from '../support/malicious-tar.js';

interface Served {
  body: Buffer;
  delayMs?: number;
  /** Send this many bytes, then go silent without ending. */
  stallAfter?: number;
}

const archives = new Map<string, Served>();
const requests: Array<{ url: string; authorization: string | undefined }> = [];
let server: Server;
let baseUrl: string;
const stalled = new Set<ServerResponse>();

function handle(req: IncomingMessage, res: ServerResponse): void {
  requests.push({ url: req.url ?? '', authorization: req.headers.authorization });
  const match = /^\/api\/v1\/template-layers\/([^/]+)\/archive\?checksum=([0-9a-f]{64})$/.exec(req.url ?? '');
  const served = match ? archives.get(decodeURIComponent(match[1]!)) : undefined;
  if (match?.[1] === 'broken') {
    res.writeHead(500).end('boom');
    return;
  }
  if (!served) {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"LAYER_NOT_FOUND","message":"no"}}');
    return;
  }
  setTimeout(() => {
    res.writeHead(200, { 'content-type': 'application/gzip' });
    if (served.stallAfter !== undefined) {
      res.write(served.body.subarray(0, served.stallAfter));
      stalled.add(res);
      return;
    }
    res.end(served.body);
  }, served.delayMs ?? 0);
}

const logger = createLogger('layer-cache-test', 'silent');
const temps: string[] = [];
let treeChecksum: string;
let treeArchive: Buffer;

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ec-layer-cache-'));
  temps.push(dir);
  return dir;
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function newCache(options: { token?: string; maxArchiveBytes?: number; maxExtractedBytes?: number; timeoutMs?: number } = {}) {
  const directory = join(await tempDir(), 'cache');
  const source = new HttpLayerSource({ orchestratorUrl: `${baseUrl}/`, token: options.token, timeoutMs: options.timeoutMs ?? 5000 });
  const cache = new FsLayerCache({
    directory,
    source,
    maxArchiveBytes: options.maxArchiveBytes ?? 1 << 20,
    maxExtractedBytes: options.maxExtractedBytes ?? 4 << 20,
    logger,
  });
  await cache.init();
  return { cache, directory };
}

/** The cache holds nothing but an empty staging directory. */
async function expectNoTrace(directory: string): Promise<void> {
  expect(await readdir(directory)).toEqual(['.staging']);
  expect(await readdir(join(directory, '.staging'))).toEqual([]);
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const tree = await tempDir();
  await mkdir(join(tree, 'plugins'));
  await writeFile(join(tree, 'plugins/a.yml'), 'a: 1\n');
  await writeFile(join(tree, 'variant.yml'), 'name: lobby\n');
  treeChecksum = await layerChecksum(tree);
  treeArchive = await collect(packDirectory(tree));
});

afterEach(() => {
  archives.clear();
  requests.length = 0;
  for (const res of stalled) res.destroy();
  stalled.clear();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('FsLayerCache with HttpLayerSource', () => {
  it('downloads a miss into <cache>/<id>/<checksum> and serves the next call from disk', async () => {
    archives.set('lobby-base', { body: treeArchive });
    const { cache, directory } = await newCache();
    const path = await cache.ensure({ id: 'lobby-base', checksum: treeChecksum });
    expect(path).toBe(join(directory, 'lobby-base', treeChecksum));
    expect(await readFile(join(path, 'plugins/a.yml'), 'utf8')).toBe('a: 1\n');
    expect(await layerChecksum(path)).toBe(treeChecksum);
    expect(await cache.ensure({ id: 'lobby-base', checksum: treeChecksum })).toBe(path);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe(`/api/v1/template-layers/lobby-base/archive?checksum=${treeChecksum}`);
    expect(await readdir(join(directory, '.staging'))).toEqual([]);
  });

  it('shares one HTTP request among 10 concurrent ensure() calls for the same layer', async () => {
    archives.set('shared', { body: treeArchive, delayMs: 150 });
    const { cache } = await newCache();
    const paths = await Promise.all(Array.from({ length: 10 }, () => cache.ensure({ id: 'shared', checksum: treeChecksum })));
    expect(new Set(paths).size).toBe(1);
    expect(requests).toHaveLength(1);
  });

  it('sends the agent token as a bearer header', async () => {
    archives.set('secured', { body: treeArchive });
    const { cache } = await newCache({ token: 's3cret-token' });
    await cache.ensure({ id: 'secured', checksum: treeChecksum });
    expect(requests[0]!.authorization).toBe('Bearer s3cret-token');
  });

  it('sends no authorization header without a token', async () => {
    archives.set('open', { body: treeArchive });
    const { cache } = await newCache();
    await cache.ensure({ id: 'open', checksum: treeChecksum });
    expect(requests[0]!.authorization).toBeUndefined();
  });

  it('maps 404 to LAYER_NOT_FOUND and 500 to a retryable UPSTREAM_FAILED, leaving no trace', async () => {
    const { cache, directory } = await newCache();
    await expect(cache.ensure({ id: 'missing', checksum: treeChecksum })).rejects.toMatchObject({ code: 'LAYER_NOT_FOUND' });
    await expect(cache.ensure({ id: 'broken', checksum: treeChecksum })).rejects.toMatchObject({
      code: 'UPSTREAM_FAILED',
      retryable: true,
    });
    await expectNoTrace(directory);
  });

  it('validates ids and checksums before any request', async () => {
    const { cache } = await newCache();
    await expect(cache.ensure({ id: '../etc', checksum: treeChecksum })).rejects.toMatchObject({ code: 'INVALID_ID' });
    await expect(cache.ensure({ id: '.staging', checksum: treeChecksum })).rejects.toMatchObject({ code: 'INVALID_ID' });
    await expect(cache.ensure({ id: 'ok', checksum: 'ABC' })).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    const source = new HttpLayerSource({ orchestratorUrl: baseUrl, timeoutMs: 1000 });
    await expect(source.fetchArchive({ id: 'a/b', checksum: treeChecksum })).rejects.toMatchObject({ code: 'INVALID_ID' });
    expect(requests).toHaveLength(0);
  });

  it('fails with UPSTREAM_FAILED when the orchestrator goes silent mid-download, leaving no trace', async () => {
    archives.set('stalls', { body: treeArchive, stallAfter: 20 });
    const { cache, directory } = await newCache({ timeoutMs: 200 });
    const started = Date.now();
    await expect(cache.ensure({ id: 'stalls', checksum: treeChecksum })).rejects.toMatchObject({ code: 'UPSTREAM_FAILED' });
    expect(Date.now() - started).toBeLessThan(3000);
    await expectNoTrace(directory);
  });

  it('clears stale staging directories at init()', async () => {
    const { cache, directory } = await newCache();
    await mkdir(join(directory, '.staging', 'left-by-a-crash', 'deep'), { recursive: true });
    await cache.init();
    await expectNoTrace(directory);
  });

  it('recovers after a rejected download: the next good archive is cached', async () => {
    const { cache } = await newCache();
    archives.set('retry', { body: Buffer.from('garbage') });
    await expect(cache.ensure({ id: 'retry', checksum: treeChecksum })).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
    archives.set('retry', { body: treeArchive });
    await expect(cache.ensure({ id: 'retry', checksum: treeChecksum })).resolves.toContain(treeChecksum);
  });
});

describe('malicious and broken archives are rejected with nothing left behind', () => {
  const rejectedKinds = [
    'symlink',
    'hardlink',
    'character device',
    'block device',
    'fifo',
    'absolute path',
    "'../' escape",
    'nested escape',
  ];
  for (const kind of rejectedKinds) {
    it(`rejects a ${kind} entry as INVALID_ARCHIVE`, async () => {
      archives.set('evil', { body: await tarGzBuffer(MALICIOUS_ENTRIES[kind]!) });
      const { cache, directory } = await newCache();
      await expect(cache.ensure({ id: 'evil', checksum: treeChecksum })).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
      await expectNoTrace(directory);
      await expect(access(join(directory, '..', 'escape.txt'))).rejects.toThrow();
      await expect(access('/tmp/endercloud-escape.txt')).rejects.toThrow();
    });
  }

  it('rejects an archive over the compressed size limit as ARCHIVE_TOO_LARGE', async () => {
    const body = await tarGzBuffer([{ header: { name: 'noise.bin', type: 'file' }, body: randomBytes(64 * 1024) }]);
    expect(body.length).toBeGreaterThan(32 * 1024);
    archives.set('big', { body });
    const { cache, directory } = await newCache({ maxArchiveBytes: 16 * 1024 });
    await expect(cache.ensure({ id: 'big', checksum: treeChecksum })).rejects.toMatchObject({ code: 'ARCHIVE_TOO_LARGE' });
    await expectNoTrace(directory);
  });

  it('rejects an archive over the extracted size limit (a well-compressing bomb) as ARCHIVE_TOO_LARGE', async () => {
    archives.set('bomb', { body: await tarGzBuffer([{ header: { name: 'zeros', type: 'file' }, body: Buffer.alloc(8 << 20) }]) });
    const { cache, directory } = await newCache({ maxExtractedBytes: 1 << 20 });
    await expect(cache.ensure({ id: 'bomb', checksum: treeChecksum })).rejects.toMatchObject({ code: 'ARCHIVE_TOO_LARGE' });
    await expectNoTrace(directory);
  });

  it('rejects a valid archive whose content does not match the checksum as CHECKSUM_MISMATCH', async () => {
    archives.set('other', { body: await tarGzBuffer([{ header: { name: 'x.txt', type: 'file' }, body: 'x' }]) });
    const { cache, directory } = await newCache();
    const err = await cache.ensure({ id: 'other', checksum: treeChecksum }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'CHECKSUM_MISMATCH', details: { expected: treeChecksum } });
    await expectNoTrace(directory);
  });

  it('rejects a truncated gzip stream as INVALID_ARCHIVE', async () => {
    archives.set('cut', { body: treeArchive.subarray(0, Math.floor(treeArchive.length / 2)) });
    const { cache, directory } = await newCache();
    await expect(cache.ensure({ id: 'cut', checksum: treeChecksum })).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
    await expectNoTrace(directory);
  });

  it('rejects non-gzip garbage as INVALID_ARCHIVE', async () => {
    archives.set('junk', { body: Buffer.from('<html>not a layer</html>\n'.repeat(50)) });
    const { cache, directory } = await newCache();
    await expect(cache.ensure({ id: 'junk', checksum: treeChecksum })).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
    await expectNoTrace(directory);
  });

  it('rejects a gzip of something that is not a tar as INVALID_ARCHIVE', async () => {
    archives.set('gzjunk', { body: gzipSync(Buffer.from('plain text, gzipped\n'.repeat(100))) });
    const { cache, directory } = await newCache();
    await expect(cache.ensure({ id: 'gzjunk', checksum: treeChecksum })).rejects.toMatchObject({ code: 'INVALID_ARCHIVE' });
    await expectNoTrace(directory);
  });
});
