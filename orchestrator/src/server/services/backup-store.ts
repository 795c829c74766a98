// The orchestrator's off-host backup store: every backup a host writes is
// copied here (streamed, sha256 checked against the host's BackupInfo, written
// to a temp file and renamed), recorded in the store (`stored_backups`), and
// pushed back to a host that no longer has it before a restore. Archives live
// under `<dir>/<instance-id>/<backup-id>.tar.gz` (ENDERCLOUD_BACKUP_DIR, default
// `<data>/backups`), so a restore works after the game host is gone.

import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError, isAppError } from '../../shared/errors.js';
import { RESOURCE_ID_PATTERN, assertId } from '../../shared/ids.js';
import type { Logger } from '../../shared/logger.js';
import type { Store, StoredBackup } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { BackupHooks } from '../lifecycle-engine/backup-runner.js';
import { capability, type BackupInfo, type CallIds, type DriverHost, type HostDriver } from '../drivers/host-driver.js';

export interface BackupStoreOptions {
  dir: string;
  store: Store;
  driver: HostDriver;
  clock: Clock;
  logger: Logger;
}

/** One backup as the list route shows it: where it is kept. */
export interface BackupListing extends BackupInfo {
  /** In the orchestrator's store (survives the host). */
  stored: boolean;
  /** On the instance's host; null when the host could not be asked. */
  onHost: boolean | null;
  trigger: string | null;
  originHost: string | null;
}

/** Hashes and counts what flows through. */
class Digest extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  override _transform(chunk: Buffer, _e: BufferEncoding, cb: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    cb(null, chunk);
  }
}

export function toBackupInfo(b: StoredBackup): BackupInfo {
  return {
    backupId: b.backupId,
    sizeBytes: b.sizeBytes,
    sha256: b.sha256,
    createdAt: new Date(b.createdAt).toISOString(),
    ...(b.paths ? { paths: b.paths } : {}),
  };
}

export class BackupStore {
  private readonly tmpDir: string;

  constructor(private readonly deps: BackupStoreOptions) {
    this.tmpDir = path.join(deps.dir, '.tmp');
  }

  get dir(): string {
    return this.deps.dir;
  }

  /** Creates the directory and drops copies a crash interrupted. */
  async init(): Promise<void> {
    await rm(this.tmpDir, { recursive: true, force: true });
    await mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
  }

  private relative(instanceId: string, backupId: string): string {
    return path.join(
      assertId('instance id', instanceId, RESOURCE_ID_PATTERN),
      `${assertId('backup id', backupId, RESOURCE_ID_PATTERN)}.tar.gz`,
    );
  }

  /** Writes `source` to the store atomically; CHECKSUM_MISMATCH when it does not hash to `sha256` (when given). */
  private async write(
    instanceId: string,
    backupId: string,
    source: Readable,
    sha256?: string,
  ): Promise<{ storedPath: string; sha256: string; sizeBytes: number }> {
    const storedPath = this.relative(instanceId, backupId);
    const final = path.join(this.deps.dir, storedPath);
    await mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
    await mkdir(path.dirname(final), { recursive: true, mode: 0o700 });
    const tmp = path.join(this.tmpDir, `${instanceId}.${backupId}.${randomBytes(6).toString('hex')}`);
    const digest = new Digest();
    try {
      await pipeline(source, digest, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
      const got = digest.hash.digest('hex');
      if (sha256 !== undefined && got !== sha256)
        throw new AppError('CHECKSUM_MISMATCH', `the copy of backup ${backupId} hashes to ${got}, the host said ${sha256}`, {
          // Unlike a corrupt archive, a copy that hashed wrong may be cured by copying again (the host's backup is intact).
          retryable: true,
        });
      await rename(tmp, final);
      return { storedPath, sha256: got, sizeBytes: digest.bytes };
    } catch (err) {
      if (isAppError(err)) throw err;
      throw new AppError('UPSTREAM_FAILED', `copying backup ${backupId} of instance ${instanceId} failed: ${(err as Error).message}`, {
        cause: err,
      });
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Copies a backup the host just wrote into the store and records it; a copy already kept with the same hash is not fetched again. */
  async copyFromHost(host: DriverHost, instanceId: string, info: BackupInfo, trigger: string, ids: CallIds = {}): Promise<StoredBackup> {
    const existing = await this.deps.store.storedBackups.get(instanceId, info.backupId);
    if (existing?.sha256 === info.sha256 && (await this.exists(existing))) return existing;
    const { stream } = await capability(this.deps.driver.backups, 'backups', host).download(host, instanceId, info.backupId, ids);
    const written = await this.write(instanceId, info.backupId, stream, info.sha256);
    const record = await this.deps.store.storedBackups.put({
      instanceId,
      backupId: info.backupId,
      sha256: written.sha256,
      sizeBytes: written.sizeBytes,
      createdAt: Date.parse(info.createdAt) || this.deps.clock.now(),
      storedAt: this.deps.clock.now(),
      originHost: host.id,
      storedPath: written.storedPath,
      paths: info.paths ?? null,
      trigger,
    });
    this.deps.logger.info(
      { instanceId, backupId: info.backupId, sizeBytes: written.sizeBytes, host: host.id },
      'backup copied to the backup store',
    );
    return record;
  }

  /** Keeps an archive that did not come from a host (an uploaded import) as a backup of the instance. */
  async keepUploaded(instanceId: string, backupId: string, source: Readable): Promise<StoredBackup> {
    const written = await this.write(instanceId, backupId, source);
    const now = this.deps.clock.now();
    return this.deps.store.storedBackups.put({
      instanceId,
      backupId,
      sha256: written.sha256,
      sizeBytes: written.sizeBytes,
      createdAt: now,
      storedAt: now,
      originHost: null,
      storedPath: written.storedPath,
      paths: null,
      trigger: 'upload',
    });
  }

  private async exists(b: StoredBackup): Promise<boolean> {
    return stat(path.join(this.deps.dir, b.storedPath)).then(
      (s) => s.isFile() && s.size === b.sizeBytes,
      () => false,
    );
  }

  /** The record of a backup whose archive the store holds (a file of the recorded size); undefined otherwise. `store`: the caller's transaction. */
  async holds(
    instanceId: string,
    backupId: string,
    store: Pick<Store, 'storedBackups'> = this.deps.store,
  ): Promise<StoredBackup | undefined> {
    const record = await store.storedBackups.get(instanceId, backupId);
    return record && (await this.exists(record)) ? record : undefined;
  }

  /** A kept archive as a stream; NOT_FOUND when the store has none. */
  async open(instanceId: string, backupId: string): Promise<{ record: StoredBackup; stream: Readable }> {
    const record = await this.deps.store.storedBackups.get(instanceId, backupId);
    if (!record || !(await this.exists(record)))
      throw new AppError('NOT_FOUND', `the backup store holds no backup ${backupId} of instance ${instanceId}`);
    return { record, stream: createReadStream(path.join(this.deps.dir, record.storedPath)) };
  }

  /**
   * Before a restore: a host that lacks the backup gets it from the store
   * (the host checks the sha256 again). Answers whether it had to upload.
   */
  async ensureOnHost(
    host: DriverHost,
    instanceId: string,
    backupId: string,
    ids: CallIds = {},
  ): Promise<'present' | 'uploaded' | 'unknown'> {
    const record = await this.deps.store.storedBackups.get(instanceId, backupId);
    if (!record) return 'unknown'; // a host-only backup: the host restores it or answers NOT_FOUND itself
    const backups = capability(this.deps.driver.backups, 'backups', host);
    if ((await backups.list(host, instanceId, ids)).some((b) => b.backupId === backupId)) return 'present';
    const { stream } = await this.open(instanceId, backupId);
    await backups.upload(host, instanceId, toBackupInfo(record), stream, ids);
    this.deps.logger.info({ instanceId, backupId, host: host.id }, 'backup uploaded from the backup store to its host');
    return 'uploaded';
  }

  /** The store's and the host's backups of an instance, merged, oldest first. */
  async list(
    instanceId: string,
    host: DriverHost | undefined,
    ids: CallIds = {},
  ): Promise<{ backups: BackupListing[]; hostError: string | null }> {
    const stored = await this.deps.store.storedBackups.listForInstance(instanceId);
    let onHost: BackupInfo[] | undefined;
    let hostError: string | null = host ? null : 'the instance has no host';
    if (host) {
      try {
        onHost = await capability(this.deps.driver.backups, 'backups', host).list(host, instanceId, ids);
      } catch (err) {
        hostError = (err as Error).message;
      }
    }
    const hostIds = new Set((onHost ?? []).map((b) => b.backupId));
    const out: BackupListing[] = stored.map((b) => ({
      ...toBackupInfo(b),
      stored: true,
      onHost: onHost ? hostIds.has(b.backupId) : null,
      trigger: b.trigger,
      originHost: b.originHost,
    }));
    const storedIds = new Set(stored.map((b) => b.backupId));
    for (const b of onHost ?? [])
      if (!storedIds.has(b.backupId)) out.push({ ...b, stored: false, onHost: true, trigger: null, originHost: host?.id ?? null });
    out.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.backupId.localeCompare(b.backupId));
    return { backups: out, hostError };
  }

  /** Removes every kept archive of an instance and their records (the `backups` deletion scope). */
  async deleteAll(instanceId: string): Promise<number> {
    const all = await this.deps.store.storedBackups.listForInstance(instanceId);
    for (const b of all) await this.delete(instanceId, b.backupId);
    await rm(path.join(this.deps.dir, assertId('instance id', instanceId, RESOURCE_ID_PATTERN)), { recursive: true, force: true });
    return all.length;
  }

  /** Removes one kept archive and its record (retention, deletion). */
  async delete(instanceId: string, backupId: string): Promise<boolean> {
    const record = await this.deps.store.storedBackups.get(instanceId, backupId);
    if (!record) return false;
    await rm(path.join(this.deps.dir, record.storedPath), { force: true });
    return this.deps.store.storedBackups.delete(instanceId, backupId);
  }
}

/** Who asked for a backup, from its command: `schedule` (payload), `manual` (the backup action), else the id's prefix (`stop`, `archive`, …). */
export function backupTrigger(payload: Record<string, unknown>, backupId: string): string {
  if (typeof payload.trigger === 'string') return payload.trigger;
  const prefix = backupId.split('-')[0] ?? 'backup';
  return prefix === 'backup' ? 'manual' : prefix;
}

/** The lifecycle engine's backup hooks: copy every written backup off the host, and re-seed a host before a restore. */
export function backupStoreHooks(backups: BackupStore): BackupHooks {
  return {
    written: async (instance, ctx, info) => {
      await backups.copyFromHost(ctx.host, instance.id, info, backupTrigger(ctx.cmd.payload, info.backupId), ctx.ids);
    },
    beforeRestore: async (instance, ctx, backupId) => {
      await backups.ensureOnHost(ctx.host, instance.id, backupId, ctx.ids);
    },
    deletedAll: async (instanceId) => {
      await backups.deleteAll(instanceId);
    },
  };
}
