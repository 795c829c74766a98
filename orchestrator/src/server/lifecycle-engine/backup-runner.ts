// The worker steps for the `backup` and `restore` actions and a stop that asks
// for a backup, following the pure rules of lifecycle/backup.ts.
// Archives live on the agent (`/instances/:id/backups`); history records each one.

import type { Instance, InstanceState, JsonObject, TemplateSpec } from '../../domain/index.js';
import { describeStop, planStop, stopPath } from '../../lifecycle/stop.js';
import { AppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import { capability, type BackupInfo, type HostDriver } from '../drivers/host-driver.js';
import type { Clock } from '../clock.js';
import { backupIdFor, backupMode, type FailurePolicy } from '../../lifecycle/backup.js';
import { moveInstance } from './instance-transitions.js';
import { transitionEvent } from '../../lifecycle/states.js';
import type { RunContext } from './run-context.js';

/** What happens around the host's archive calls (the off-host backup store plugs in here). */
export interface BackupHooks {
  /** The host wrote a backup. A failure is logged and never fails the backup: it stays listed as host-only. */
  written?(instance: Instance, ctx: RunContext, info: BackupInfo): Promise<void>;
  /** Before the host restores `backupId` (a host that lacks it gets it from the store). */
  beforeRestore?(instance: Instance, ctx: RunContext, backupId: string): Promise<void>;
  /** The `backups` deletion scope: every copy of the instance's backups goes too. */
  deletedAll?(instanceId: string): Promise<void>;
}

export interface BackupRunnerOptions {
  store: Store;
  driver: HostDriver;
  clock: Clock;
  onStarted: (instanceId: string) => void;
  hooks?: BackupHooks;
}

const RUNNING: readonly (string | undefined)[] = ['running', 'paused'];

export class BackupRunner {
  constructor(private readonly deps: BackupRunnerOptions) {}

  private get now(): number {
    return this.deps.clock.now();
  }

  private rconTarget(instance: Instance, template: TemplateSpec | undefined): { port: number; password: string } | undefined {
    const rcon = template?.stop.rcon;
    const password = rcon ? instance.secretSettings[rcon.passwordVariable] : undefined;
    return rcon && password ? { port: rcon.port, password } : undefined;
  }

  private rcon(instance: Instance, ctx: RunContext, command: string): Promise<{ response: string }> {
    const target = this.rconTarget(instance, ctx.template) as { port: number; password: string };
    return capability(this.deps.driver.rcon, 'rcon', ctx.host).command(ctx.host, instance.id, { ...target, command }, ctx.ids);
  }

  /** save-off, save-all flush, archive while running, save-on (also after a failure). */
  private async onlineArchive(instance: Instance, ctx: RunContext, backupId: string): Promise<BackupInfo> {
    await this.rcon(instance, ctx, 'save-off');
    try {
      await this.rcon(instance, ctx, 'save-all flush');
      return await this.archive(instance, ctx, backupId);
    } finally {
      await this.rcon(instance, ctx, 'save-on').catch((err: unknown) =>
        ctx.log.warn({ instanceId: instance.id, err: (err as Error).message }, 'save-on after a backup failed'),
      );
    }
  }

  private async archive(instance: Instance, ctx: RunContext, backupId: string): Promise<BackupInfo> {
    const paths = ctx.template?.backup?.paths;
    const info = await capability(this.deps.driver.backups, 'backups', ctx.host).create(
      ctx.host,
      instance.id,
      { backupId, ...(paths ? { paths } : {}) },
      ctx.ids,
    );
    await this.deps.hooks
      ?.written?.(instance, ctx, info)
      .catch((err: unknown) =>
        ctx.log.warn(
          { instanceId: instance.id, backupId, err: (err as Error).message },
          'the off-host copy of a backup failed; it stays on its host only',
        ),
      );
    return info;
  }

  /**
   * The archive tier's final backup: saved over RCON while running when the
   * template allows it, otherwise after a stop (the container stays stopped);
   * a stopped instance is archived as it is. The action stays active.
   */
  async finalBackup(instance: Instance, ctx: RunContext, backupId: string): Promise<{ info: BackupInfo; stoppedForIt: boolean }> {
    const running = RUNNING.includes(instance.observed?.container);
    const mode = backupMode(ctx.template, running, this.rconTarget(instance, ctx.template) !== undefined);
    if (mode === 'online_save') return { info: await this.onlineArchive(instance, ctx, backupId), stoppedForIt: false };
    if (mode === 'stop_first') await this.stopKeepingAction(instance, ctx);
    return { info: await this.archive(instance, ctx, backupId), stoppedForIt: mode === 'stop_first' };
  }

  /** `save-all flush` over RCON when the template declares RCON (the pause tier's optional save); false when it cannot. */
  async saveAll(instance: Instance, ctx: RunContext): Promise<boolean> {
    if (!this.rconTarget(instance, ctx.template)) return false;
    await this.rcon(instance, ctx, 'save-all flush');
    return true;
  }

  /** Stops the container, keeping the action active; answers the history sentence. */
  private async stopKeepingAction(instance: Instance, ctx: RunContext): Promise<string> {
    const request = planStop(ctx.template?.stop ?? { signal: 'SIGTERM', timeoutMs: 30_000 }, instance.secretSettings);
    const res = await this.deps.driver.stop(ctx.host, instance.id, request, ctx.ids);
    return describeStop(stopPath(res), request.timeoutSeconds, res.exitCode);
  }

  private async startAgain(instance: Instance, ctx: RunContext, reason: string, details: JsonObject): Promise<void> {
    await this.deps.driver.start(ctx.host, instance.id, ctx.ids);
    const current = (await this.deps.store.instances.get(instance.id)) ?? instance;
    const stopped =
      current.state === 'stopped'
        ? current
        : await moveInstance(this.deps.store, current, 'stopped', {
            now: this.now,
            reason: 'stopped for a backup',
            actor: ctx.actor,
            commandId: ctx.cmd.id,
          });
    await moveInstance(this.deps.store, stopped ?? current, 'starting', {
      now: this.now,
      reason,
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      details,
      patch: { activeAction: null, desiredState: 'running', observed: { container: 'running', observedAt: this.now } },
    });
    this.deps.onStarted(instance.id);
  }

  /** The `backup` action (state `backup`): back to the previous stable state, restarting a stopped-for-backup server. */
  async backup(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    const previous = String(ctx.cmd.payload.previousState ?? 'stopped') as InstanceState;
    const running = RUNNING.includes(instance.observed?.container) && previous !== 'stopped';
    const mode = backupMode(ctx.template, running, this.rconTarget(instance, ctx.template) !== undefined);
    const backupId = backupIdFor(ctx.cmd, 'backup');
    const reasonNote = ctx.cmd.payload.reason ? ` (${String(ctx.cmd.payload.reason)})` : '';
    let info: BackupInfo;
    try {
      if (mode === 'online_save') info = await this.onlineArchive(instance, ctx, backupId);
      else if (mode === 'stop_first') {
        await this.stopKeepingAction(instance, ctx);
        try {
          info = await this.archive(instance, ctx, backupId);
        } catch (err) {
          await this.startAgain(instance, ctx, `backup failed: ${(err as Error).message}; started again`, { backupFailed: true });
          // Final whatever the code: the instance was already put back; a retry would stop it again.
          throw new AppError(err instanceof AppError ? err.code : 'INTERNAL', `backup failed: ${(err as Error).message}`, {
            retryable: false,
            cause: err,
          });
        }
      } else info = await this.archive(instance, ctx, backupId);
    } catch (err) {
      if (mode !== 'stop_first')
        await this.backToPrevious(instance, previous, ctx, `backup failed: ${(err as Error).message}`, { backupFailed: true });
      // Final whatever the code: the instance was already put back to its previous state.
      throw err instanceof AppError && err.retryable === false
        ? err
        : new AppError(err instanceof AppError ? err.code : 'INTERNAL', `backup failed: ${(err as Error).message}`, {
            retryable: false,
            cause: err,
          });
    }
    const details = { backupId: info.backupId, sizeBytes: info.sizeBytes, sha256: info.sha256, mode };
    const reason = `backup ${info.backupId} written (${mode.replace('_', ' ')})${reasonNote}`;
    if (mode === 'stop_first') await this.startAgain(instance, ctx, `${reason}; started again`, details);
    else await this.backToPrevious(instance, previous, ctx, reason, details);
    return { ...details };
  }

  private async backToPrevious(
    instance: Instance,
    previous: InstanceState,
    ctx: RunContext,
    reason: string,
    details: JsonObject,
  ): Promise<void> {
    const current = (await this.deps.store.instances.get(instance.id)) ?? instance;
    const to: InstanceState = ['online', 'degraded', 'stopped'].includes(previous) ? previous : 'stopped';
    await moveInstance(this.deps.store, current, to, {
      now: this.now,
      reason,
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      details,
      patch: { activeAction: null },
    });
  }

  /**
   * A stop that asks for a backup (entered with the state unchanged). Online
   * save: backup → archive → stopping → stop. Otherwise: stop → archive. On a
   * failed backup, `abort_stop` keeps (or puts) the server running.
   */
  async stopWithBackup(instance: Instance, ctx: RunContext, stop: (instance: Instance) => Promise<JsonObject>): Promise<JsonObject> {
    const policy = String(ctx.cmd.payload.failurePolicy ?? 'abort_stop') as FailurePolicy;
    const previous = instance.state;
    const running = RUNNING.includes(instance.observed?.container);
    // A world still starting (a wake or an automatic restart met the stop) cannot enter `backup`:
    // it is stopped first and its files archived then, as a running world without online save.
    const starting = transitionEvent(instance.state, 'backup') === undefined;
    const mode = starting ? 'stop_first' : backupMode(ctx.template, running, this.rconTarget(instance, ctx.template) !== undefined);
    const backupId = backupIdFor(ctx.cmd, 'stop');
    const inBackup = starting
      ? instance
      : ((await moveInstance(this.deps.store, instance, 'backup', {
          now: this.now,
          reason: `backup before stop by ${ctx.actor}`,
          actor: ctx.actor,
          commandId: ctx.cmd.id,
        })) ?? instance);
    if (mode === 'online_save' || mode === 'offline') {
      try {
        const info = await (mode === 'online_save' ? this.onlineArchive(inBackup, ctx, backupId) : this.archive(inBackup, ctx, backupId));
        const stopping =
          (await moveInstance(this.deps.store, inBackup, 'stopping', {
            now: this.now,
            reason: `backup ${info.backupId} written; stopping`,
            actor: ctx.actor,
            commandId: ctx.cmd.id,
            details: { backupId: info.backupId, sha256: info.sha256, sizeBytes: info.sizeBytes },
          })) ?? inBackup;
        return { ...(await stop(stopping)), backupId: info.backupId };
      } catch (err) {
        const message = (err as Error).message;
        if (policy === 'abort_stop') {
          await this.backToPrevious(
            inBackup,
            mode === 'offline' ? 'stopped' : previous,
            ctx,
            `stop aborted: the backup failed (${message}); policy abort_stop keeps the server running`,
            { backupFailed: true, policy },
          );
          await this.deps.store.instances.update(
            instance.id,
            { desiredState: mode === 'offline' ? 'stopped' : 'running' },
            { now: this.now },
          );
          return { aborted: true, policy, error: message };
        }
        const stopping =
          (await moveInstance(this.deps.store, inBackup, 'stopping', {
            now: this.now,
            reason: `the backup failed (${message}); policy ${policy}: stopping without a backup`,
            actor: ctx.actor,
            commandId: ctx.cmd.id,
            details: { backupFailed: true, policy },
          })) ?? inBackup;
        return { ...(await stop(stopping)), backupFailed: message, policy };
      }
    }
    // Without online save the game stops first, then its files are archived.
    const stopped = await stop(inBackup);
    const current = (await this.deps.store.instances.get(instance.id)) ?? instance;
    try {
      const info = await this.archive(current, ctx, backupId);
      await this.deps.store.history.append({
        instanceId: instance.id,
        at: this.now,
        from: 'stopped',
        to: 'stopped',
        reason: `backup ${info.backupId} written after the stop`,
        actor: ctx.actor,
        commandId: ctx.cmd.id,
        details: { backupId: info.backupId, sha256: info.sha256, sizeBytes: info.sizeBytes },
      });
      return { ...stopped, backupId: info.backupId };
    } catch (err) {
      const message = (err as Error).message;
      if (policy === 'abort_stop') {
        await this.startAgain(current, ctx, `stop aborted: the backup failed (${message}); policy abort_stop starts the server again`, {
          backupFailed: true,
          policy,
        });
        return { aborted: true, policy, error: message };
      }
      await this.deps.store.history.append({
        instanceId: instance.id,
        at: this.now,
        from: 'stopped',
        to: 'stopped',
        reason: `the backup after the stop failed (${message}); policy ${policy}: stays stopped without a backup`,
        actor: ctx.actor,
        commandId: ctx.cmd.id,
        details: { backupFailed: true, policy },
      });
      return { ...stopped, backupFailed: message, policy };
    }
  }

  /** The `restore` action (state `restore`, container stopped): the agent writes a safety backup first. */
  async restore(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    const backupId = String(ctx.cmd.payload.backupId ?? '');
    try {
      await this.deps.hooks?.beforeRestore?.(instance, ctx, backupId);
      const res = await capability(this.deps.driver.backups, 'backups', ctx.host).restore(ctx.host, instance.id, backupId, ctx.ids);
      await moveInstance(this.deps.store, instance, 'stopped', {
        now: this.now,
        reason: `backup ${res.restored} restored by ${ctx.actor}${res.safetyBackupId ? ` (safety backup ${res.safetyBackupId})` : ''}`,
        actor: ctx.actor,
        commandId: ctx.cmd.id,
        details: { backupId: res.restored, safetyBackupId: res.safetyBackupId },
        patch: { activeAction: null, desiredState: 'stopped' },
      });
      return { ...res };
    } catch (err) {
      if (err instanceof AppError && err.retryable) throw err;
      // The agent swaps directories only at the end: a refused restore left the data as it was.
      await moveInstance(this.deps.store, instance, 'stopped', {
        now: this.now,
        reason: `restore of ${backupId} failed: ${(err as Error).message}; data unchanged`,
        actor: ctx.actor,
        commandId: ctx.cmd.id,
        patch: { activeAction: null },
      });
      throw new AppError(err instanceof AppError ? err.code : 'INTERNAL', `restore failed: ${(err as Error).message}`, {
        retryable: false,
        cause: err,
      });
    }
  }
}
