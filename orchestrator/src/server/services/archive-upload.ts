// Receiving an uploaded gzip tar (imports and layers alike): the body is written
// to a work directory under a byte bound, refused when empty, then extracted
// with the safe-tar limits so the caller can inspect the tree and keep the file.

import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError, isAppError } from '../../shared/errors.js';
import { ByteLimit, extractTarGz, type ExtractResult } from '../../shared/safe-tar.js';

/** The bounds of one upload: the archive as sent, and its extracted tree. */
export interface ArchiveLimits {
  maxArchiveBytes: number;
  maxExtractedBytes: number;
}

/** Drops the leftovers of uploads a crash interrupted and creates the work directory again. */
export async function resetUploadDir(tmpDir: string): Promise<void> {
  await rm(tmpDir, { recursive: true, force: true });
  await mkdir(tmpDir, { recursive: true });
}

export interface ReceivedArchive {
  /** The archive as received, `<work>/archive.tar.gz`. */
  archive: string;
  /** Where it was extracted, `<work>/tree`. */
  tree: string;
  /** Bytes received (the archive's size). */
  bytes: number;
  result: ExtractResult;
}

/**
 * Writes `source` into `work` and extracts it. `what` names the upload in
 * messages ('import', 'layer'); `content` is what the client should send ('the world').
 */
export async function receiveArchive(
  source: Readable,
  work: string,
  limits: ArchiveLimits,
  what: string,
  content: string,
): Promise<ReceivedArchive> {
  const archive = path.join(work, 'archive.tar.gz');
  const limit = new ByteLimit(limits.maxArchiveBytes, `${what} archive`);
  try {
    await pipeline(source, limit, createWriteStream(archive, { flags: 'wx', mode: 0o600 }));
  } catch (err) {
    if (isAppError(err)) throw err;
    throw new AppError('BAD_REQUEST', `${what} upload was interrupted: ${(err as Error).message}`, { cause: err });
  }
  if (limit.bytes === 0) throw new AppError('INVALID_ARCHIVE', `the request body is empty: send ${content} as a gzip tar`);
  const tree = path.join(work, 'tree');
  const result = await extractTarGz(createReadStream(archive), tree, {
    maxCompressedBytes: limits.maxArchiveBytes,
    maxExtractedBytes: limits.maxExtractedBytes,
  });
  return { archive, tree, bytes: limit.bytes, result };
}
