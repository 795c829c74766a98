// The files API of an instance's data directory (docs/agent.md "Files"):
// list, stat, read (streamed, from an offset), write (streamed, size-bounded,
// temp file + rename), mkdir, rename, delete, archive to .tar.gz and extract a
// .tar/.tar.gz — whether the container runs or not.
//
// Path safety, one way for every operation: the path is checked lexically as
// data import and config edits check theirs (checkImportPath: no `..`, no
// absolute names, no NUL or control characters), then resolved one component
// at a time from an open directory handle with O_NOFOLLOW|O_DIRECTORY
// (`/proc/self/fd/<fd>/<name>` is openat(2) for Node), so no symlink — one the
// server planted, or one swapped in while we walk — is ever followed. The last
// component is acted on relative to its parent's handle the same way (O_NOFOLLOW
// opens, lstat, rename and mkdir never follow a final link).

import { randomBytes } from 'node:crypto';
import { constants as fs } from 'node:fs';
import { lchown, lstat, mkdir, open, readdir, rename, rm, unlink, type FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance } from 'fastify';
import type tar from 'tar-stream';
import {
  FILE_CONTENT_TYPE,
  FILE_MODIFIED_HEADER,
  FileArchiveBody,
  FileDeleteBody,
  FileDirectoryBody,
  FileExtractBody,
  FilePathQuery,
  FileReadQuery,
  FileRenameBody,
  FileWriteQuery,
  InstanceParams,
  type FileDeleted,
  type FileEntry,
  type FileExtracted,
  type FileList,
  type FileWritten,
} from '../contracts/agent-api.js';
import { AppError, isAppError } from '../shared/errors.js';
import { errnoCode } from '../shared/fs-errors.js';
import { extractTar, gzipPack } from '../shared/safe-tar.js';
import type { RuntimeDirectories } from './contracts.js';
import { DATA_IMPORT_LIMITS } from './data-import.js';
import { checkImportPath } from './relative-path.js';
import { giveTree, type Owner } from './ownership.js';

const DIR_FLAGS = fs.O_RDONLY | fs.O_DIRECTORY | fs.O_NOFOLLOW;
// O_NONBLOCK: a fifo planted in the directory must not hang the open; regular files ignore it.
const READ_FLAGS = fs.O_RDONLY | fs.O_NOFOLLOW | fs.O_NONBLOCK;
const CREATE_FLAGS = fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL | fs.O_NOFOLLOW;
/** Temp names of uploads, archives and extractions in progress (hidden from nothing: they are real files while they exist). */
const TEMP_PREFIX = '.endercloud-';
const GiB = 1024 ** 3;

export interface InstanceFilesOptions {
  directories: RuntimeDirectories;
  /** The agent's own bound on one upload, whatever the caller asks (default 16 GiB, the data import's extracted bound). */
  maxUploadBytes?: number;
  /** Extraction bounds (default the data import's: 4 GiB read, 16 GiB written, 100,000 entries). */
  maxArchiveBytes?: number;
  maxExtractedBytes?: number;
  maxEntries?: number;
}

/** A checked path: its segments below the data directory ([] = the directory itself) and its display form. */
interface FilePath {
  segments: string[];
  display: string;
}

function invalid(raw: string, why: string): AppError {
  return new AppError('FILE_PATH_INVALID', `path ${JSON.stringify(raw)} ${why}`);
}

/** `/a/b` → segments; FILE_PATH_INVALID for anything data import and config edits would refuse too. */
export function parseFilePath(raw: string): FilePath {
  if (!raw.startsWith('/')) throw invalid(raw, 'must start with "/" (the instance directory)');
  let rel: string;
  try {
    rel = checkImportPath(raw.slice(1));
  } catch (err) {
    throw invalid(raw, isAppError(err) ? err.message.replace(/^path "(?:[^"\\]|\\.)*" /, '') : 'is not a safe path');
  }
  const segments = rel === '' ? [] : rel.split('/');
  return { segments, display: `/${segments.join('/')}` };
}

const fdPath = (handle: FileHandle, name?: string): string =>
  name === undefined ? `/proc/self/fd/${handle.fd}` : `/proc/self/fd/${handle.fd}/${name}`;

function modeText(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

function entryOf(name: string, path: string, st: Stats): FileEntry {
  const type = st.isDirectory() ? 'directory' : st.isSymbolicLink() ? 'symlink' : 'file';
  return {
    name,
    path,
    type,
    size: st.isFile() || st.isSymbolicLink() ? st.size : 0,
    modifiedAt: Math.floor(st.mtimeMs),
    mode: modeText(st.mode),
  };
}

/** Counts bytes and fails with FILE_TOO_LARGE past the limit. */
class UploadLimit extends Transform {
  bytes = 0;
  constructor(
    private readonly limit: number,
    private readonly path: string,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit)
      callback(new AppError('FILE_TOO_LARGE', `upload to ${this.path} exceeds the limit of ${this.limit} bytes`));
    else callback(null, chunk);
  }
}

/** Writes every chunk at the handle's position, one after another (the handle stays open for the caller). */
async function writeAll(chunks: AsyncIterable<Buffer>, file: FileHandle): Promise<void> {
  for await (const chunk of chunks) await file.write(chunk);
}

export class InstanceFiles {
  private readonly maxUploadBytes: number;

  constructor(private readonly deps: InstanceFilesOptions) {
    this.maxUploadBytes = deps.maxUploadBytes ?? 16 * GiB;
  }

  // ---------------------------------------------------------------- resolution

  /** The open data directory of the instance; INSTANCE_NOT_FOUND when this host has none. */
  private async openRoot(instanceId: string): Promise<{ handle: FileHandle; owner: Owner }> {
    const root = this.deps.directories.localPath(instanceId);
    let handle: FileHandle;
    try {
      handle = await open(root, DIR_FLAGS);
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'ENOENT') throw new AppError('INSTANCE_NOT_FOUND', `instance ${instanceId} has no data directory on this host`);
      if (code === 'ELOOP' || code === 'ENOTDIR')
        throw new AppError('FILE_PATH_INVALID', `the data directory of instance ${instanceId} is not a real directory`);
      throw err;
    }
    const st = await handle.stat();
    return { handle, owner: { uid: st.uid, gid: st.gid } };
  }

  /**
   * Opens the directory `segments` below the data directory, one component at a
   * time, never through a symlink. The caller closes the handle.
   */
  private async openDirectory(instanceId: string, segments: readonly string[], raw: string): Promise<{ handle: FileHandle; owner: Owner }> {
    const opened = await this.openRoot(instanceId);
    let handle = opened.handle;
    for (let i = 0; i < segments.length; i += 1) {
      const name = segments[i] as string;
      let next: FileHandle;
      try {
        next = await open(fdPath(handle, name), DIR_FLAGS);
      } catch (err) {
        await handle.close();
        const code = errnoCode(err);
        const at = `/${segments.slice(0, i + 1).join('/')}`;
        if (code === 'ENOENT') throw new AppError('FILE_NOT_FOUND', `${at} does not exist (in ${raw})`);
        if (code === 'ELOOP') throw invalid(raw, `crosses ${at}, a symbolic link: the files API never follows one`);
        if (code === 'ENOTDIR') throw invalid(raw, `crosses ${at}, which is not a directory`);
        throw err;
      }
      await handle.close();
      handle = next;
    }
    return { handle, owner: opened.owner };
  }

  /** The parent directory of a path that is not the data directory itself, and the last name. */
  private async openParent(instanceId: string, path: FilePath, what: string): Promise<{ dir: FileHandle; name: string; owner: Owner }> {
    if (path.segments.length === 0) throw invalid(path.display, `names the instance directory itself, which cannot be ${what}`);
    const { handle, owner } = await this.openDirectory(instanceId, path.segments.slice(0, -1), path.display);
    return { dir: handle, name: path.segments[path.segments.length - 1] as string, owner };
  }

  private async lstatIn(dir: FileHandle, name: string): Promise<Stats | undefined> {
    try {
      return await lstat(fdPath(dir, name));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw err;
    }
  }

  private async withParent<T>(
    instanceId: string,
    raw: string,
    what: string,
    fn: (dir: FileHandle, name: string, owner: Owner, path: FilePath) => Promise<T>,
  ): Promise<T> {
    const path = parseFilePath(raw);
    const { dir, name, owner } = await this.openParent(instanceId, path, what);
    try {
      return await fn(dir, name, owner, path);
    } finally {
      await dir.close();
    }
  }

  // ---------------------------------------------------------------- reads

  async list(instanceId: string, raw: string): Promise<FileList> {
    const path = parseFilePath(raw);
    const { handle } = await this.openDirectory(instanceId, path.segments, path.display);
    try {
      const names = await readdir(fdPath(handle));
      const entries: FileEntry[] = [];
      for (const name of names) {
        const st = await this.lstatIn(handle, name);
        if (st) entries.push(entryOf(name, path.segments.length === 0 ? `/${name}` : `${path.display}/${name}`, st));
      }
      entries.sort((a, b) =>
        (a.type === 'directory') !== (b.type === 'directory')
          ? a.type === 'directory'
            ? -1
            : 1
          : a.name < b.name
            ? -1
            : a.name > b.name
              ? 1
              : 0,
      );
      return { path: path.display, entries };
    } finally {
      await handle.close();
    }
  }

  async stat(instanceId: string, raw: string): Promise<FileEntry> {
    const path = parseFilePath(raw);
    if (path.segments.length === 0) {
      const { handle } = await this.openRoot(instanceId);
      try {
        return entryOf('', '/', await handle.stat());
      } finally {
        await handle.close();
      }
    }
    return this.withParent(instanceId, raw, 'examined', async (dir, name, _owner, p) => {
      const st = await this.lstatIn(dir, name);
      if (!st) throw new AppError('FILE_NOT_FOUND', `${p.display} does not exist`);
      return entryOf(name, p.display, st);
    });
  }

  /** A regular file's content from `offset`, streamed; the stream closes the file. */
  async read(instanceId: string, raw: string, offset = 0): Promise<{ stream: Readable; size: number; name: string; modifiedAt: number }> {
    return this.withParent(instanceId, raw, 'read', async (dir, name, _owner, p) => {
      let file: FileHandle;
      try {
        file = await open(fdPath(dir, name), READ_FLAGS);
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'ENOENT') throw new AppError('FILE_NOT_FOUND', `${p.display} does not exist`);
        if (code === 'ELOOP') throw invalid(p.display, 'is a symbolic link: the files API never follows one');
        throw err;
      }
      const st = await file.stat();
      if (!st.isFile()) {
        await file.close();
        if (st.isDirectory()) throw new AppError('FILE_IS_DIRECTORY', `${p.display} is a directory: list it instead`);
        throw invalid(p.display, 'is not a regular file');
      }
      const start = Math.min(offset, st.size);
      return { stream: file.createReadStream({ start }), size: st.size - start, name, modifiedAt: Math.floor(st.mtimeMs) };
    });
  }

  // ---------------------------------------------------------------- writes

  /**
   * Creates or replaces a regular file with the stream's bytes: written to a
   * temp file beside it (given to the file's owner, else the data directory's),
   * then renamed over it. The parent directory must exist.
   */
  async write(instanceId: string, raw: string, source: Readable, maxBytes?: number): Promise<FileWritten> {
    const limit = Math.min(maxBytes ?? this.maxUploadBytes, this.maxUploadBytes);
    try {
      return await this.withParent(instanceId, raw, 'written', async (dir, name, owner, p) => {
        const existing = await this.lstatIn(dir, name);
        if (existing?.isDirectory()) throw new AppError('FILE_IS_DIRECTORY', `${p.display} is a directory`);
        if (existing?.isSymbolicLink()) throw invalid(p.display, 'is a symbolic link: the files API never writes through one');
        const tmp = `${TEMP_PREFIX}upload-${randomBytes(6).toString('hex')}`;
        const file = await open(fdPath(dir, tmp), CREATE_FLAGS, existing ? existing.mode & 0o777 : 0o644);
        const counter = new UploadLimit(limit, p.display);
        try {
          await file.chown(existing?.uid ?? owner.uid, existing?.gid ?? owner.gid);
          await pipeline(source, counter, (chunks) => writeAll(chunks, file));
          await file.close();
          await rename(fdPath(dir, tmp), fdPath(dir, name));
        } catch (err) {
          await file.close().catch(() => undefined);
          await unlink(fdPath(dir, tmp)).catch(() => undefined);
          throw err;
        }
        return { path: p.display, size: counter.bytes };
      });
    } finally {
      source.destroy();
    }
  }

  async mkdir(instanceId: string, raw: string): Promise<{ path: string }> {
    return this.withParent(instanceId, raw, 'created', async (dir, name, owner, p) => {
      try {
        await mkdir(fdPath(dir, name), { mode: 0o755 });
      } catch (err) {
        if (errnoCode(err) === 'EEXIST') throw new AppError('FILE_EXISTS', `${p.display} already exists`);
        throw err;
      }
      await lchown(fdPath(dir, name), owner.uid, owner.gid);
      return { path: p.display };
    });
  }

  /** Renames or moves (into another existing directory); never overwrites. */
  async rename(instanceId: string, rawFrom: string, rawTo: string): Promise<{ from: string; to: string }> {
    return this.withParent(instanceId, rawFrom, 'renamed', async (fromDir, fromName, _owner, from) =>
      this.withParent(instanceId, rawTo, 'replaced', async (toDir, toName, _o, to) => {
        if (!(await this.lstatIn(fromDir, fromName))) throw new AppError('FILE_NOT_FOUND', `${from.display} does not exist`);
        if (await this.lstatIn(toDir, toName)) throw new AppError('FILE_EXISTS', `${to.display} already exists: a rename never overwrites`);
        if (to.display.startsWith(`${from.display}/`))
          throw invalid(to.display, `is inside ${from.display}: a directory cannot move into itself`);
        await rename(fdPath(fromDir, fromName), fdPath(toDir, toName));
        return { from: from.display, to: to.display };
      }),
    );
  }

  /** Deletes files and directories (recursively); every path must exist, checked before anything is removed. */
  async remove(instanceId: string, raws: readonly string[]): Promise<FileDeleted> {
    const paths = raws.map(parseFilePath);
    for (const p of paths) {
      await this.withParent(instanceId, p.display, 'deleted', async (dir, name) => {
        if (!(await this.lstatIn(dir, name))) throw new AppError('FILE_NOT_FOUND', `${p.display} does not exist; nothing was deleted`);
      });
    }
    const deleted: string[] = [];
    for (const p of paths) {
      await this.withParent(instanceId, p.display, 'deleted', async (dir, name) => {
        const st = await this.lstatIn(dir, name);
        if (!st) return; // an earlier path of this call held it
        if (st.isDirectory()) await rm(fdPath(dir, name), { recursive: true, force: true });
        else await unlink(fdPath(dir, name));
        deleted.push(p.display);
      });
    }
    return { deleted };
  }

  // ---------------------------------------------------------------- archives

  /** Packs files and directories (named by their last component) into a new .tar.gz; symlinks and special files are left out. */
  async archive(instanceId: string, raws: readonly string[], rawDestination: string): Promise<FileWritten> {
    const paths = raws.map(parseFilePath);
    return this.withParent(instanceId, rawDestination, 'written', async (destDir, destName, owner, dest) => {
      if (await this.lstatIn(destDir, destName)) throw new AppError('FILE_EXISTS', `${dest.display} already exists`);
      const tmp = `${TEMP_PREFIX}archive-${randomBytes(6).toString('hex')}`;
      const file = await open(fdPath(destDir, tmp), CREATE_FLAGS, 0o644);
      try {
        await file.chown(owner.uid, owner.gid);
        const packed = gzipPack('the selection', async (pack) => {
          for (const p of paths) {
            await this.withParent(instanceId, p.display, 'archived', async (dir, name) => {
              const st = await this.lstatIn(dir, name);
              if (!st) throw new AppError('FILE_NOT_FOUND', `${p.display} does not exist`);
              await this.packEntry(pack, dir, name, name, st, tmp);
            });
          }
        });
        await pipeline(packed, (chunks) => writeAll(chunks, file));
        const { size } = await file.stat();
        await file.close();
        if (await this.lstatIn(destDir, destName)) throw new AppError('FILE_EXISTS', `${dest.display} appeared while archiving`);
        await rename(fdPath(destDir, tmp), fdPath(destDir, destName));
        return { path: dest.display, size };
      } catch (err) {
        await file.close().catch(() => undefined);
        await unlink(fdPath(destDir, tmp)).catch(() => undefined);
        throw err;
      }
    });
  }

  private async packEntry(pack: tar.Pack, dir: FileHandle, name: string, entryName: string, st: Stats, skip: string): Promise<void> {
    const mtime = st.mtime;
    const mode = st.mode & 0o777;
    if (st.isDirectory()) {
      const sub = await open(fdPath(dir, name), DIR_FLAGS).catch(() => undefined);
      if (!sub) return; // replaced by a link meanwhile: left out
      try {
        await new Promise<void>((resolve, reject) =>
          pack.entry({ name: entryName, type: 'directory', mode, mtime }, (err) => (err ? reject(err) : resolve())),
        );
        for (const child of (await readdir(fdPath(sub))).sort()) {
          if (child === skip) continue;
          const cst = await this.lstatIn(sub, child);
          if (cst) await this.packEntry(pack, sub, child, `${entryName}/${child}`, cst, skip);
        }
      } finally {
        await sub.close();
      }
      return;
    }
    if (!st.isFile()) return; // symlinks, fifos, sockets: never archived
    const file = await open(fdPath(dir, name), READ_FLAGS).catch(() => undefined);
    if (!file) return;
    try {
      const fst = await file.stat();
      if (!fst.isFile()) return;
      const header = { name: entryName, type: 'file' as const, size: fst.size, mode, mtime };
      await new Promise<void>((resolve, reject) => {
        const done = (err?: Error | null) => (err ? reject(err) : resolve());
        if (fst.size === 0) {
          pack.entry(header, Buffer.alloc(0), done);
          return;
        }
        const sink = pack.entry(header, done);
        // Bytes appended while packing are left out: the header already holds the size.
        const content = file.createReadStream({ autoClose: false, end: fst.size - 1 });
        content.on('error', (err) => {
          sink.destroy(err);
          reject(err);
        });
        content.pipe(sink);
      });
    } finally {
      await file.close();
    }
  }

  /**
   * Extracts a .tar / .tar.gz / .tgz into `destination` (default: the
   * archive's directory) with the data import's checks and limits, through a
   * private staging directory; refuses (FILE_EXISTS) before moving anything in
   * when a top-level name already exists there.
   */
  async extract(instanceId: string, rawArchive: string, rawDestination?: string): Promise<FileExtracted> {
    const archive = parseFilePath(rawArchive);
    const lower = archive.display.toLowerCase();
    if (lower.endsWith('.zip'))
      throw new AppError(
        'NOT_IMPLEMENTED',
        `${archive.display}: .zip archives cannot be extracted (no zip library is installed); use .tar, .tar.gz or .tgz`,
      );
    const gzip = lower.endsWith('.tar.gz') || lower.endsWith('.tgz');
    if (!gzip && !lower.endsWith('.tar'))
      throw new AppError('VALIDATION_FAILED', `${archive.display} is not a .tar, .tar.gz or .tgz archive`);
    const destination =
      rawDestination === undefined ? parseFilePath(`/${archive.segments.slice(0, -1).join('/')}`) : parseFilePath(rawDestination);
    const source = await this.read(instanceId, archive.display);
    const { handle: destDir, owner } = await this.openDirectory(instanceId, destination.segments, destination.display).catch(
      (err: unknown) => {
        source.stream.destroy();
        throw err;
      },
    );
    // The tree grows inside a 0700 directory of the agent's: the server (another uid) cannot swap a link into it meanwhile.
    const staging = `${TEMP_PREFIX}extract-${randomBytes(6).toString('hex')}`;
    const tree = `${staging}/tree`;
    try {
      await mkdir(fdPath(destDir, staging), { mode: 0o700 });
      const result = await extractTar(
        source.stream,
        fdPath(destDir, tree),
        {
          maxCompressedBytes: this.deps.maxArchiveBytes ?? DATA_IMPORT_LIMITS.maxCompressedBytes,
          maxExtractedBytes: this.deps.maxExtractedBytes ?? DATA_IMPORT_LIMITS.maxExtractedBytes,
          ...(this.deps.maxEntries !== undefined ? { maxEntries: this.deps.maxEntries } : {}),
        },
        { gzip },
      );
      const names = await readdir(fdPath(destDir, tree));
      const clashes: string[] = [];
      for (const n of names) if (await this.lstatIn(destDir, n)) clashes.push(n);
      if (clashes.length > 0) {
        throw new AppError(
          'FILE_EXISTS',
          `extracting ${archive.display} into ${destination.display} would overwrite ${clashes.slice(0, 5).join(', ')}${clashes.length > 5 ? ` and ${clashes.length - 5} more` : ''}: extract never overwrites`,
          { details: { existing: clashes.slice(0, 100) } },
        );
      }
      await giveTree(fdPath(destDir, tree), owner);
      for (const n of names) await rename(fdPath(destDir, `${tree}/${n}`), fdPath(destDir, n));
      return { destination: destination.display, entries: result.entries };
    } catch (err) {
      source.stream.destroy();
      throw err;
    } finally {
      await rm(fdPath(destDir, staging), { recursive: true, force: true });
      await destDir.close();
    }
  }
}

/** The data-directory files routes under /instances/:id/files (docs/agent.md "Files"). */
export async function registerFileRoutes(api: FastifyInstance, files: InstanceFiles): Promise<void> {
  await api.register(async (scope) => {
    // Uploads stay a stream: InstanceFiles.write bounds it while writing.
    scope.addContentTypeParser(FILE_CONTENT_TYPE, (_req, payload, done) => done(null, payload));
    const id = (req: { params: unknown }) => (req.params as InstanceParams).id;
    scope.get('/instances/:id/files', { schema: { params: InstanceParams, querystring: FilePathQuery } }, async (req): Promise<FileList> =>
      files.list(id(req), (req.query as FilePathQuery).path),
    );
    scope.get(
      '/instances/:id/files/stat',
      { schema: { params: InstanceParams, querystring: FilePathQuery } },
      async (req): Promise<FileEntry> => files.stat(id(req), (req.query as FilePathQuery).path),
    );
    scope.get('/instances/:id/files/content', { schema: { params: InstanceParams, querystring: FileReadQuery } }, async (req, reply) => {
      const q = req.query as FileReadQuery;
      const opened = await files.read(id(req), q.path, q.offset ?? 0);
      return reply
        .type(FILE_CONTENT_TYPE)
        .header('content-length', String(opened.size))
        .header(FILE_MODIFIED_HEADER, String(opened.modifiedAt))
        .send(opened.stream);
    });
    scope.put(
      '/instances/:id/files/content',
      { schema: { params: InstanceParams, querystring: FileWriteQuery } },
      async (req): Promise<FileWritten> => {
        const body = req.body as Readable | undefined;
        if (!body || typeof body.pipe !== 'function')
          throw new AppError('VALIDATION_FAILED', `send the file as raw bytes (content-type ${FILE_CONTENT_TYPE})`);
        const q = req.query as FileWriteQuery;
        const result = await files.write(id(req), q.path, body, q.maxBytes);
        req.log.info({ instanceId: id(req), ...result }, 'file written');
        return result;
      },
    );
    scope.post('/instances/:id/files/directory', { schema: { params: InstanceParams, body: FileDirectoryBody } }, async (req) =>
      files.mkdir(id(req), (req.body as FileDirectoryBody).path),
    );
    scope.post('/instances/:id/files/rename', { schema: { params: InstanceParams, body: FileRenameBody } }, async (req) => {
      const b = req.body as FileRenameBody;
      return files.rename(id(req), b.from, b.to);
    });
    scope.post(
      '/instances/:id/files/delete',
      { schema: { params: InstanceParams, body: FileDeleteBody } },
      async (req): Promise<FileDeleted> => files.remove(id(req), (req.body as FileDeleteBody).paths),
    );
    scope.post(
      '/instances/:id/files/archive',
      { schema: { params: InstanceParams, body: FileArchiveBody } },
      async (req): Promise<FileWritten> => {
        const b = req.body as FileArchiveBody;
        return files.archive(id(req), b.paths, b.destination);
      },
    );
    scope.post(
      '/instances/:id/files/extract',
      { schema: { params: InstanceParams, body: FileExtractBody } },
      async (req): Promise<FileExtracted> => {
        const b = req.body as FileExtractBody;
        return files.extract(id(req), b.path, b.destination);
      },
    );
  });
}
