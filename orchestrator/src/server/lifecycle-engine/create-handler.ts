// The `create` command: asks the host for the instance's container (created
// stopped when the caller said `start: false` or an import must go in first),
// writes an import before the first start, then records the endpoint and moves
// installing → stopped (→ starting). Guarded by the `installing` state, so a
// re-dispatch after a crash changes nothing the second time; a create that
// failed for good leaves the instance in `error` with the host's reason and,
// when no container came of it, releases its memory on the host.

import type { Readable } from 'node:stream';
import type { Command, Host, Instance, InstanceFleet, JsonObject, ObservedState } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import { capability, type CallIds, type HostDriver, type InstanceEndpoint } from '../drivers/host-driver.js';
import type { BackupStore } from '../services/backup-store.js';
import type { Clock } from '../clock.js';
import { agentCreateBody } from '../services/instance-config.js';
import type { CommandHandler } from './command-handler.js';
import { moveInstance } from './instance-transitions.js';
import { runInstallScript } from './install-script.js';
import { templateOf } from '../services/template-of.js';
import { networkSecretFor } from '../provisioning/network-secret.js';

export interface CreateHandlerOptions {
  store: Store;
  driver: HostDriver;
  clock: Clock;
  /** uid:gid of the `endercloud` container user mode. */
  endercloudUser?: { uid: number; gid: number };
  /** Stored import archives (create with `import`). */
  imports?: { open(uploadId: string): Promise<{ stream: Readable }> };
  /** A container was started: the supervisor begins probing it. */
  onStarted: (instanceId: string) => void;
  /** The network's shared secret, for templates that declare where it goes. */
  networkSecret?: { get(): Promise<string> };
  /** The backup store: puts an archived world's final backup on its new host (unarchive elsewhere). */
  archives?: Pick<BackupStore, 'ensureOnHost'>;
}

const CONTAINER_STATES: readonly ObservedState['container'][] = [
  'absent',
  'created',
  'running',
  'paused',
  'restarting',
  'exited',
  'dead',
  'unknown',
];

export class CreateHandler implements CommandHandler {
  constructor(private readonly deps: CreateHandlerOptions) {}

  async run(cmd: Command, host: Host, log: Logger): Promise<JsonObject> {
    const { store, driver } = this.deps;
    const instanceId = cmd.instanceId ?? '';
    const instance = await store.instances.get(instanceId);
    if (!instance) throw new AppError('INSTANCE_NOT_FOUND', `instance ${instanceId} no longer exists`);
    const ids = { commandId: cmd.id, requestId: cmd.requestId };
    const template = await templateOf(store, instance);
    const body = agentCreateBody(instance, template, {
      ...(this.deps.endercloudUser ? { endercloudUser: this.deps.endercloudUser } : {}),
      ...(await networkSecretFor(template, this.deps.networkSecret)),
    });
    const imp = importOf(cmd.payload);
    const restore = restoreOf(cmd.payload);
    const start = cmd.payload.start !== false;
    const install = restore ? undefined : template?.install; // a restored world was installed where it came from
    // With an import, a restore or an install script the container is created stopped, the data goes in, and only then it starts.
    const dataFirst = imp !== undefined || restore !== undefined || install !== undefined;
    let res = await driver.create(host, instanceId, { ...body, start: start && !dataFirst }, ids);
    // The container exists from here on: a later step that fails for good leaves its reservation held.
    await store.instances.update(instanceId, { observed: observedOf(res.state, this.deps.clock.now()) }, { now: this.deps.clock.now() });
    if (imp) await this.importData(cmd, host, imp, log);
    const restoreNote = restore ? await this.restoreFinalBackup(host, instanceId, restore, res.state, log, ids) : '';
    const installNote = install
      ? await runInstallScript(capability(driver.eggs, 'install script', host), host, instanceId, install, body, ids)
      : '';
    if (dataFirst && start) res = await driver.start(host, instanceId, ids);
    const note = `${imp ? `; imported upload ${imp.uploadId} into ${imp.destination}` : ''}${restoreNote}${installNote}`;
    const updated = await this.recordCreated(cmd, instance, host, res, start, note);
    if (updated?.state === 'starting') this.deps.onStarted(updated.id);
    return {
      containerId: res.containerId,
      containerName: res.containerName,
      hostPort: res.hostPort,
      endpoint: res.endpoint,
      state: res.state,
    };
  }

  /**
   * `error` with the host's reason. A create that left no container (an image that cannot be
   * pulled, no port) also releases its memory on the host, so later placements see the room;
   * a start of it reserves it again (lifecycle-service.ts). One that got as far as a container
   * keeps it: the container is there.
   */
  async failedForGood(cmd: Command, message: string): Promise<void> {
    const now = this.deps.clock.now();
    await this.deps.store.transaction(async (tx) => {
      const instance = cmd.instanceId ? await tx.instances.get(cmd.instanceId) : undefined;
      if (instance?.state !== 'installing') return;
      const noContainer = instance.observed === null || instance.observed.container === 'absent';
      const release = noContainer && instance.memoryReserved && instance.hostId !== null ? instance.hostId : null;
      if (release !== null) await tx.hosts.releaseMemory(release, instance.memoryMb);
      const freed = release !== null ? `; its ${instance.memoryMb} MiB on host ${release} were released (a start reserves them again)` : '';
      await moveInstance(tx, instance, 'error', {
        now,
        reason: `create failed: ${message}${freed}`,
        commandId: cmd.id,
        patch: {
          ...(instance.activeAction?.commandId === cmd.id ? { activeAction: null } : {}),
          ...(release !== null ? { memoryReserved: false } : {}),
        },
      });
    });
  }

  private async recordCreated(
    cmd: Command,
    instance: Instance,
    host: Host,
    res: InstanceEndpoint,
    start: boolean,
    note: string,
  ): Promise<Instance | undefined> {
    const now = this.deps.clock.now();
    const observed = observedOf(res.state, now);
    return this.deps.store.transaction(async (tx) => {
      const current = await tx.instances.get(instance.id);
      if (current?.state !== 'installing') return current;
      // A create run for an action (the start of an archived world) frees the instance for the next one.
      const owned = current.activeAction?.commandId === cmd.id ? { activeAction: null } : {};
      const fleet = current.fleet?.archived ? { fleet: withoutArchived(current.fleet) } : {};
      const stopped = await moveInstance(tx, current, 'stopped', {
        now,
        reason: `container ${res.containerName} created${note}`,
        commandId: cmd.id,
        patch: {
          hostPort: res.hostPort,
          endpoint: res.hostPort === null ? null : { host: host.gameAddress, port: res.hostPort },
          observed,
          ...owned,
          ...fleet,
        },
      });
      if (!stopped || !start) return stopped;
      return moveInstance(tx, stopped, 'starting', { now, reason: 'container started after creation', commandId: cmd.id });
    });
  }

  /**
   * Unarchive on another host: the archive's final backup goes from the backup
   * store to the new host (which checks its sha256) and is restored into the
   * created, not yet started instance before its first start. A retry that
   * finds the container running (an earlier attempt got that far) leaves it.
   */
  private async restoreFinalBackup(
    host: Host,
    instanceId: string,
    restore: { backupId: string; fromHostId: string | null },
    state: string,
    log: Logger,
    ids: CallIds,
  ): Promise<string> {
    if (state === 'running' || state === 'paused') return `; final backup ${restore.backupId} already restored by an earlier attempt`;
    if (!this.deps.archives) throw new AppError('INTERNAL', 'this orchestrator has no backup store to restore an archived world from');
    const copied = await this.deps.archives.ensureOnHost(host, instanceId, restore.backupId, ids);
    if (copied === 'unknown') {
      throw new AppError(
        'NOT_FOUND',
        `the final backup ${restore.backupId} of archived instance ${instanceId} is no longer in the backup store; the world cannot be brought to host ${host.id}`,
      );
    }
    const answer = await capability(this.deps.driver.backups, 'backups', host).restore(host, instanceId, restore.backupId, ids);
    log.info(
      { instanceId, backupId: restore.backupId, fromHost: restore.fromHostId, host: host.id, copied },
      'archived world restored from its final backup on a new host',
    );
    return `; world restored from final backup ${answer.restored} (kept on host ${restore.fromHostId ?? 'unknown'}, ${copied === 'uploaded' ? 'copied from the backup store' : 'already on this host'})`;
  }

  private async importData(cmd: Command, host: Host, imp: { uploadId: string; destination: string }, log: Logger): Promise<void> {
    if (!this.deps.imports) throw new AppError('INTERNAL', 'this orchestrator has no import store');
    const { stream } = await this.deps.imports.open(imp.uploadId);
    try {
      const importer = capability(this.deps.driver.dataImport, 'data import', host);
      const result = await importer.importData(host, cmd.instanceId as string, imp.destination, stream, {
        commandId: cmd.id,
        requestId: cmd.requestId,
      });
      log.info({ uploadId: imp.uploadId, ...result }, 'import written before the first start');
    } catch (err) {
      stream.destroy();
      // A retry after the data went in (a later step failed) finds it there: the
      // agent never overwrites, so its conflict means this command's own import.
      if (cmd.attempts > 1 && err instanceof AppError && err.code === 'INSTANCE_CONFLICT') {
        log.warn({ uploadId: imp.uploadId, error: err.message }, 'import already present from an earlier attempt');
        return;
      }
      throw err;
    }
  }
}

function observedOf(state: string, now: number): ObservedState {
  return {
    container: (CONTAINER_STATES as readonly string[]).includes(state) ? (state as ObservedState['container']) : 'unknown',
    observedAt: now,
  };
}

function withoutArchived(fleet: InstanceFleet): InstanceFleet {
  const rest = { ...fleet };
  delete rest.archived;
  return rest;
}

function restoreOf(payload: JsonObject): { backupId: string; fromHostId: string | null } | undefined {
  const r = payload.restore as { backupId?: unknown; fromHostId?: unknown } | undefined;
  if (!r || typeof r.backupId !== 'string') return undefined;
  return { backupId: r.backupId, fromHostId: typeof r.fromHostId === 'string' ? r.fromHostId : null };
}

function importOf(payload: JsonObject): { uploadId: string; destination: string } | undefined {
  const imp = payload.import as { uploadId?: unknown; destination?: unknown } | undefined;
  if (!imp || typeof imp.uploadId !== 'string') return undefined;
  return { uploadId: imp.uploadId, destination: typeof imp.destination === 'string' ? imp.destination : '.' };
}
