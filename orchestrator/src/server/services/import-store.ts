// Imports of existing data (a Minecraft world) for new instances, kept under
// `<data>/imports/<uploadId>.tar.gz` + `.json` (the inspection). An upload is
// streamed to a private temp dir (bounded), validated with the shared safe
// extractor (same rules as layers), inspected, and only then kept: a rejected or
// interrupted upload leaves nothing.

import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Clock } from '../clock.js';
import { receiveArchive, resetUploadDir, type ArchiveLimits } from './archive-upload.js';
import { inspectWorldTree, type ImportInspection } from './import-inspection.js';

export interface ImportRecord extends ImportInspection {
  uploadId: string;
  entries: number;
  sizeBytes: number;
  createdAt: number;
}

export interface ImportStoreOptions extends ArchiveLimits {
  dataDir: string;
  clock: Clock;
  logger: Logger;
  /** Upload ids; random by default. */
  newId?: () => string;
}

const UPLOAD_ID = /^imp-[0-9a-f]{12,32}$/;

export class ImportStore {
  readonly dir: string;
  private readonly tmpDir: string;

  constructor(private readonly deps: ImportStoreOptions) {
    this.dir = path.join(deps.dataDir, 'imports');
    this.tmpDir = path.join(this.dir, '.tmp');
  }

  /** Creates the directories and drops leftovers of uploads a crash interrupted. */
  async init(): Promise<void> {
    await resetUploadDir(this.tmpDir);
  }

  get maxArchiveBytes(): number {
    return this.deps.maxArchiveBytes;
  }

  private files(uploadId: string): { archive: string; meta: string } | undefined {
    if (!UPLOAD_ID.test(uploadId)) return undefined; // never a path: the id is checked before use
    return { archive: path.join(this.dir, `${uploadId}.tar.gz`), meta: path.join(this.dir, `${uploadId}.json`) };
  }

  async upload(source: Readable): Promise<ImportRecord> {
    await mkdir(this.tmpDir, { recursive: true });
    const work = await mkdtemp(path.join(this.tmpDir, 'upload-'));
    try {
      const { archive, tree, bytes, result } = await receiveArchive(source, work, this.deps, 'import', 'the world');
      const uploadId = this.deps.newId?.() ?? `imp-${randomBytes(8).toString('hex')}`;
      const files = this.files(uploadId);
      if (!files) throw new AppError('INTERNAL', `generated upload id ${uploadId} is malformed`);
      const record: ImportRecord = {
        uploadId,
        entries: result.entries,
        sizeBytes: bytes,
        createdAt: this.deps.clock.now(),
        ...(await inspectWorldTree(tree)),
      };
      await rename(archive, files.archive);
      // The inspection last: an archive without one is not an upload (see get()).
      await writeFile(path.join(work, 'meta.json'), JSON.stringify(record), { mode: 0o600 });
      await rename(path.join(work, 'meta.json'), files.meta);
      this.deps.logger.info({ uploadId, sizeBytes: record.sizeBytes, confidence: record.confidence }, 'import stored');
      return record;
    } finally {
      await rm(work, { recursive: true, force: true }).catch((err: unknown) =>
        this.deps.logger.warn({ err, work }, 'could not remove an import work dir'),
      );
    }
  }

  /** The record of a kept upload, undefined when unknown (or a malformed id). */
  async get(uploadId: string): Promise<ImportRecord | undefined> {
    const files = this.files(uploadId);
    if (!files) return undefined;
    try {
      const record = JSON.parse(await readFile(files.meta, 'utf8')) as ImportRecord;
      return (await stat(files.archive).then(
        (s) => s.isFile(),
        () => false,
      ))
        ? record
        : undefined;
    } catch {
      return undefined;
    }
  }

  /** The archive of a kept upload; NOT_FOUND otherwise. */
  async open(uploadId: string): Promise<{ stream: Readable; sizeBytes: number }> {
    const files = this.files(uploadId);
    const size = files
      ? await stat(files.archive).then(
          (s) => s.size,
          () => undefined,
        )
      : undefined;
    if (!files || size === undefined) throw new AppError('NOT_FOUND', `import upload ${uploadId} does not exist`);
    return { stream: createReadStream(files.archive), sizeBytes: size };
  }

  async list(): Promise<string[]> {
    return (await readdir(this.dir))
      .filter((n) => n.endsWith('.json'))
      .map((n) => n.slice(0, -5))
      .sort();
  }
}
