// The files of an instance's data directory, for the public files routes and
// the SFTP server alike (one path for both: the same host capability, the same
// checks at the host, the same audit). Reads are not audited; every write is
// (action `file.*`, target the instance, the paths — never content), with its
// result and error code, whoever asked and over which channel. The template's
// file denylist (eggs/file-denylist.ts) is applied here, for both channels:
// a denied path is refused (FILE_DENIED) before the host is asked.

import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type * as Api from '../../contracts/agent-api.js';
import type { Instance, JsonObject } from '../../domain/index.js';
import { AppError, isAppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { capability, type DriverHost, type HostDriver, type HostFiles } from '../drivers/host-driver.js';
import type { LifecycleService } from './lifecycle-service.js';
import { assertAllowed, compileDenylist } from '../../eggs/file-denylist.js';
import { templateOf } from './template-of.js';

export interface InstanceFileServiceOptions {
  store: Store;
  clock: Clock;
  lifecycle: LifecycleService;
  driver: HostDriver;
  logger: Logger;
  /** ENDERCLOUD_FILE_UPLOAD_MAX_BYTES. */
  maxUploadBytes: number;
}

/** Who asks: the audit actor (token name), the channel, and the request id for the log and the host. */
export interface FileCaller {
  actor: string;
  via: 'http' | 'sftp';
  requestId?: string;
}

type FileAction = 'file.write' | 'file.mkdir' | 'file.rename' | 'file.delete' | 'file.archive' | 'file.extract';

interface Target {
  instance: Instance;
  host: DriverHost;
  files: HostFiles;
  /** FILE_DENIED when the template's denylist covers one of the paths. */
  allow(...paths: string[]): void;
}

/** The path as the host will read it (empty and `.` segments dropped); `..` is left for the host to refuse. */
function normalised(path: string): string {
  return `/${path
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .join('/')}`;
}

/** Fails with FILE_TOO_LARGE once more than `limit` bytes went through. */
class SizeLimit extends Transform {
  private bytes = 0;
  constructor(
    private readonly limit: number,
    private readonly path: string,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit)
      callback(
        new AppError(
          'FILE_TOO_LARGE',
          `${this.path} is larger than the upload limit of ${this.limit} bytes (ENDERCLOUD_FILE_UPLOAD_MAX_BYTES)`,
        ),
      );
    else callback(null, chunk);
  }
}

function utcStamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace('T', '-')
    .replace(/\.\d+Z$/, '');
}

export class InstanceFileService {
  readonly maxUploadBytes: number;

  constructor(private readonly deps: InstanceFileServiceOptions) {
    this.maxUploadBytes = deps.maxUploadBytes;
  }

  /** The instance (by id or name) and the host capability its files are reached through. */
  private async target(ref: string): Promise<Target> {
    const instance = await this.deps.lifecycle.find(ref);
    const host = instance.hostId ? await this.deps.store.hosts.get(instance.hostId) : undefined;
    if (!host) throw new AppError('INSTANCE_CONFLICT', `instance ${instance.name} is not placed on a host yet, so it has no files`);
    const files = capability(this.deps.driver.files, 'files', host);
    const rules = compileDenylist((await templateOf(this.deps.store, instance))?.fileDenylist ?? []);
    return { instance, host, files, allow: (...paths) => paths.forEach((p) => assertAllowed(rules, normalised(p))) };
  }

  /** The instance a ref names (SFTP login checks it exists). */
  async instance(ref: string): Promise<Instance> {
    return this.deps.lifecycle.find(ref);
  }

  /** FILE_DENIED when the template's denylist covers `path` (SFTP refuses such an open before any data moves). */
  async assertAllowed(ref: string, path: string): Promise<void> {
    (await this.target(ref)).allow(path);
  }

  async list(ref: string, path: string, caller: FileCaller): Promise<Api.FileList> {
    const t = await this.target(ref);
    return t.files.list(t.host, t.instance.id, path, ids(caller));
  }

  async stat(ref: string, path: string, caller: FileCaller): Promise<Api.FileEntry> {
    const t = await this.target(ref);
    return t.files.stat(t.host, t.instance.id, path, ids(caller));
  }

  /** A file's bytes from `offset`, streamed from the host. */
  async read(
    ref: string,
    path: string,
    caller: FileCaller,
    offset = 0,
  ): Promise<{ size: number; modifiedAt: number; stream: Readable; name: string }> {
    const t = await this.target(ref);
    t.allow(path);
    const opened = await t.files.read(t.host, t.instance.id, path, offset, ids(caller));
    return { ...opened, name: path.slice(path.lastIndexOf('/') + 1) };
  }

  /** Creates or replaces a file with the stream's bytes, bounded by the upload limit. */
  write(ref: string, path: string, content: Readable, caller: FileCaller): Promise<Api.FileWritten> {
    return this.audited('file.write', ref, caller, { path }, async (t) => {
      t.allow(path);
      const limit = new SizeLimit(this.maxUploadBytes, path);
      content.on('error', (err) => limit.destroy(err));
      const written = await t.files.write(t.host, t.instance.id, path, content.pipe(limit), this.maxUploadBytes, ids(caller));
      return { result: written, params: { path, size: written.size } };
    });
  }

  mkdir(ref: string, path: string, caller: FileCaller): Promise<{ path: string }> {
    return this.audited('file.mkdir', ref, caller, { path }, async (t) => {
      t.allow(path);
      return { result: await t.files.mkdir(t.host, t.instance.id, path, ids(caller)) };
    });
  }

  rename(ref: string, from: string, to: string, caller: FileCaller): Promise<{ from: string; to: string }> {
    return this.audited('file.rename', ref, caller, { from, to }, async (t) => {
      t.allow(from, to);
      return { result: await t.files.rename(t.host, t.instance.id, from, to, ids(caller)) };
    });
  }

  remove(ref: string, paths: readonly string[], caller: FileCaller): Promise<Api.FileDeleted> {
    return this.audited('file.delete', ref, caller, { paths: [...paths] }, async (t) => {
      t.allow(...paths);
      return { result: await t.files.remove(t.host, t.instance.id, paths, ids(caller)) };
    });
  }

  archive(ref: string, paths: readonly string[], destination: string | undefined, caller: FileCaller): Promise<Api.FileWritten> {
    const dest = destination ?? `/archive-${utcStamp(this.deps.clock.now())}.tar.gz`;
    return this.audited('file.archive', ref, caller, { paths: [...paths], destination: dest }, async (t) => {
      t.allow(...paths, dest);
      const written = await t.files.archive(t.host, t.instance.id, paths, dest, ids(caller));
      return { result: written, params: { paths: [...paths], destination: written.path, size: written.size } };
    });
  }

  extract(ref: string, path: string, destination: string | undefined, caller: FileCaller): Promise<Api.FileExtracted> {
    return this.audited('file.extract', ref, caller, { path, ...(destination ? { destination } : {}) }, async (t) => {
      t.allow(path, ...(destination ? [destination] : []));
      const done = await t.files.extract(t.host, t.instance.id, path, destination, ids(caller));
      return { result: done, params: { path, destination: done.destination, entries: done.entries } };
    });
  }

  /** Runs one write and appends its audit entry, ok or error (paths only, never content). */
  private async audited<T>(
    action: FileAction,
    ref: string,
    caller: FileCaller,
    params: JsonObject,
    fn: (t: Target) => Promise<{ result: T; params?: JsonObject }>,
  ): Promise<T> {
    let targetId = ref;
    const entry = (result: 'ok' | 'error', p: JsonObject, errorCode: string | null) => ({
      at: this.deps.clock.now(),
      actor: caller.actor,
      action,
      targetKind: 'instance',
      targetId,
      params: { ...p, via: caller.via },
      result,
      errorCode,
      requestId: caller.requestId ?? null,
    });
    let outcome: { result: T; params?: JsonObject };
    try {
      const t = await this.target(ref);
      targetId = t.instance.id;
      outcome = await fn(t);
    } catch (err) {
      await this.append(entry('error', params, isAppError(err) ? err.code : 'INTERNAL'));
      throw err;
    }
    await this.append(entry('ok', outcome.params ?? params, null));
    return outcome.result;
  }

  private async append(event: Parameters<Store['audit']['append']>[0]): Promise<void> {
    try {
      await this.deps.store.audit.append(event);
    } catch (err) {
      this.deps.logger.error({ err, action: event.action, targetId: event.targetId }, 'could not write the audit entry');
    }
  }
}

function ids(caller: FileCaller): { requestId?: string } {
  return caller.requestId ? { requestId: caller.requestId } : {};
}
