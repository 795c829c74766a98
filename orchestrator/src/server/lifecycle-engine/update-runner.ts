// The worker's side of an image update (action `update`, state `update`):
// safety backup note, graceful stop, replace with the same configuration plus
// the new image, start and wait for readiness; on failure replace back with
// the previous image/configuration and start it again; when that fails too,
// leave the instance stopped in intervention_required and audit it. Player
// data is never restored or touched: both replacements keep the runtime directory.

import type { ContainerConfig, Instance, JsonObject } from '../../domain/index.js';
import { describeStop, planStop, stopPath } from '../../lifecycle/stop.js';
import { AppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import { capability, type HostDriver } from '../drivers/host-driver.js';
import type { Clock } from '../clock.js';
import { backupIdFor } from '../../lifecycle/backup.js';
import { moveInstance } from './instance-transitions.js';
import { recordRevision, replaceContainer } from './replacement.js';
import { evaluateReadiness, readinessContainerStatus, type ReadinessInput } from '../../lifecycle/readiness.js';
import { readinessOf, type ReadinessProber } from './readiness-prober.js';
import type { RunContext } from './run-context.js';
import { sleep } from '../../shared/timers.js';

export interface UpdateRunnerDeps {
  store: Store;
  driver: HostDriver;
  clock: Clock;
  prober: ReadinessProber;
  endercloudUser: { uid: number; gid: number };
  /** The network's shared secret, for templates that declare where it goes. */
  networkSecret?: { get(): Promise<string> };
  onStarted: (instanceId: string) => void;
  sleep?: (ms: number) => Promise<void>;
}

/** Bound on readiness polls, whatever the template's interval. */
const MAX_READY_POLLS = 2000;

export class UpdateRunner {
  constructor(private readonly deps: UpdateRunnerDeps) {}

  private get now(): number {
    return this.deps.clock.now();
  }

  async run(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    const image = String(ctx.cmd.payload.image ?? '');
    if (!image) throw new AppError('VALIDATION_FAILED', 'the update command names no image');
    const previous = instance.containerConfig;
    const next: ContainerConfig = { ...previous, image };
    const keepRunning = instance.desiredState === 'running';
    await this.note(instance, ctx, `update from ${previous.image} to ${image} started`, { image, previousImage: previous.image });

    if (instance.observed?.container === 'running' || instance.observed?.container === 'paused')
      await this.stop(instance, ctx, 'stopped for the update');
    if (ctx.cmd.payload.backup === true) {
      // Taken after the graceful stop, so the archive is consistent; no backup, no update.
      const backupId = backupIdFor(ctx.cmd, 'pre-update');
      try {
        const backup = await capability(this.deps.driver.backups, 'backups', ctx.host).create(ctx.host, instance.id, { backupId }, ctx.ids);
        await this.note(instance, ctx, `safety backup ${backup.backupId} taken before the update`, { backupId: backup.backupId });
      } catch (err) {
        const why = `safety backup failed: ${(err as Error).message}`;
        await this.note(instance, ctx, `${why}; the update is abandoned`, { backupId });
        if ((await this.attempt(instance, previous, ctx)) !== null)
          return this.leaveStopped(instance, ctx, image, previous.image, why, 'the previous image did not start again');
        await this.finish(instance, previous, ctx, keepRunning, `update to ${image} abandoned (${why})`, false);
        return { updated: false, rolledBack: false, image, failure: why };
      }
    }

    const failure = await this.attempt(instance, next, ctx);
    if (failure === null) return this.finish(instance, next, ctx, keepRunning, `updated to ${image}`, true);

    await this.note(instance, ctx, `update to ${image} failed: ${failure}; rolling back to ${previous.image}`, {
      failure,
      image,
      previousImage: previous.image,
    });
    await this.audit(instance, ctx, 'instance.update.failed', { image, previousImage: previous.image, failure }, 'error');
    const rollbackFailure = await this.attempt(instance, previous, ctx);
    if (rollbackFailure === null) {
      await this.finish(
        instance,
        previous,
        ctx,
        keepRunning,
        `update to ${image} failed (${failure}); rolled back to ${previous.image}`,
        false,
      );
      return { updated: false, rolledBack: true, image, previousImage: previous.image, failure };
    }
    return this.leaveStopped(instance, ctx, image, previous.image, failure, rollbackFailure);
  }

  /** Replace with `config`, start, wait for readiness. Null on success, else why it failed. */
  private async attempt(instance: Instance, config: ContainerConfig, ctx: RunContext): Promise<string | null> {
    try {
      await replaceContainer(this.deps, instance, ctx, { start: true, config });
    } catch (err) {
      return `replace with ${config.image} failed: ${(err as Error).message}`;
    }
    return this.waitReady(instance, ctx);
  }

  /**
   * Probes the new container until the readiness rule (evaluateReadiness, the
   * one the supervisor follows) says online, exited or timed out.
   */
  private async waitReady(instance: Instance, ctx: RunContext): Promise<string | null> {
    const spec = readinessOf(ctx.template);
    const wait = this.deps.sleep ?? sleep;
    const polls = Math.min(MAX_READY_POLLS, Math.max(1, Math.ceil(spec.startupTimeoutMs / spec.intervalMs)));
    const current = (await this.deps.store.instances.get(instance.id)) ?? instance;
    const startedAt = this.now;
    let probe: ReadinessInput['probe'] = null;
    let failures = 0;
    let detail = 'not probed';
    for (let i = 0; ; i++) {
      const details = await this.deps.driver.inspect(ctx.host, instance.id, ctx.ids).catch(() => undefined);
      const container = {
        status: readinessContainerStatus(details?.state),
        exitCode: details?.exitCode ?? null,
        oomKilled: details?.oomKilled ?? false,
      };
      if (container.status !== 'exited') {
        const outcome = await this.deps.prober.probe(current, spec, ctx.host);
        failures = outcome.ready ? 0 : failures + 1;
        probe = { ready: outcome.ready, consecutiveFailures: failures };
        detail = outcome.detail;
      }
      // The poll bound ends the wait even on a clock that does not move (it spans the startup timeout).
      const now = i >= polls - 1 ? Math.max(this.now, startedAt + spec.startupTimeoutMs) : this.now;
      const decision = evaluateReadiness({
        state: 'starting',
        waitStartedAt: startedAt,
        now,
        timeoutMs: spec.startupTimeoutMs,
        failureThreshold: spec.failureThreshold,
        container,
        probe,
      });
      if (decision.kind === 'exited') {
        return `the new container exited (code ${decision.exitCode ?? 'unknown'}${decision.oomKilled ? ', out of memory' : ''}) before it was ready`;
      }
      if (decision.kind === 'transition') {
        if (decision.to === 'online') return null;
        if (decision.event === 'startup_timeout') return `not ready within the startup timeout of ${spec.startupTimeoutMs} ms (${detail})`;
        return `${decision.reason} (${detail})`;
      }
      await wait(spec.intervalMs);
    }
  }

  /** Records the applied configuration; online (through starting), or stopped when that was the intent. */
  private async finish(
    instance: Instance,
    config: ContainerConfig,
    ctx: RunContext,
    keepRunning: boolean,
    reason: string,
    updated: boolean,
  ): Promise<JsonObject> {
    const now = this.now;
    const current = (await this.deps.store.instances.get(instance.id)) ?? instance;
    let revision = current.revision;
    if (updated) {
      revision += 1;
      const applied: Instance = { ...current, containerConfig: config, revision };
      await this.deps.store.transaction(async (tx) => {
        await tx.instances.update(instance.id, { containerConfig: config, containerConfigPending: false, revision }, { now });
        await recordRevision(tx, applied, current.revision, ctx, reason, now);
      });
    }
    let latest = (await this.deps.store.instances.get(instance.id)) ?? current;
    if (!keepRunning) {
      await this.stop(latest, ctx, `${reason}; stopped again (the instance was stopped before the update)`);
      await moveInstance(this.deps.store, latest, 'stopped', {
        now: this.now,
        reason,
        actor: ctx.actor,
        commandId: ctx.cmd.id,
        patch: { activeAction: null, observed: { container: 'exited', observedAt: this.now } },
      });
      return { updated, image: config.image, revision, state: 'stopped' };
    }
    latest =
      (await moveInstance(this.deps.store, latest, 'starting', { now: this.now, reason, actor: ctx.actor, commandId: ctx.cmd.id })) ??
      latest;
    await moveInstance(this.deps.store, latest, 'online', {
      now: this.now,
      reason: `ready on ${config.image}`,
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      patch: { activeAction: null, observed: { container: 'running', observedAt: this.now } },
    });
    this.deps.onStarted(instance.id);
    return { updated, image: config.image, revision, state: 'online' };
  }

  /** Rollback failed too: stopped, intervention_required, audited ("notify"). */
  private async leaveStopped(
    instance: Instance,
    ctx: RunContext,
    image: string,
    previousImage: string,
    failure: string,
    rollbackFailure: string,
  ): Promise<JsonObject> {
    await this.stop(instance, ctx, 'stopped after a failed rollback').catch(() => undefined);
    const current = (await this.deps.store.instances.get(instance.id)) ?? instance;
    const reason = `update to ${image} failed (${failure}) and the rollback to ${previousImage} failed too (${rollbackFailure}); left stopped for an operator`;
    await moveInstance(this.deps.store, current, 'intervention_required', {
      now: this.now,
      reason,
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      details: { image, previousImage, failure, rollbackFailure },
      patch: { activeAction: null, desiredState: 'stopped', observed: { container: 'exited', observedAt: this.now } },
    });
    await this.audit(instance, ctx, 'instance.update.rollback-failed', { image, previousImage, failure, rollbackFailure }, 'error');
    ctx.log.error(
      { instanceId: instance.id, image, previousImage, failure, rollbackFailure },
      'update rollback failed; instance left stopped (intervention required)',
    );
    return { updated: false, rolledBack: false, image, previousImage, failure, rollbackFailure, state: 'intervention_required' };
  }

  private async stop(instance: Instance, ctx: RunContext, why: string): Promise<void> {
    const request = planStop(ctx.template?.stop ?? { signal: 'SIGTERM', timeoutMs: 30_000 }, instance.secretSettings);
    const res = await this.deps.driver.stop(ctx.host, instance.id, request, ctx.ids);
    await this.note(instance, ctx, `${why}: ${describeStop(stopPath(res), request.timeoutSeconds, res.exitCode)}`, { path: stopPath(res) });
  }

  private async note(instance: Instance, ctx: RunContext, reason: string, details: JsonObject): Promise<void> {
    const current = (await this.deps.store.instances.get(instance.id)) ?? instance;
    await this.deps.store.history.append({
      instanceId: instance.id,
      at: this.now,
      from: current.state,
      to: current.state,
      reason: reason.slice(0, 1000),
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      details,
    });
  }

  private async audit(instance: Instance, ctx: RunContext, action: string, params: JsonObject, result: 'ok' | 'error'): Promise<void> {
    await this.deps.store.audit.append({
      at: this.now,
      actor: ctx.actor,
      action,
      targetKind: 'instance',
      targetId: instance.id,
      params,
      result,
      errorCode: result === 'error' ? 'UPDATE_FAILED' : null,
      requestId: ctx.cmd.requestId,
    });
  }
}
