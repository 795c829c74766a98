// The agent's template layer cache: verified, immutable trees under
// `<cache>/<layer-id>/<checksum>`, downloaded from the orchestrator on a miss.
//
// Contracts:
// - `new HttpLayerSource({ orchestratorUrl, token?, timeoutMs, fetch? })`:
//   `fetchArchive(ref)` validates id and checksum before any request, then GETs
//   `{orchestratorUrl}/api/v1/template-layers/{id}/archive?checksum=<sha256>` (with
//   `Authorization: Bearer <token>` when set). 404 → LAYER_NOT_FOUND; any other
//   failure → UPSTREAM_FAILED. `timeoutMs` bounds the wait for the response and
//   every silence between body chunks, not the whole download (layers can be big).
// - `new FsLayerCache({ directory, source, maxArchiveBytes, maxExtractedBytes, maxEntries?, logger })`:
//   `init()` creates the cache and clears `.staging` left by a crash (so one cache
//   directory belongs to one agent); `ensure(ref)` returns the layer directory (a
//   hit is that exact directory existing), otherwise downloads into
//   `.staging/<random>`, checks the canonical checksum (CHECKSUM_MISMATCH), and
//   renames into place. Concurrent calls for one ref share one download; a failure
//   leaves nothing in the cache or staging.

import { randomUUID } from 'node:crypto';
import { lstat, mkdir, rename, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { AppError } from '../shared/errors.js';
import { assertChecksum, assertId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import { extractTarGz } from '../shared/safe-tar.js';
import type { LayerCache, LayerRef, LayerSource } from './contracts.js';
import { errnoCode } from '../shared/fs-errors.js';

export interface HttpLayerSourceOptions {
  orchestratorUrl: string;
  token?: string | undefined;
  timeoutMs: number;
  /** Injected for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
}

function validateRef(ref: LayerRef): LayerRef {
  return { id: assertId('layer id', ref.id), checksum: assertChecksum(ref.checksum) };
}

export class HttpLayerSource implements LayerSource {
  private readonly base: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: HttpLayerSourceOptions) {
    this.base = options.orchestratorUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? fetch;
  }

  archiveUrl(ref: LayerRef): string {
    const { id, checksum } = validateRef(ref);
    return `${this.base}/api/v1/template-layers/${encodeURIComponent(id)}/archive?checksum=${checksum}`;
  }

  async fetchArchive(ref: LayerRef, signal?: AbortSignal): Promise<Readable> {
    const url = this.archiveUrl(ref);
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, this.options.timeoutMs);
    };
    const disarm = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const headers: Record<string, string> = { accept: 'application/gzip' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    const what = `layer ${ref.id}@${ref.checksum.slice(0, 12)}`;
    const failure = (err: unknown): AppError =>
      new AppError(
        'UPSTREAM_FAILED',
        timedOut
          ? `download of ${what} timed out after ${this.options.timeoutMs} ms of silence`
          : `download of ${what} failed: ${(err as Error).message}`,
        { cause: err },
      );

    arm();
    let response: Response;
    try {
      response = await this.fetchImpl(url, { headers, signal: controller.signal });
    } catch (err) {
      disarm();
      throw failure(err);
    }
    if (!response.ok || response.body === null) {
      disarm();
      await response.body?.cancel().catch(() => undefined);
      if (response.status === 404) throw new AppError('LAYER_NOT_FOUND', `the orchestrator has no ${what}`);
      throw new AppError('UPSTREAM_FAILED', `the orchestrator answered ${response.status} for ${what}`, {
        retryable: response.status >= 500 || response.status === 429,
      });
    }
    const body = Readable.fromWeb(response.body as unknown as WebReadableStream<Uint8Array>);
    // Re-arms the silence timer on every chunk and turns transport errors into AppErrors.
    const watched = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        arm();
        callback(null, chunk);
      },
      flush(callback) {
        disarm();
        callback();
      },
    });
    body.on('error', (err) => {
      disarm();
      watched.destroy(failure(err));
    });
    watched.on('close', () => {
      disarm();
      body.destroy();
    });
    body.pipe(watched);
    return watched;
  }
}

export interface FsLayerCacheOptions {
  directory: string;
  source: LayerSource;
  maxArchiveBytes: number;
  maxExtractedBytes: number;
  maxEntries?: number;
  logger: Logger;
}

const STAGING = '.staging';

export class FsLayerCache implements LayerCache {
  private readonly inflight = new Map<string, Promise<string>>();
  private readonly stagingDir: string;

  constructor(private readonly options: FsLayerCacheOptions) {
    this.stagingDir = join(options.directory, STAGING);
  }

  /** Creates the cache and clears staging dirs a crashed run left behind. */
  async init(): Promise<void> {
    await mkdir(this.options.directory, { recursive: true });
    await rm(this.stagingDir, { recursive: true, force: true });
    await mkdir(this.stagingDir, { recursive: true });
  }

  /** Where a verified layer lives (whether or not it is there yet). */
  layerPath(ref: LayerRef): string {
    const { id, checksum } = validateRef(ref);
    return join(this.options.directory, id, checksum);
  }

  async has(ref: LayerRef): Promise<boolean> {
    try {
      return (await lstat(this.layerPath(ref))).isDirectory();
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return false;
      throw err;
    }
  }

  ensure(ref: LayerRef): Promise<string> {
    let path: string;
    try {
      path = this.layerPath(ref);
    } catch (err) {
      return Promise.reject(err);
    }
    const key = `${ref.id}/${ref.checksum}`;
    const running = this.inflight.get(key);
    if (running) return running;
    const task = this.ensureUncached(ref, path).finally(() => this.inflight.delete(key));
    this.inflight.set(key, task);
    return task;
  }

  private async ensureUncached(ref: LayerRef, path: string): Promise<string> {
    if (await this.has(ref)) return path;
    return this.download(ref, path);
  }

  private async download(ref: LayerRef, path: string): Promise<string> {
    const { logger } = this.options;
    const started = Date.now();
    const staging = join(this.stagingDir, randomUUID());
    const layerDir = join(this.options.directory, ref.id);
    let createdLayerDir = false;
    logger.info({ layerId: ref.id, checksum: ref.checksum }, 'layer cache miss: downloading');
    try {
      await mkdir(this.stagingDir, { recursive: true });
      const archive = await this.options.source.fetchArchive(ref);
      const result = await extractTarGz(archive, staging, {
        maxCompressedBytes: this.options.maxArchiveBytes,
        maxExtractedBytes: this.options.maxExtractedBytes,
        ...(this.options.maxEntries === undefined ? {} : { maxEntries: this.options.maxEntries }),
      });
      if (result.checksum !== ref.checksum) {
        throw new AppError(
          'CHECKSUM_MISMATCH',
          `layer ${ref.id}: archive content has checksum ${result.checksum}, expected ${ref.checksum}`,
          {
            details: { layerId: ref.id, expected: ref.checksum, actual: result.checksum },
          },
        );
      }
      createdLayerDir = (await mkdir(layerDir, { recursive: true })) !== undefined;
      await this.moveIntoPlace(staging, path);
      logger.info(
        {
          layerId: ref.id,
          checksum: ref.checksum,
          compressedBytes: result.compressedBytes,
          extractedBytes: result.extractedBytes,
          entries: result.entries,
          durationMs: Date.now() - started,
        },
        'layer cached',
      );
      return path;
    } catch (err) {
      await rm(staging, { recursive: true, force: true });
      if (createdLayerDir) await rmdir(layerDir).catch(() => undefined); // only if still empty
      logger.warn(
        { layerId: ref.id, checksum: ref.checksum, code: (err as AppError).code, err: (err as Error).message },
        'layer download rejected',
      );
      throw err;
    }
  }

  private async moveIntoPlace(staging: string, path: string): Promise<void> {
    try {
      await rename(staging, path);
    } catch (err) {
      // Another process verified the same immutable layer first: theirs is as good as ours.
      const code = errnoCode(err);
      if ((code === 'ENOTEMPTY' || code === 'EEXIST') && (await lstat(path)).isDirectory()) {
        await rm(staging, { recursive: true, force: true });
        return;
      }
      throw err;
    }
  }
}
