// Safe streaming extraction and deterministic packing of layer archives (gzip
// tar). Shared by the agent's layer cache, the orchestrator's upload and ectl, so
// nothing here knows about either side.
//
// Contracts:
// - `extractTarGz(stream, targetDir, limits)`: creates `targetDir` (which must not
//   exist; its parent must), writes only regular files (0644, or 0755 when the
//   header has any execute bit) and directories (0755), and returns the canonical
//   checksum of what it wrote plus byte/entry counts. It throws AppError
//   INVALID_ARCHIVE (naming the entry and the reason), ARCHIVE_TOO_LARGE, or
//   UPSTREAM_FAILED when the source stream itself fails. After a failure the
//   caller removes `targetDir` (it may hold a partial tree).
// - `packDirectory(dir)`: a gzip tar of a layer tree in a deterministic order with
//   normalised headers (mode 0755/0644, uid/gid 0, mtime 0); the stream errors with
//   INVALID_ARCHIVE if the tree holds anything but files and directories.

import { createHash } from 'node:crypto';
import { constants as fsConstants, createReadStream } from 'node:fs';
import { chmod, mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { AppError, isAppError } from './errors.js';
import { ManifestBuilder, manifestMode, normalizeLayerPath, walkLayerTree } from './layer-checksum.js';

/** One archive entry as tar-stream yields it (its header plus a content stream). */
type TarEntry = tar.ExtractEvents['entry'][1];

export interface ExtractLimits {
  /** Bytes read from the (gzip) source before giving up. */
  maxCompressedBytes: number;
  /** Sum of regular file sizes. */
  maxExtractedBytes: number;
  /** Files plus directories (implicit parents included). */
  maxEntries?: number;
}

export interface ExtractResult {
  checksum: string;
  compressedBytes: number;
  extractedBytes: number;
  entries: number;
}

export const DEFAULT_MAX_ENTRIES = 100_000;

const WRITE_FLAGS = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;
// Errors that an archive's own content provokes while writing (name too long,
// clashing paths); anything else (disk full, permissions) is the host's problem.
const ARCHIVE_FS_ERRORS = new Set(['EEXIST', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'ELOOP']);

/** Counts bytes flowing through and fails with ARCHIVE_TOO_LARGE once a limit is crossed. */
export class ByteLimit extends Transform {
  bytes = 0;
  constructor(
    private readonly limit: number,
    private readonly what: string,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      callback(new AppError('ARCHIVE_TOO_LARGE', `${this.what} exceeds the limit of ${this.limit} bytes`));
      return;
    }
    callback(null, chunk);
  }
}

function invalid(entry: string, reason: string): AppError {
  return new AppError('INVALID_ARCHIVE', `archive entry ${JSON.stringify(entry)} ${reason}`, { details: { entry } });
}

class ExtractionState {
  readonly builder = new ManifestBuilder();
  extractedBytes = 0;
  entries = 0;

  constructor(
    readonly root: string,
    readonly limits: Required<ExtractLimits>,
  ) {}

  countEntry(): void {
    this.entries += 1;
    if (this.entries > this.limits.maxEntries) {
      throw new AppError('ARCHIVE_TOO_LARGE', `archive has more than ${this.limits.maxEntries} entries`);
    }
  }

  async makeDir(path: string): Promise<void> {
    this.countEntry();
    const abs = join(this.root, path);
    await mkdir(abs, { mode: 0o755 });
    await chmod(abs, 0o755); // the umask must not decide a layer's permissions
    this.builder.addDir(path);
  }

  /** Creates missing parents (tars may omit directory entries) and refuses file parents. */
  async ensureParents(name: string, path: string): Promise<void> {
    const segments = path.split('/');
    for (let i = 1; i < segments.length; i += 1) {
      const parent = segments.slice(0, i).join('/');
      const kind = this.builder.kindOf(parent);
      if (kind === 'f') throw invalid(name, `needs ${JSON.stringify(parent)} to be a directory, but an earlier entry made it a file`);
      if (kind === undefined) await this.makeDir(parent);
    }
  }
}

async function drain(entry: TarEntry): Promise<void> {
  for await (const _chunk of entry) {
    // directories carry no data; reading keeps the parser moving
  }
}

async function writeFile(state: ExtractionState, entry: TarEntry, name: string, path: string): Promise<void> {
  const declared = entry.header.size ?? 0;
  if (state.extractedBytes + declared > state.limits.maxExtractedBytes) {
    throw new AppError(
      'ARCHIVE_TOO_LARGE',
      `extracted content exceeds the limit of ${state.limits.maxExtractedBytes} bytes (at entry ${JSON.stringify(name)})`,
    );
  }
  const executable = manifestMode(entry.header.mode ?? 0) === '755';
  const mode = executable ? 0o755 : 0o644;
  const hash = createHash('sha256');
  let size = 0;
  const handle = await open(join(state.root, path), WRITE_FLAGS, mode);
  try {
    await handle.chmod(mode);
    for await (const chunk of entry) {
      const buffer = chunk as Buffer;
      size += buffer.length;
      state.extractedBytes += buffer.length;
      if (state.extractedBytes > state.limits.maxExtractedBytes) {
        throw new AppError('ARCHIVE_TOO_LARGE', `extracted content exceeds the limit of ${state.limits.maxExtractedBytes} bytes`);
      }
      hash.update(buffer);
      await handle.write(buffer);
    }
  } finally {
    await handle.close();
  }
  state.builder.addFile(path, executable, size, hash.digest('hex'));
}

async function extractEntry(state: ExtractionState, entry: TarEntry): Promise<void> {
  const { name, type } = entry.header;
  if (type !== 'file' && type !== 'directory') {
    throw invalid(name, `is a ${type ?? 'non-standard entry'}: only regular files and directories are allowed`);
  }
  const normalized = normalizeLayerPath(name);
  if ('reason' in normalized) throw invalid(name, normalized.reason);
  const { path } = normalized;
  if (type === 'directory') {
    if ((entry.header.size ?? 0) !== 0) throw invalid(name, 'is a directory with a data size');
    if (path !== '') {
      await state.ensureParents(name, path);
      const kind = state.builder.kindOf(path);
      if (kind === 'f') throw invalid(name, 'would turn an earlier file into a directory');
      if (kind === undefined) await state.makeDir(path);
    }
    await drain(entry);
    return;
  }
  if (path === '') throw invalid(name, 'is a file in place of the archive root');
  await state.ensureParents(name, path);
  const kind = state.builder.kindOf(path);
  if (kind === 'd') throw invalid(name, 'would turn an earlier directory into a file');
  if (kind === 'f') throw invalid(name, 'is a duplicate of an earlier file');
  state.countEntry();
  try {
    await writeFile(state, entry, name, path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== undefined && ARCHIVE_FS_ERRORS.has(code)) throw invalid(name, `cannot be written (${code})`);
    throw err;
  }
}

function classify(err: unknown, sourceError: unknown): AppError {
  if (isAppError(err)) return err;
  if (sourceError !== undefined) {
    if (isAppError(sourceError)) return sourceError;
    return new AppError('UPSTREAM_FAILED', `archive download failed: ${(sourceError as Error).message}`, { cause: sourceError });
  }
  const e = err as NodeJS.ErrnoException;
  if (typeof e.code === 'string' && e.code.startsWith('Z_')) {
    return new AppError('INVALID_ARCHIVE', `archive is not a complete gzip stream (${e.message})`, { cause: err });
  }
  if (typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code)) {
    return new AppError('INTERNAL', `extraction failed on the host: ${e.message}`, { cause: err });
  }
  return new AppError('INVALID_ARCHIVE', `archive is not a valid tar stream (${e.message ?? String(err)})`, { cause: err });
}

/** Streams a gzip tar into a new directory; see the module contract. */
export function extractTarGz(source: Readable, targetDir: string, limits: ExtractLimits): Promise<ExtractResult> {
  return extractTar(source, targetDir, limits, { gzip: true });
}

/** extractTarGz for a gzip tar (`gzip: true`) or a plain, uncompressed one (the files API's `.tar`). */
export async function extractTar(
  source: Readable,
  targetDir: string,
  limits: ExtractLimits,
  format: { gzip: boolean },
): Promise<ExtractResult> {
  const full: Required<ExtractLimits> = { maxEntries: DEFAULT_MAX_ENTRIES, ...limits };
  let sourceError: unknown;
  source.on('error', (err) => {
    sourceError ??= err;
  });
  try {
    await mkdir(targetDir, { mode: 0o755 });
  } catch (err) {
    source.destroy();
    throw new AppError('INTERNAL', `cannot create extraction directory ${targetDir}: ${(err as Error).message}`, { cause: err });
  }
  const compressed = new ByteLimit(full.maxCompressedBytes, format.gzip ? 'compressed archive' : 'archive');
  // Bounds the decompressed tar stream too (headers, padding, trailing zeros), so
  // a gzip bomb of zero blocks cannot spin the parser forever.
  const tarBytes = new ByteLimit(full.maxExtractedBytes + full.maxEntries * 2048 + (1 << 20), 'decompressed tar stream');
  const extract = tar.extract();
  const piping = format.gzip
    ? pipeline(source, compressed, createGunzip(), tarBytes, extract)
    : pipeline(source, compressed, tarBytes, extract);
  piping.catch(() => undefined); // observed below; avoids an unhandled rejection while entries are written
  const state = new ExtractionState(targetDir, full);
  try {
    for await (const entry of extract) await extractEntry(state, entry);
    await piping;
    if (compressed.bytes === 0) throw new AppError('INVALID_ARCHIVE', 'archive is empty');
  } catch (err) {
    source.destroy();
    extract.destroy();
    await piping.catch(() => undefined);
    throw classify(err, sourceError);
  }
  return {
    checksum: state.builder.checksum(),
    compressedBytes: compressed.bytes,
    extractedBytes: state.extractedBytes,
    entries: state.entries,
  };
}

async function packTree(pack: tar.Pack, dir: string): Promise<void> {
  const mtime = new Date(0);
  for await (const entry of walkLayerTree(dir)) {
    if (entry.kind === 'd') {
      await new Promise<void>((resolve, reject) => {
        pack.entry({ name: entry.path, type: 'directory', mode: 0o755, mtime, uid: 0, gid: 0 }, (err) => (err ? reject(err) : resolve()));
      });
      continue;
    }
    const handle = await open(entry.absolutePath, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    try {
      const { size } = await handle.stat();
      const mode = manifestMode(entry.mode) === '755' ? 0o755 : 0o644;
      await new Promise<void>((resolve, reject) => {
        const sink = pack.entry({ name: entry.path, type: 'file', size, mode, mtime, uid: 0, gid: 0 }, (err) =>
          err ? reject(err) : resolve(),
        );
        const content = createReadStream('', { fd: handle, autoClose: false });
        content.on('error', (err) => {
          sink.destroy(err);
          reject(err);
        });
        content.pipe(sink);
      });
    } finally {
      await handle.close();
    }
  }
}

/** A deterministic gzip tar of a layer tree; see the module contract. */
export function packDirectory(dir: string): Readable {
  return gzipPack(dir, (pack) => packTree(pack, dir));
}

/**
 * A gzip stream of the tar that `fill` writes; a failure while filling ends
 * the stream with that error (INVALID_ARCHIVE naming `what` unless it is an AppError).
 */
export function gzipPack(what: string, fill: (pack: tar.Pack) => Promise<void>): Readable {
  const pack = tar.pack();
  const gzip = createGzip();
  pack.on('error', (err: Error) => gzip.destroy(err));
  pack.pipe(gzip);
  fill(pack).then(
    () => pack.finalize(),
    (err: unknown) => {
      const error = isAppError(err)
        ? err
        : new AppError('INVALID_ARCHIVE', `cannot pack ${what}: ${(err as Error).message}`, { cause: err });
      gzip.destroy(error);
      pack.destroy(error);
    },
  );
  return gzip;
}
