// Template layer blobs under `<data>/layers/<id>/<checksum>.tar.gz`. An upload
// streams into a private temp dir (bounded), passes the agent's own safety
// checks (extractTarGz) to get the canonical checksum, and only then is renamed
// into place and recorded: a rejected or interrupted upload leaves nothing.

import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { TemplateLayer } from '../../domain/index.js';
import { AppError, isAppError } from '../../shared/errors.js';
import { assertChecksum } from '../../shared/ids.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { receiveArchive, resetUploadDir, type ArchiveLimits } from './archive-upload.js';

export interface LayerStoreOptions extends ArchiveLimits {
  dataDir: string;
  store: Store;
  clock: Clock;
  logger: Logger;
}

export class LayerStore {
  readonly layersDir: string;
  readonly tmpDir: string;

  constructor(private readonly deps: LayerStoreOptions) {
    this.layersDir = path.join(deps.dataDir, 'layers');
    this.tmpDir = path.join(deps.dataDir, 'tmp');
  }

  /** Creates the directories and drops leftovers of uploads a crash interrupted. */
  async init(): Promise<void> {
    await resetUploadDir(this.tmpDir);
    await mkdir(this.layersDir, { recursive: true });
  }

  get maxArchiveBytes(): number {
    return this.deps.maxArchiveBytes;
  }

  blobPath(id: string, checksum: string): string {
    // Both parts were validated against strict patterns; no separators can occur.
    return path.join(this.layersDir, id, `${checksum}.tar.gz`);
  }

  async upload(id: string, source: Readable): Promise<{ layer: TemplateLayer; created: boolean }> {
    const work = await mkdtemp(path.join(this.tmpDir, 'upload-'));
    try {
      const { archive, bytes, result } = await receiveArchive(source, work, this.deps, 'layer', 'the layer');
      const existing = await this.deps.store.layers.get(id, result.checksum);
      if (existing && (await this.blobExists(id, result.checksum))) return { layer: existing, created: false };
      await mkdir(path.join(this.layersDir, id), { recursive: true });
      // Same checksum means the same tree: replacing an equal blob is harmless.
      await rename(archive, this.blobPath(id, result.checksum));
      if (existing) return { layer: existing, created: false };
      const put = await this.deps.store.layers.put({ id, checksum: result.checksum, sizeBytes: bytes, createdAt: this.deps.clock.now() });
      this.deps.logger.info({ layerId: id, checksum: result.checksum, sizeBytes: bytes }, 'template layer stored');
      return put;
    } finally {
      await rm(work, { recursive: true, force: true }).catch((err: unknown) =>
        this.deps.logger.warn({ err, work }, 'could not remove an upload work dir'),
      );
    }
  }

  private async blobExists(id: string, checksum: string): Promise<boolean> {
    return stat(this.blobPath(id, checksum)).then(
      (s) => s.isFile(),
      () => false,
    );
  }

  /**
   * Deletes every checksum of `id` (or one): refused (CONFLICT, naming the
   * users) while anything references it; the record goes first, then the blob.
   */
  async remove(id: string, checksum?: string): Promise<TemplateLayer[]> {
    if (checksum !== undefined) assertChecksum(checksum);
    const removed = await this.deps.store.layers.delete(id, checksum);
    await this.removeBlobs(removed);
    return removed;
  }

  /** Deletes every layer checksum nothing references (templates, variants, instances). */
  async prune(): Promise<TemplateLayer[]> {
    const removed: TemplateLayer[] = [];
    for (const l of await this.deps.store.layers.listUnreferenced()) {
      // Referenced meanwhile, or already gone: skip it, the rest are still pruned.
      const gone = await this.deps.store.layers
        .delete(l.id, l.checksum)
        .catch((err: unknown) => (isAppError(err) ? [] : Promise.reject(err)));
      removed.push(...gone);
    }
    await this.removeBlobs(removed);
    return removed;
  }

  private async removeBlobs(layers: readonly TemplateLayer[]): Promise<void> {
    for (const l of layers) {
      await rm(this.blobPath(l.id, l.checksum), { force: true });
      this.deps.logger.info({ layerId: l.id, checksum: l.checksum }, 'template layer deleted');
    }
  }

  /** The archive of a recorded `(id, checksum)`; LAYER_NOT_FOUND otherwise. */
  async open(id: string, checksum: string): Promise<{ stream: Readable; sizeBytes: number }> {
    assertChecksum(checksum);
    const layer = await this.deps.store.layers.get(id, checksum);
    const file = this.blobPath(id, checksum);
    const size = layer
      ? await stat(file).then(
          (s) => s.size,
          () => undefined,
        )
      : undefined;
    if (!layer || size === undefined) throw new AppError('LAYER_NOT_FOUND', `layer ${id} has no archive with checksum ${checksum}`);
    return { stream: createReadStream(file), sizeBytes: size };
  }
}
