// The API side of a manual backup and of a restore (docs/lifecycle.md "Backups
// and restore"): the explicit choice to stop a running server whose backup
// cannot be taken online, and a restore from a kept backup or from an archive
// uploaded with PUT /imports (kept in the backup store first, so the restore
// pushes it to the host like any stored backup). The routes only parse and
// audit; the worker runs the persisted command.

import type { BackupBody, RestoreBody } from '../../contracts/public-api/bodies.js';
import type { Instance } from '../../domain/index.js';
import type { Actor } from '../../lifecycle/actions.js';
import { manualBackupStopReason } from '../../lifecycle/backup.js';
import { AppError } from '../../shared/errors.js';
import type { Clock } from '../clock.js';
import type { BackupStore } from './backup-store.js';
import type { ImportStore } from './import-store.js';
import type { ActionRequestResult, LifecycleService } from './lifecycle-service.js';

const RUNNING: readonly (string | undefined)[] = ['running', 'paused'];

export interface BackupRequestOptions {
  lifecycle: LifecycleService;
  imports: Pick<ImportStore, 'get' | 'open'>;
  backupStore: Pick<BackupStore, 'keepUploaded'>;
  clock: Clock;
}

/** The backup id an uploaded archive is kept under: `upload-<UTC time>-<first 8 of the upload id>`. */
export function uploadedBackupId(now: number, uploadId: string): string {
  const at = new Date(now)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `upload-${at}-${uploadId.replace(/^imp-/, '').slice(0, 8)}`;
}

export class BackupRequestService {
  constructor(private readonly deps: BackupRequestOptions) {}

  /** Queues a manual backup; 409 INSTANCE_CONFLICT naming why when it would stop the server and `stop` was not chosen. */
  async backup(instance: Instance, body: BackupBody, actor: Actor, requestId: string): Promise<ActionRequestResult> {
    const running = RUNNING.includes(instance.observed?.container) && instance.state !== 'stopped';
    const template = await this.deps.lifecycle.templateOf(instance);
    const rcon = template?.stop.rcon;
    const why = manualBackupStopReason(template, running, Boolean(rcon && instance.secretSettings[rcon.passwordVariable]));
    if (why && body.stop !== true) {
      throw new AppError(
        'INSTANCE_CONFLICT',
        `backing up ${instance.name} stops it: online save is unavailable because ${why}. Send {"stop": true} to stop it, back it up and start it again`,
        { details: { choice: 'stop', onlineSave: false, reason: why } },
      );
    }
    return this.deps.lifecycle.request(instance.id, 'backup', actor, {
      requestId,
      payload: { previousState: instance.state, ...(body.reason ? { reason: body.reason } : {}) },
    });
  }

  /**
   * Queues a restore of a kept backup or of an uploaded archive, with the typed
   * name as confirmation. The lifecycle rules are asked first, so a refused
   * restore stores no upload.
   */
  async restore(
    instance: Instance,
    body: RestoreBody,
    actor: Actor,
    requestId: string,
  ): Promise<ActionRequestResult & { backupId: string }> {
    if ((body.backupId === undefined) === (body.uploadId === undefined))
      throw new AppError('VALIDATION_FAILED', 'send either "backupId" (a kept backup) or "uploadId" (an archive from PUT /imports)');
    if (body.confirm !== instance.name) {
      throw new AppError(
        'CONFIRMATION_REQUIRED',
        `restoring replaces the current data: send "confirm" equal to the instance name ${JSON.stringify(instance.name)}`,
      );
    }
    await this.deps.lifecycle.check(instance.id, 'restore', actor);
    let backupId = body.backupId as string;
    if (body.uploadId !== undefined) {
      // The upload already passed the import checks (size, safe tar); it becomes a stored backup the restore pushes to the host.
      if (!(await this.deps.imports.get(body.uploadId))) throw new AppError('NOT_FOUND', `import upload ${body.uploadId} does not exist`);
      backupId = uploadedBackupId(this.deps.clock.now(), body.uploadId);
      await this.deps.backupStore.keepUploaded(instance.id, backupId, (await this.deps.imports.open(body.uploadId)).stream);
    }
    const result = await this.deps.lifecycle.request(instance.id, 'restore', actor, { requestId, payload: { backupId } });
    return { ...result, backupId };
  }
}
