// The handler of every instance-action command (start, stop, restart, pause,
// resume, backup, restore, update, apply-settings, delete): runs it against the
// host, then records the outcome as a state transition with its reason and
// clears the active action. Commands of one instance run in order (claimDue).

import type { Command, Host, Instance, InstanceState, JsonObject, TemplateSpec } from '../../domain/index.js';
import type { InstanceAction } from '../../lifecycle/actions.js';
import { entersOnDispatch } from '../../lifecycle/backup.js';
import { evaluateReadiness } from '../../lifecycle/readiness.js';
import { planReplacement, planStart, type ReplaceableInstance } from '../../lifecycle/settings.js';
import { describeStop, planStop, stopPath } from '../../lifecycle/stop.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import { capability, type HostDriver, type KillOutcome, type StopOutcome } from '../drivers/host-driver.js';
import type { Clock } from '../clock.js';
import { BackupRunner, type BackupHooks } from './backup-runner.js';
import { moveInstance } from './instance-transitions.js';
import { recordRevision, replaceContainer } from './replacement.js';
import { runInstallScript } from './install-script.js';
import { applyPendingChanges } from '../services/pending-changes.js';
import { agentCreateBody } from '../services/instance-config.js';
import { readinessOf, type ProbeOutcome, type ReadinessProber } from './readiness-prober.js';
import { UpdateRunner } from './update-runner.js';
import type { RunContext } from './run-context.js';
import { commandKindOf, type CommandHandler } from './command-handler.js';
import { FleetActions } from './fleet-actions.js';
import { templateOf } from '../services/template-of.js';
import { sleep } from '../../shared/timers.js';

export interface ActionRunnerOptions {
  store: Store;
  driver: HostDriver;
  clock: Clock;
  logger: Logger;
  prober: ReadinessProber;
  endercloudUser: { uid: number; gid: number };
  resumeTimeoutMs: number;
  /** The network's shared secret, for templates that declare where it goes. */
  networkSecret?: { get(): Promise<string> };
  /** A container was started: the supervisor begins probing it. */
  onStarted: (instanceId: string) => void;
  /** Despawn's evacuation: every player transferred away (the transfer service). */
  evacuate?: (instanceId: string) => Promise<{ players: number }>;
  /** Players on an instance, cross-checked (router reports and the last probe). */
  playersOn?: (instance: Instance) => Promise<number>;
  /** A deletion finished: forget in-memory state. */
  onDeleted?: (instanceId: string) => void;
  sleep?: (ms: number) => Promise<void>;
  /** Around the host's archive calls: the off-host backup store. */
  backupHooks?: BackupHooks;
}

export class ActionRunner implements CommandHandler {
  constructor(private readonly deps: ActionRunnerOptions) {}

  private get now(): number {
    return this.deps.clock.now();
  }

  async run(cmd: Command, host: Host, log: Logger): Promise<JsonObject> {
    let instance = await this.deps.store.instances.get(cmd.instanceId ?? '');
    if (!instance) return { skipped: 'the instance no longer exists' };
    if (instance.activeAction?.commandId !== cmd.id) return { skipped: 'superseded: the instance no longer waits for this command' };
    const action = commandKindOf(cmd) as InstanceAction;
    const template = await templateOf(this.deps.store, instance);
    const ctx = {
      cmd,
      host,
      template,
      ids: { commandId: cmd.id, requestId: cmd.requestId },
      actor: String(cmd.payload.actor ?? 'system'),
      log,
    };
    // A frozen server can neither save nor stop gracefully: a stop or archive of a paused one thaws it first.
    let thawedFromPause = false;
    if ((action === 'stop' || action === 'archive') && instance.observed?.container === 'paused') {
      await this.deps.driver.resume(host, instance.id, ctx.ids);
      const observed = { container: 'running' as const, observedAt: this.now };
      // A stop with a backup starts from the instance's state (its backup step moves it on): thawed, the world is online.
      thawedFromPause = entersOnDispatch(action, cmd.payload) && instance.state === 'paused';
      instance = thawedFromPause
        ? ((await moveInstance(this.deps.store, instance, 'online', {
            now: this.now,
            reason: `thawed for its stop with a backup (${ctx.actor})`,
            actor: ctx.actor,
            commandId: cmd.id,
            patch: { observed },
          })) ?? instance)
        : await this.deps.store.instances.update(instance.id, { observed }, { now: this.now });
    }
    switch (action) {
      case 'start':
        return this.start(instance, ctx);
      case 'stop': {
        // A stop that asks for a backup follows the backup rules (backup-runner.ts), whoever asked for it.
        if (cmd.payload.backup !== true) return this.stop(instance, ctx, true);
        const result = await this.backups().stopWithBackup(instance, ctx, (i) => this.stop(i, ctx, true));
        if (result.aborted === true && thawedFromPause) await this.pauseAgain(instance.id, ctx);
        return result;
      }
      case 'backup':
        return this.backups().backup(instance, ctx);
      case 'restore':
        return this.backups().restore(instance, ctx);
      case 'restart': {
        const stopped = instance.state === 'stopping' ? await this.stopContainer(instance, ctx, 'starting') : instance;
        return this.start(stopped, ctx);
      }
      case 'pause':
        return this.pause(instance, ctx);
      case 'resume':
        return this.resume(instance, ctx);
      case 'update':
        return new UpdateRunner(this.deps).run(instance, ctx);
      case 'apply-settings':
        return this.applySettings(instance, ctx);
      case 'delete':
        return this.remove(instance, ctx, deletionScope(cmd.payload));
      case 'archive':
        return this.fleet().archive(instance, ctx);
      case 'despawn':
        return this.fleet().despawn(instance, ctx);
      case 'reinstall':
        return this.reinstall(instance, ctx);
      default:
        throw new AppError('VALIDATION_FAILED', `unknown lifecycle action ${String(action)}`);
    }
  }

  private fleet(): FleetActions {
    return new FleetActions({
      store: this.deps.store,
      driver: this.deps.driver,
      clock: this.deps.clock,
      backups: () => this.backups(),
      evacuate: this.deps.evacuate ?? (async () => ({ players: 0 })),
      playersOn: this.deps.playersOn ?? (async (i) => i.players?.online ?? 0),
      // Live counts while a despawn waits: the supervisor does not probe under an active action.
      probePlayers: async (i, ctx) => (await this.deps.prober.probe(i, readinessOf(ctx.template), ctx.host)).players,
      remove: (i, ctx, scope) => this.remove(i, ctx, scope),
      ...(this.deps.sleep ? { sleep: this.deps.sleep } : {}),
    });
  }

  private backups(): BackupRunner {
    return new BackupRunner({
      store: this.deps.store,
      driver: this.deps.driver,
      clock: this.deps.clock,
      onStarted: this.deps.onStarted,
      ...(this.deps.backupHooks ? { hooks: this.deps.backupHooks } : {}),
    });
  }

  /** A command that failed for good: leave a visible state and free the instance for the next action. */
  async failedForGood(cmd: Command, message: string): Promise<void> {
    const instance = await this.deps.store.instances.get(cmd.instanceId ?? '');
    if (!instance || instance.activeAction?.commandId !== cmd.id) return;
    const action = String(commandKindOf(cmd));
    const reason = `${action} failed: ${message}`;
    const patch = { activeAction: null };
    if (action === 'despawn') {
      await this.fleet().despawnFailed(instance, reason);
    } else if (action === 'delete') {
      const deletion = instance.deletion ? { ...instance.deletion, lastError: message.slice(0, 500) } : null;
      await moveInstance(this.deps.store, instance, 'error', { now: this.now, reason, commandId: cmd.id, patch: { ...patch, deletion } });
    } else if (['pause', 'resume'].includes(action) && instance.state === 'pausing') {
      await moveInstance(this.deps.store, instance, 'online', { now: this.now, reason, commandId: cmd.id, patch });
    } else if (instance.state === 'paused' || instance.state === 'stopped') {
      await this.deps.store.instances.update(instance.id, { ...patch, stateReason: reason }, { now: this.now });
    } else {
      await moveInstance(this.deps.store, instance, 'error', { now: this.now, reason, commandId: cmd.id, patch });
    }
  }

  // ---------------------------------------------------------------- actions

  private async start(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    let current = instance;
    if (current.state !== 'starting') {
      // A delayed (backoff) restart kept `stopped` until now.
      current =
        (await moveInstance(this.deps.store, current, 'starting', {
          now: this.now,
          reason: `start by ${ctx.actor}`,
          actor: ctx.actor,
          commandId: ctx.cmd.id,
        })) ?? current;
    }
    // The pure plan decides: a replacement when changes wait for this start, else a plain start.
    const steps = planStart({
      ...replaceable(current, ctx.template),
      containerConfigPending: current.containerConfigPending,
      pendingSettings: current.pendingChanges.length,
    });
    let result: JsonObject;
    if (steps.some((s) => s.kind === 'create_container')) {
      result = await this.replace(current, ctx, true);
    } else {
      try {
        const res = await this.deps.driver.start(ctx.host, current.id, ctx.ids);
        result = { state: res.state };
      } catch (err) {
        // Its host port was taken while it was stopped (by something outside the agent): the same
        // container on another port of the host's range, same data; the registry follows the endpoint.
        if (!(err instanceof AppError && err.code === 'HOST_PORT_TAKEN')) throw err;
        ctx.log.warn(
          { instanceId: current.id, hostPort: current.hostPort, err: err.message },
          'host port taken outside the runtime; re-creating the container on another port',
        );
        result = await this.replace(current, ctx, true, {
          newHostPort: true,
          why: `host port ${current.hostPort ?? '?'} was taken outside the container runtime`,
        }).catch((moveErr: unknown) => {
          throw noPortLeft(moveErr, current, ctx.host);
        });
      }
    }
    const started = await this.deps.store.instances.update(
      current.id,
      {
        activeAction: null,
        stateChangedAt: this.now,
        observed: { container: 'running', observedAt: this.now },
      },
      { now: this.now },
    );
    this.deps.onStarted(started.id);
    ctx.log.info({ instanceId: started.id }, 'container started; readiness probing');
    return result;
  }

  private async stop(instance: Instance, ctx: RunContext, final: boolean): Promise<JsonObject> {
    const stopped = await this.stopContainer(instance, ctx, final ? null : 'starting');
    return { state: stopped.state, path: String(stopped.stateReason ?? '') };
  }

  /** Graceful stop; records the path. `then` keeps the action active (restart continues). */
  private async stopContainer(instance: Instance, ctx: RunContext, then: InstanceState | null): Promise<Instance> {
    const request = planStop(ctx.template?.stop ?? { signal: 'SIGTERM', timeoutMs: 30_000 }, instance.secretSettings);
    let res;
    try {
      // A kill (POST /instances/:id/kill with nothing in progress) is a stop whose method is SIGKILL.
      res =
        ctx.cmd.payload.kill === true
          ? killAsStop(await this.deps.driver.kill(ctx.host, instance.id, ctx.ids))
          : await this.deps.driver.stop(ctx.host, instance.id, request, ctx.ids);
    } catch (err) {
      if (err instanceof AppError && err.code === 'INSTANCE_NOT_FOUND') {
        await moveInstance(this.deps.store, instance, 'unknown', {
          now: this.now,
          reason: 'the managed container is missing; not recreated',
          commandId: ctx.cmd.id,
          patch: { activeAction: null },
        });
        throw new AppError('INSTANCE_NOT_FOUND', `instance ${instance.name} has no container on host ${ctx.host.id}; it is now unknown`);
      }
      throw err;
    }
    const path = stopPath(res);
    const details = {
      path,
      method: res.method,
      killed: res.killed,
      ...(res.killedOnRequest === true ? { killedOnRequest: true } : {}),
      exitCode: res.exitCode,
      timeoutSeconds: request.timeoutSeconds,
    };
    const patch = {
      observed: { container: 'exited' as const, ...(res.exitCode === null ? {} : { exitCode: res.exitCode }), observedAt: this.now },
      ...(then ? {} : { activeAction: null }),
    };
    const moved = await moveInstance(this.deps.store, instance, 'stopped', {
      now: this.now,
      reason: `${describeStop(path, request.timeoutSeconds, res.exitCode, res.killedOnRequest === true)}${res.killedOnRequest === true ? ` (${ctx.actor})` : ''}`,
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      details,
      patch,
    });
    if (!moved)
      throw new AppError('CONFLICT', `instance ${instance.name} changed state during its stop`, {
        // A version race with the supervisor, not a refusal: the next attempt reads the new state.
        retryable: true,
      });
    if (then)
      return (
        (await moveInstance(this.deps.store, moved, then, {
          now: this.now,
          reason: `${then === 'installing' ? 'reinstall' : 'restart'} by ${ctx.actor}`,
          actor: ctx.actor,
          commandId: ctx.cmd.id,
        })) ?? moved
      );
    return moved;
  }

  private async pause(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    // The pause idle tier saves first when the template declares RCON (docs/provisioning.md "Idle semantics", the tiers).
    const saved = ctx.cmd.payload.save === true ? await this.backups().saveAll(instance, ctx) : false;
    const res = await this.deps.driver.pause(ctx.host, instance.id, ctx.ids);
    await moveInstance(this.deps.store, instance, 'paused', {
      now: this.now,
      reason: `paused by ${ctx.actor} (warm sleep${saved ? ', world saved first' : ''})`,
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      patch: { activeAction: null, observed: { container: 'paused', observedAt: this.now } },
    });
    return { state: res.state };
  }

  /** A stop of a paused world was aborted (its backup failed) while the world stayed up: it goes back to its warm sleep. */
  private async pauseAgain(instanceId: string, ctx: RunContext): Promise<void> {
    const current = await this.deps.store.instances.get(instanceId);
    if (current?.state !== 'online') return;
    await this.deps.driver.pause(ctx.host, instanceId, ctx.ids);
    const pausing =
      (await moveInstance(this.deps.store, current, 'pausing', {
        now: this.now,
        reason: 'the stop was aborted: back to its warm sleep',
        actor: ctx.actor,
        commandId: ctx.cmd.id,
      })) ?? current;
    await moveInstance(this.deps.store, pausing, 'paused', {
      now: this.now,
      reason: 'paused again after the aborted stop',
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      patch: { activeAction: null, desiredState: 'paused', observed: { container: 'paused', observedAt: this.now } },
    });
  }

  /**
   * Unpause, then one quick readiness check bounded by resumeTimeoutMs: online, or degraded.
   * Probes are hedged: a new one starts every 100 ms while earlier ones are still out, so one
   * ping that hangs for its whole timeout right after the thaw does not delay a wake.
   * The first probe goes out together with the unpause: it waits in the frozen server's
   * accept queue and is answered as soon as the thaw lets the server run, instead of one
   * agent round trip (and its container inspect) later. Its answer counts only once the
   * agent has confirmed the unpause, and a failure that came before that confirmation (a
   * timeout while the unpause was slow) is dropped: the check then starts with a fresh probe.
   */
  private async resume(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    const spec = readinessOf(ctx.template);
    const thawed = this.deps.driver.resume(ctx.host, instance.id, ctx.ids);
    let failedEarly = false;
    let early: Promise<ProbeOutcome> | undefined = this.deps.prober.probe(instance, spec, ctx.host).then((outcome) => {
      if (!outcome.ready) failedEarly = true;
      return outcome;
    });
    await thawed;
    if (failedEarly) early = undefined;
    const startedAt = this.now;
    const wait = this.deps.sleep ?? sleep;
    const attempts = Math.max(1, Math.ceil(this.deps.resumeTimeoutMs / 100));
    let players: { online: number; max: number } | undefined;
    let ready = false;
    let failures = 0;
    const never = new Promise<never>(() => undefined);
    for (let i = 0; i < attempts && !ready; i++) {
      const probe = (early ?? this.deps.prober.probe(instance, spec, ctx.host)).then(
        (outcome) => {
          players = outcome.players ?? players;
          if (outcome.ready) ready = true;
          else failures += 1;
          return outcome.ready;
        },
        () => {
          failures += 1;
          return false;
        },
      );
      early = undefined;
      // On to the next probe after 100 ms, or at once when this one is ready.
      await Promise.race([probe.then((ok) => (ok ? undefined : never)), wait(100)]);
    }
    const decision = evaluateReadiness({
      state: 'paused',
      waitStartedAt: startedAt,
      now: ready ? this.now : startedAt + this.deps.resumeTimeoutMs,
      timeoutMs: this.deps.resumeTimeoutMs,
      failureThreshold: spec.failureThreshold,
      container: { status: 'running' },
      probe: { ready, consecutiveFailures: ready ? 0 : Math.max(1, failures) },
    });
    const to = decision.kind === 'transition' ? decision.to : 'degraded';
    const reason = decision.kind === 'transition' ? decision.reason : 'resumed but not ready';
    await moveInstance(this.deps.store, instance, to, {
      now: this.now,
      reason,
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      patch: {
        activeAction: null,
        observed: { container: 'running', observedAt: this.now },
        ...(players ? { players: { ...players, at: this.now } } : {}),
      },
    });
    if (to === 'online' || to === 'degraded') this.deps.onStarted(instance.id);
    return { state: to };
  }

  /**
   * The template's install script again, over the kept files: a running server is stopped first
   * (entered as `stopping`) and started again afterwards; a stopped one, or one in error, stays stopped.
   */
  private async reinstall(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    const install = ctx.template?.install;
    if (!install)
      throw new AppError('NOT_IMPLEMENTED', `instance ${instance.name}'s template has no install script; there is nothing to reinstall`);
    const wasRunning = instance.state === 'stopping';
    const current = wasRunning ? await this.stopContainer(instance, ctx, 'installing') : instance;
    const body = agentCreateBody(current, ctx.template, { endercloudUser: this.deps.endercloudUser });
    const note = await runInstallScript(
      capability(this.deps.driver.eggs, 'install script', ctx.host),
      ctx.host,
      current.id,
      install,
      body,
      ctx.ids,
    );
    const installed = (await this.deps.store.instances.get(current.id)) ?? current;
    const stopped = await moveInstance(this.deps.store, installed, wasRunning ? 'starting' : 'stopped', {
      now: this.now,
      reason: `reinstalled by ${ctx.actor}${note}${wasRunning ? '; starting again' : ''}`,
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      patch: wasRunning ? {} : { activeAction: null },
    });
    if (!stopped) throw new AppError('CONFLICT', `instance ${instance.name} changed state during its reinstall`, { retryable: true });
    if (wasRunning) return this.start(stopped, ctx);
    return { state: stopped.state, reinstalled: true };
  }

  /** Stop (if running), one replacement with every pending change, then restore the prior running/stopped intent. */
  private async applySettings(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    const steps = planReplacement({ ...replaceable(instance, ctx.template), desiredState: instance.desiredState });
    if (steps.some((s) => s.kind === 'stop_container')) {
      const request = planStop(ctx.template?.stop ?? { signal: 'SIGTERM', timeoutMs: 30_000 }, instance.secretSettings);
      const res = await this.deps.driver.stop(ctx.host, instance.id, request, ctx.ids);
      await this.deps.store.history.append({
        instanceId: instance.id,
        at: this.now,
        from: 'update',
        to: 'update',
        reason: `stopped for replacement: ${describeStop(stopPath(res), request.timeoutSeconds, res.exitCode)}`,
        actor: ctx.actor,
        commandId: ctx.cmd.id,
        details: { path: stopPath(res) },
      });
    }
    // Pull, swap and mark applied are one agent replace (a failed pull changes nothing); it starts the new container when the plan says so.
    const start = steps.some((s) => s.kind === 'start_container');
    const result = await this.replace(instance, ctx, start);
    const current = (await this.deps.store.instances.get(instance.id)) ?? instance;
    await moveInstance(this.deps.store, current, start ? 'starting' : 'stopped', {
      now: this.now,
      reason: start ? 'configuration replaced; starting' : 'configuration replaced; the instance stays stopped',
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      patch: { activeAction: null, observed: { container: start ? 'running' : 'exited', observedAt: this.now } },
    });
    if (start) this.deps.onStarted(instance.id);
    return result;
  }

  /** One controlled replacement (same runtime directory and host port); records the new immutable revision. */
  /** With `newHostPort`, the container is re-created on another port even when nothing else changed (`why` goes in the history). */
  private async replace(
    instance: Instance,
    ctx: RunContext,
    start: boolean,
    port?: { newHostPort: true; why: string },
  ): Promise<JsonObject> {
    const next = applyPendingChanges(instance, ctx.template);
    const staged: Instance = { ...instance, ...next };
    const res = await replaceContainer(this.deps, staged, ctx, { start, ...(port ? { newHostPort: true } : {}) });
    const now = this.now;
    const revision = instance.revision + 1;
    const applied = instance.pendingChanges.map((c) => c.key);
    await this.deps.store.transaction(async (tx) => {
      await tx.instances.update(
        instance.id,
        {
          ...next,
          pendingChanges: [],
          containerConfigPending: false,
          revision,
          ...(res.hostPort !== null && res.hostPort !== undefined
            ? { hostPort: res.hostPort, endpoint: { host: ctx.host.gameAddress, port: res.hostPort } }
            : {}),
        },
        { now },
      );
      await recordRevision(
        tx,
        { ...staged, revision },
        instance.revision,
        ctx,
        `replacement applying ${applied.join(', ') || 'the current configuration'}`,
        now,
      );
      const moved = port ? `; ${port.why}, now on port ${res.hostPort ?? '?'}` : '';
      await tx.history.append({
        instanceId: instance.id,
        at: now,
        from: instance.state,
        to: instance.state,
        reason: `container replaced (revision ${revision}): ${applied.join(', ') || 'no pending changes'}${moved}`,
        actor: ctx.actor,
        commandId: ctx.cmd.id,
        details: { applied, revision, ...(port ? { previousHostPort: instance.hostPort, hostPort: res.hostPort ?? null } : {}) },
      });
    });
    return { replaced: true, revision, applied, state: res.state };
  }

  /** Scoped deletion: stop, remove the container and the chosen files, then forget the record. */
  private async remove(instance: Instance, ctx: RunContext, scope: DeletionScope): Promise<JsonObject> {
    const { scopes } = scope;
    const observed = instance.observed?.container;
    // A stop of a stopped container is a no-op on the agent; skip it only when Docker said so.
    if (observed !== 'exited' && observed !== 'absent' && observed !== 'created') {
      const request = planStop(ctx.template?.stop ?? { signal: 'SIGTERM', timeoutMs: 30_000 }, instance.secretSettings);
      await this.deps.driver.stop(ctx.host, instance.id, request, ctx.ids).catch((err: unknown) => {
        if (!(err instanceof AppError && err.code === 'INSTANCE_NOT_FOUND')) throw err;
      });
    }
    if (scopes.includes('backups')) {
      // An agent without the backup routes (404 NOT_FOUND) holds no backups.
      await capability(this.deps.driver.backups, 'backups', ctx.host)
        .deleteAll(ctx.host, instance.id, ctx.ids)
        .catch((err: unknown) => {
          if (!(err instanceof AppError && err.code === 'NOT_FOUND')) throw err;
        });
      await this.deps.backupHooks?.deletedAll?.(instance.id);
    }
    const res = await this.deps.driver.remove(
      ctx.host,
      instance.id,
      scope.paths.length > 0 ? { paths: scope.paths } : { keepData: scope.keepData },
    );
    await this.deps.store.transaction(async (tx) => {
      // An archived world or a failed create holds no reservation: releasing it again would free another instance's room.
      if (instance.hostId && instance.memoryReserved) await tx.hosts.releaseMemory(instance.hostId, instance.memoryMb);
      await tx.instances.delete(instance.id);
    });
    this.deps.onDeleted?.(instance.id);
    ctx.log.info({ instanceId: instance.id, scopes }, 'instance deleted');
    return { deleted: true, scopes, containerRemoved: res.containerRemoved, directoryRemoved: res.directoryRemoved };
  }
}

/**
 * A port move that found no free port of the host's range: the agent kept the container and its
 * world, so the start ends for good (no retry loop in `starting`) with a reason that says what to do.
 */
function noPortLeft(err: unknown, instance: Instance, host: Host): unknown {
  if (!(err instanceof AppError && err.code === 'PORT_RANGE_EXHAUSTED')) return err;
  const range = typeof err.details?.portRange === 'string' ? err.details.portRange : 'its range';
  return new AppError(
    'PORT_RANGE_EXHAUSTED',
    `host port ${instance.hostPort ?? '?'} is taken and no other port of ${range} is free on host ${host.id}; the container was kept with its world: free a port, then start it`,
    {
      // Final here although the code is retryable: the agent kept the container; a retry would find the same ports taken.
      retryable: false,
      cause: err,
      details: { portRange: range, hostPort: instance.hostPort },
    },
  );
}

/** What the pure replacement planner reads of an instance: applied vs desired container config. */
function replaceable(instance: Instance, template: TemplateSpec | undefined): Omit<ReplaceableInstance, 'desiredState'> {
  const desired = applyPendingChanges(instance, template);
  return {
    containerRunning: instance.observed?.container === 'running' || instance.observed?.container === 'paused',
    appliedConfig: { image: instance.containerConfig.image, labels: instance.containerConfig.labels },
    desiredConfig: { image: desired.containerConfig.image, labels: desired.containerConfig.labels },
    desiredSettings: desired.settings as ReplaceableInstance['desiredSettings'],
  };
}

type DeletionScope = { keepData: boolean; paths: string[]; scopes: string[] };

/** The delete command's scope as its request persisted it. */
/** A kill's answer in the shape of a stop's: nothing graceful was sent. */
function killAsStop(answer: KillOutcome): StopOutcome {
  return { ...answer, method: 'none', killed: answer.killed, ...(answer.killed ? { killedOnRequest: true } : {}) };
}

function deletionScope(payload: JsonObject): DeletionScope {
  return {
    keepData: payload.keepData !== false,
    paths: Array.isArray(payload.paths) ? payload.paths.map(String) : [],
    scopes: Array.isArray(payload.scopes) ? payload.scopes.map(String) : ['container'],
  };
}
