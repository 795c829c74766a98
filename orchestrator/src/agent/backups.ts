// Instance backups on the agent: gzip tars of an instance directory under
// `<runtime>/backups/<instance-id>/<backup-id>.tar.gz` (+ a `.json` sidecar), and
// restore by extracting into staging and swapping directories (never in place).
//
// Contracts:
// - `create(id, backupId, paths?)`: archive written to a temp file then renamed;
//   idempotent (an existing backup id answers its metadata). Works with the
//   container running or not (consistency is the caller's job: save-off/flush).
// - `restore(id, backupId)`: INSTANCE_BUSY unless the container is stopped or
//   absent; writes a `pre-restore-<time>` safety backup of the current data first,
//   verifies the archive's sha256 while extracting, gives the extracted tree to
//   the instance user (from the container's labels, else the current directory's
//   owner) and swaps it in. A failure leaves the current directory untouched.
// - `openArchive(id, backupId)`: the archive as a stream with its metadata.
// - `receive(id, backupId, stream, {sha256, createdAt, paths?})`: keeps an
//   archive taken elsewhere once it fits the size bound, hashes to sha256 and
//   passes the safe extractor; idempotent per id, CONFLICT for another hash.

import { createHash, randomBytes } from 'node:crypto';
import { constants as fsConstants, createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import type { BackupDeleted, BackupInfo, BackupsDeleted, RestoreAnswer } from '../contracts/agent-api.js';
import { AppError, isAppError } from '../shared/errors.js';
import { RESOURCE_ID_PATTERN, assertId } from '../shared/ids.js';
import { manifestMode, normalizeLayerPath, walkLayerTree } from '../shared/layer-checksum.js';
import { ByteLimit, extractTarGz, gzipPack, packDirectory } from '../shared/safe-tar.js';
import type { KeyedLock } from './async-lock.js';
import { directoryOwner, recordedUser } from './container-config.js';
import { giveTree, type Owner } from './ownership.js';
import type { RuntimeDirectories } from './contracts.js';
import type { ContainerDetails } from './runtime.js';
import { errnoCode, lstatOrUndefined, swapDirectory } from '../shared/fs-errors.js';

export type { BackupInfo };

export interface BackupServiceOptions {
  /** `<runtime>/backups`. */
  backupsDirectory: string;
  directories: RuntimeDirectories;
  findOwned(instanceId: string): Promise<ContainerDetails | undefined>;
  /** The agent's one per-instance lock (InstanceService.instanceLocks): a restore never runs beside a start. */
  instanceLocks: KeyedLock;
  now?: () => Date;
  /** Upper bound of a restored tree (bytes of file content). */
  maxRestoreBytes?: number;
  /** Upper bound of an uploaded archive (bytes as sent). */
  maxUploadBytes?: number;
}

/** What an uploaded archive must be: its hash and the original backup's time and paths. */
export interface UploadedBackup {
  sha256: string;
  createdAt: string;
  paths?: string[];
}

type PackHeader = Partial<tar.Header> & Pick<tar.Header, 'name'>;
const STOPPED = new Set(['exited', 'created', 'dead']);
const OLD_PREFIX = '.restore-old-'; // not `.staging-`: a crash mid-swap must not lose it at agent start
const STAGING_PREFIX = '.staging-restore-';

/** Validates relative paths exactly like removeScoped does (no absolute, `..`, empty, root). */
export function checkBackupPaths(raw: readonly unknown[]): string[] {
  const paths = raw.map((p) => {
    const checked = typeof p === 'string' ? normalizeLayerPath(p) : { reason: 'is not a string' };
    if ('reason' in checked) throw new AppError('UNSAFE_PATH', `path ${JSON.stringify(p)} ${checked.reason}`);
    if (checked.path === '')
      throw new AppError('UNSAFE_PATH', `path ${JSON.stringify(p)} names the instance directory itself (omit paths for everything)`);
    return checked.path;
  });
  return [...new Set(paths)].sort();
}

/** A backup id safe for the file name: `pre-restore-20261130T093000Z`. */
export function safetyBackupId(now: Date): string {
  return `pre-restore-${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}`;
}

function addEntry(pack: tar.Pack, header: PackHeader, content?: Readable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const sink = pack.entry(header, (err) => (err ? reject(err) : resolve()));
    if (content) {
      content.on('error', (err) => {
        sink.destroy(err);
        reject(err);
      });
      content.pipe(sink);
    }
  });
}

async function packFile(pack: tar.Pack, name: string, abs: string): Promise<void> {
  const handle = await open(abs, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  try {
    const { size, mode } = await handle.stat();
    const content = createReadStream('', { fd: handle, autoClose: false });
    await addEntry(
      pack,
      { name, type: 'file', size, mode: manifestMode(mode) === '755' ? 0o755 : 0o644, mtime: new Date(0), uid: 0, gid: 0 },
      content,
    );
  } finally {
    await handle.close();
  }
}

/** A gzip tar of only the selected relative paths (same header rules as packDirectory). */
function packSelected(root: string, paths: readonly string[]): Readable {
  const dirHeader = (name: string): PackHeader => ({ name, type: 'directory', mode: 0o755, mtime: new Date(0), uid: 0, gid: 0 });
  const run = async (pack: tar.Pack) => {
    for (const path of paths) {
      const segments = path.split('/');
      let current = root;
      let ok = true;
      for (const segment of segments.slice(0, -1)) {
        current = join(current, segment);
        const stat = await lstatOrUndefined(current);
        if (!stat) ok = false;
        else if (!stat.isDirectory())
          throw new AppError(
            'UNSAFE_PATH',
            `path ${JSON.stringify(path)} traverses ${JSON.stringify(segment)}, which is not a real directory`,
          );
        if (!ok) break;
      }
      const abs = join(root, path);
      const stat = ok ? await lstatOrUndefined(abs) : undefined;
      if (!stat) continue; // a configured path the server has not created yet
      if (stat.isDirectory()) {
        await addEntry(pack, dirHeader(path));
        for await (const entry of walkLayerTree(abs)) {
          const name = `${path}/${entry.path}`;
          if (entry.kind === 'd') await addEntry(pack, dirHeader(name));
          else await packFile(pack, name, entry.absolutePath);
        }
      } else if (stat.isFile()) {
        await packFile(pack, path, abs);
      } else {
        throw new AppError('INVALID_ARCHIVE', `path ${JSON.stringify(path)} is not a regular file or directory`);
      }
    }
  };
  return gzipPack(root, run);
}

/** Hashes and counts what flows through. */
class Digest extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  override _transform(chunk: Buffer, _e: BufferEncoding, cb: (err?: Error | null, data?: Buffer) => void): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    cb(null, chunk);
  }
}

export class BackupService {
  private readonly now: () => Date;

  constructor(private readonly deps: BackupServiceOptions) {
    this.now = deps.now ?? (() => new Date());
  }

  private dir(instanceId: string): string {
    const id = assertId('instance id', instanceId);
    return join(this.deps.backupsDirectory, id);
  }

  private files(instanceId: string, backupId: string): { archive: string; meta: string } {
    const id = assertId('backup id', backupId, RESOURCE_ID_PATTERN);
    const dir = this.dir(instanceId);
    return { archive: join(dir, `${id}.tar.gz`), meta: join(dir, `${id}.json`) };
  }

  private locked<T>(instanceId: string, fn: () => Promise<T>): Promise<T> {
    return this.deps.instanceLocks.run(assertId('instance id', instanceId), fn);
  }

  async get(instanceId: string, backupId: string): Promise<BackupInfo | undefined> {
    const { archive, meta } = this.files(instanceId, backupId);
    if (!(await lstatOrUndefined(archive))) return undefined;
    try {
      return JSON.parse(await readFile(meta, 'utf8')) as BackupInfo;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw err;
    }
  }

  async list(instanceId: string): Promise<BackupInfo[]> {
    const dir = this.dir(instanceId);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return [];
      throw err;
    }
    const infos: BackupInfo[] = [];
    for (const name of names) {
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      const info = await this.get(instanceId, name.slice(0, -'.json'.length));
      if (info) infos.push(info);
    }
    return infos.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.backupId.localeCompare(b.backupId));
  }

  create(instanceId: string, backupId: string, paths?: readonly unknown[]): Promise<BackupInfo> {
    const selected = paths === undefined ? undefined : checkBackupPaths(paths);
    this.files(instanceId, backupId); // validates both ids before taking the lock
    return this.locked(instanceId, () => this.createLocked(instanceId, backupId, selected));
  }

  private async createLocked(instanceId: string, backupId: string, paths: string[] | undefined): Promise<BackupInfo> {
    const existing = await this.get(instanceId, backupId);
    if (existing) return existing; // a retried command gets the same answer
    const root = this.deps.directories.localPath(instanceId);
    const rootStat = await lstatOrUndefined(root);
    if (!rootStat?.isDirectory()) throw new AppError('INSTANCE_NOT_FOUND', `instance ${instanceId} has no runtime directory to back up`);
    const { archive, meta } = this.files(instanceId, backupId);
    await mkdir(dirname(archive), { recursive: true });
    const tmp = join(dirname(archive), `.${backupId}.${randomBytes(6).toString('hex')}.tmp`);
    const digest = new Digest();
    try {
      const source = paths === undefined ? packDirectory(root) : packSelected(root, paths);
      await pipeline(source, digest, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
      const info: BackupInfo = {
        backupId,
        sizeBytes: digest.bytes,
        sha256: digest.hash.digest('hex'),
        createdAt: this.now().toISOString(),
        ...(paths ? { paths } : {}),
      };
      await rename(tmp, archive);
      // The sidecar last: a backup without one is invisible (and overwritten by a retry).
      await writeFile(`${tmp}.json`, JSON.stringify(info), { mode: 0o600 });
      await rename(`${tmp}.json`, meta);
      return info;
    } catch (err) {
      await rm(tmp, { force: true });
      await rm(`${tmp}.json`, { force: true });
      throw err;
    }
  }

  /** The archive of a backup as a stream, with its metadata; NOT_FOUND when absent. */
  async openArchive(instanceId: string, backupId: string): Promise<{ info: BackupInfo; stream: Readable }> {
    const info = await this.get(instanceId, backupId);
    if (!info) throw new AppError('NOT_FOUND', `instance ${instanceId} has no backup ${backupId}`);
    return { info, stream: createReadStream(this.files(instanceId, backupId).archive) };
  }

  /**
   * Accepts an archive taken elsewhere (the orchestrator's store re-seeding a
   * host): bounded, hashed against `expected.sha256`, and extracted once into a
   * throw-away directory with the safe extractor (the same checks as imports)
   * before it is kept. Idempotent: the same backup id with the same hash
   * answers the kept one; a different hash is a CONFLICT.
   */
  receive(instanceId: string, backupId: string, source: Readable, expected: UploadedBackup): Promise<BackupInfo> {
    this.files(instanceId, backupId);
    const paths = expected.paths === undefined ? undefined : checkBackupPaths(expected.paths);
    return this.locked(instanceId, () => this.receiveLocked(instanceId, backupId, source, { ...expected, ...(paths ? { paths } : {}) }));
  }

  private async receiveLocked(instanceId: string, backupId: string, source: Readable, expected: UploadedBackup): Promise<BackupInfo> {
    const existing = await this.get(instanceId, backupId);
    if (existing) {
      source.resume(); // drain: the answer does not need the body
      if (existing.sha256 === expected.sha256) return existing;
      throw new AppError('CONFLICT', `instance ${instanceId} already has a different backup ${backupId} (sha256 ${existing.sha256})`);
    }
    const { archive, meta } = this.files(instanceId, backupId);
    await mkdir(dirname(archive), { recursive: true });
    const tmp = join(dirname(archive), `.${backupId}.${randomBytes(6).toString('hex')}.tmp`);
    const check = `${tmp}.check`;
    const maxBytes = this.deps.maxUploadBytes ?? 64 * 1024 ** 3;
    try {
      const digest = new Digest();
      try {
        await pipeline(source, new ByteLimit(maxBytes, 'backup archive'), digest, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
      } catch (err) {
        if (isAppError(err)) throw err;
        throw new AppError('BAD_REQUEST', `backup upload was interrupted: ${(err as Error).message}`, { cause: err });
      }
      const sha = digest.hash.digest('hex');
      if (sha !== expected.sha256)
        throw new AppError('CHECKSUM_MISMATCH', `uploaded backup ${backupId} hashes to ${sha}, expected ${expected.sha256}`);
      await extractTarGz(createReadStream(tmp), check, {
        maxCompressedBytes: maxBytes,
        maxExtractedBytes: this.deps.maxRestoreBytes ?? 256 * 1024 ** 3,
        maxEntries: 2_000_000,
      });
      const info: BackupInfo = {
        backupId,
        sizeBytes: digest.bytes,
        sha256: sha,
        createdAt: expected.createdAt,
        ...(expected.paths ? { paths: expected.paths } : {}),
      };
      await rename(tmp, archive);
      await writeFile(`${tmp}.json`, JSON.stringify(info), { mode: 0o600 });
      await rename(`${tmp}.json`, meta);
      return info;
    } finally {
      await rm(check, { recursive: true, force: true });
      await rm(tmp, { force: true });
      await rm(`${tmp}.json`, { force: true });
    }
  }

  delete(instanceId: string, backupId: string): Promise<BackupDeleted> {
    const { archive, meta } = this.files(instanceId, backupId);
    return this.locked(instanceId, async () => {
      const existed = (await lstatOrUndefined(archive)) !== undefined;
      await unlink(meta).catch((e: unknown) => (errnoCode(e) === 'ENOENT' ? undefined : Promise.reject(e)));
      await unlink(archive).catch((e: unknown) => (errnoCode(e) === 'ENOENT' ? undefined : Promise.reject(e)));
      return { deleted: existed };
    });
  }

  /** Instance ids that have a backups directory (kept data of deleted instances among them). */
  async instanceIds(): Promise<string[]> {
    try {
      return (await readdir(this.deps.backupsDirectory)).filter((n) => !n.startsWith('.') && RESOURCE_ID_PATTERN.test(n)).sort();
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return [];
      throw err;
    }
  }

  deleteAll(instanceId: string): Promise<BackupsDeleted> {
    const dir = this.dir(instanceId);
    return this.locked(instanceId, async () => {
      const count = (await this.list(instanceId)).length;
      const stat = await lstatOrUndefined(dir);
      if (stat?.isDirectory()) await rm(dir, { recursive: true, force: true });
      else if (stat) await unlink(dir); // a symlink is removed, never followed
      return { deleted: count };
    });
  }

  restore(instanceId: string, backupId: string): Promise<RestoreAnswer> {
    this.files(instanceId, backupId);
    return this.locked(instanceId, () => this.restoreLocked(instanceId, backupId));
  }

  private async restoreLocked(instanceId: string, backupId: string): Promise<RestoreAnswer> {
    const container = await this.deps.findOwned(instanceId);
    if (container && !STOPPED.has(container.state)) {
      throw new AppError('INSTANCE_BUSY', `cannot restore instance ${instanceId} while its container is ${container.state}: stop it first`);
    }
    const info = await this.get(instanceId, backupId);
    if (!info) throw new AppError('NOT_FOUND', `instance ${instanceId} has no backup ${backupId}`);
    const target = this.deps.directories.localPath(instanceId);
    const current = await lstatOrUndefined(target);
    if (current && !current.isDirectory())
      throw new AppError('UNSAFE_PATH', `runtime directory of instance ${instanceId} is not a directory`);
    const owner = this.ownerOf(container, current);

    let safety: string | null = null;
    if (current) {
      safety = safetyBackupId(this.now());
      await this.createLocked(instanceId, safety, undefined);
    }

    const parent = dirname(target);
    await mkdir(parent, { recursive: true });
    const suffix = `${instanceId}-${randomBytes(6).toString('hex')}`;
    const staging = join(parent, `${STAGING_PREFIX}${suffix}`);
    const old = join(parent, `${OLD_PREFIX}${suffix}`);
    const { archive } = this.files(instanceId, backupId);
    try {
      const digest = new Digest();
      const source = createReadStream(archive).pipe(digest);
      await extractTarGz(source, staging, {
        maxCompressedBytes: info.sizeBytes + 1,
        maxExtractedBytes: this.deps.maxRestoreBytes ?? 256 * 1024 ** 3,
        maxEntries: 2_000_000,
      });
      const sha = digest.hash.digest('hex');
      if (sha !== info.sha256)
        throw new AppError(
          'CHECKSUM_MISMATCH',
          `backup ${backupId} of instance ${instanceId} is corrupt (sha256 ${sha}, expected ${info.sha256})`,
        );
      if (owner && (owner.uid !== process.getuid?.() || owner.gid !== process.getgid?.())) await giveTree(staging, owner);
      await swapDirectory(target, staging, old, current !== undefined);
    } catch (err) {
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
    return { restored: backupId, safetyBackupId: safety };
  }

  /** The instance user as create set it: the container's recorded user, else the directory's owner. */
  private ownerOf(container: ContainerDetails | undefined, current: { uid: number; gid: number } | undefined): Owner | undefined {
    if (container) {
      const user = recordedUser(container.labels, container.user);
      if (user) {
        try {
          return directoryOwner(user);
        } catch {
          // a named (non-numeric) image user: fall back to the directory's owner
        }
      }
    }
    return current ? { uid: current.uid, gid: current.gid } : undefined;
  }
}
