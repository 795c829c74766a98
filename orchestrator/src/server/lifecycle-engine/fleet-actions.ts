// The lifecycle engine's dynamic-provisioning actions (docs/provisioning.md): the archive
// idle tier (final backup, container removed, the world kept on its host) and
// despawn — drain (registry `Draining`), evacuate (every player transferred
// away), wait until empty (bounded; `force` goes on after the timeout), then
// delete per the group's savegame policy. Each step is idempotent and logged
// in the history, so a despawn interrupted by an orchestrator restart resumes
// from the durable command and finishes once.

import type { Instance, InstanceFleet, JsonObject } from '../../domain/index.js';
import { backupIdFor } from '../../lifecycle/backup.js';
import { planStop } from '../../lifecycle/stop.js';
import { AppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { HostDriver } from '../drivers/host-driver.js';
import type { BackupRunner } from './backup-runner.js';
import { moveInstance } from './instance-transitions.js';
import type { RunContext } from './run-context.js';
import { sleep } from '../../shared/timers.js';

/** Deletion scopes of a despawn with savegame `discard`: nothing of the world survives. */
export const DISCARD_SCOPES = { keepData: false, paths: [] as string[], scopes: ['container', 'technical', 'player_data', 'backups'] };

export interface FleetActionsDeps {
  store: Store;
  driver: HostDriver;
  clock: Clock;
  backups: () => BackupRunner;
  /** Transfers every player off the instance (the router's transfer mechanism); answers how many were moved. */
  evacuate: (instanceId: string) => Promise<{ players: number }>;
  /** Active players on the instance, cross-checked (router reports and the last probe). */
  playersOn: (instance: Instance) => Promise<number>;
  /**
   * A fresh status ping of the instance's players (undefined: no answer). The
   * supervisor does not probe an instance under an active action, so without
   * it a despawn would read the count from before its drain forever.
   */
  probePlayers?: (instance: Instance, ctx: RunContext) => Promise<{ online: number; max: number } | undefined>;
  /** The scoped deletion of the delete action. */
  remove: (instance: Instance, ctx: RunContext, scope: typeof DISCARD_SCOPES) => Promise<JsonObject>;
  sleep?: (ms: number) => Promise<void>;
  /** How often a despawn looks whether its instance is empty yet. */
  emptyPollMs?: number;
}

export const DEFAULT_DESPAWN_TIMEOUT_MS = 120_000;

export class FleetActions {
  constructor(private readonly deps: FleetActionsDeps) {}

  private get now(): number {
    return this.deps.clock.now();
  }

  /** The archive tier: final backup, stop, remove the container keeping the data, release the memory → `archived`. */
  async archive(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    const { store, driver } = this.deps;
    let backupId: string | null = null;
    try {
      const { info } = await this.deps.backups().finalBackup(instance, ctx, backupIdFor(ctx.cmd, 'archive'));
      backupId = info.backupId;
    } catch (err) {
      // abort_stop (the automatic default): the world is not archived without its final backup.
      const current = (await store.instances.get(instance.id)) ?? instance;
      const running = current.observed?.container === 'running' || current.observed?.container === 'paused';
      const stillRunning = running && !(await this.stoppedNow(current, ctx));
      if (!stillRunning && running) await driver.start(ctx.host, instance.id, ctx.ids).catch(() => undefined);
      await moveInstance(store, current, running ? (stillRunning ? 'online' : 'starting') : 'stopped', {
        now: this.now,
        reason: `archive aborted: the final backup failed (${(err as Error).message})`,
        actor: ctx.actor,
        commandId: ctx.cmd.id,
        patch: { activeAction: null },
      });
      // Final whatever the code: the archive is aborted and the world stays where it is (docs/provisioning.md).
      throw new AppError(
        err instanceof AppError ? err.code : 'INTERNAL',
        `archive aborted: the final backup failed: ${(err as Error).message}`,
        { retryable: false, cause: err },
      );
    }
    const request = planStop(ctx.template?.stop ?? { signal: 'SIGTERM', timeoutMs: 30_000 }, instance.secretSettings);
    await driver.stop(ctx.host, instance.id, request, ctx.ids).catch((err: unknown) => {
      if (!(err instanceof AppError && err.code === 'INSTANCE_NOT_FOUND')) throw err;
    });
    await driver.remove(ctx.host, instance.id, { keepData: true }, ctx.ids);
    const now = this.now;
    const fleet: InstanceFleet = { ...(instance.fleet ?? {}), archived: { at: now, hostId: ctx.host.id, backupId } };
    delete fleet.draining;
    await store.transaction(async (tx) => {
      const current = (await tx.instances.get(instance.id)) ?? instance;
      if (instance.hostId && current.memoryReserved) await tx.hosts.releaseMemory(instance.hostId, instance.memoryMb);
      await moveInstance(tx, current, 'archived', {
        now,
        reason: `archived: container removed, world kept on host ${ctx.host.id}${backupId ? ` with final backup ${backupId}` : ''}`,
        actor: ctx.actor,
        commandId: ctx.cmd.id,
        details: { backupId, hostId: ctx.host.id },
        patch: { activeAction: null, fleet, memoryReserved: false, observed: { container: 'absent', observedAt: now } },
      });
    });
    return { archived: true, backupId, hostId: ctx.host.id };
  }

  /** Despawn: drain → evacuate → wait until empty (bounded) → delete per the savegame policy. */
  async despawn(instance: Instance, ctx: RunContext): Promise<JsonObject> {
    const { store } = this.deps;
    const timeoutMs = typeof ctx.cmd.payload.timeoutMs === 'number' ? ctx.cmd.payload.timeoutMs : DEFAULT_DESPAWN_TIMEOUT_MS;
    const force = ctx.cmd.payload.force === true;
    const savegame = ctx.cmd.payload.savegame === 'discard' ? 'discard' : 'archive';
    let current = instance;
    if (!current.fleet?.draining) {
      current = await store.instances.update(
        current.id,
        {
          fleet: {
            ...(current.fleet ?? {}),
            draining: { since: this.now, reason: String(ctx.cmd.payload.reason ?? `despawn by ${ctx.actor}`) },
          },
        },
        { now: this.now },
      );
      await this.step(current, ctx, 'drain', 'draining: no new joins or transfers; current players stay');
    }
    const since = current.fleet?.draining?.since ?? this.now;
    current = await this.refreshPlayers(current, ctx);
    if ((await this.deps.playersOn(current)) > 0) {
      const { players } = await this.deps.evacuate(current.id);
      await this.step(current, ctx, 'evacuate', `evacuating: ${players} player(s) transferred away`);
      const empty = await this.waitEmpty(current, ctx, since + timeoutMs);
      if (!empty && !force) {
        throw new AppError(
          'CONFLICT',
          `despawn of ${current.name} stopped: players were still on it ${Math.round(timeoutMs / 1000)} s after the drain began (use force to delete anyway)`,
        );
      }
      await this.step(current, ctx, 'wait', empty ? 'empty' : `still occupied after ${Math.round(timeoutMs / 1000)} s; forced`);
    }
    current = (await store.instances.get(current.id)) ?? current;
    if (savegame === 'archive' && current.state !== 'archived') {
      await this.step(current, ctx, 'delete', 'archiving the world (savegame archive)');
      const archiving =
        current.state === 'archiving'
          ? current
          : await moveInstance(store, current, 'archiving', {
              now: this.now,
              reason: 'despawn: archiving',
              actor: ctx.actor,
              commandId: ctx.cmd.id,
            });
      return { despawned: true, ...(await this.archive(archiving ?? current, ctx)) };
    }
    if (savegame === 'archive') {
      await store.instances.update(current.id, { activeAction: null }, { now: this.now });
      return { despawned: true, archived: true };
    }
    await this.step(current, ctx, 'delete', 'deleting every scope (savegame discard)');
    const deleting =
      current.state === 'deleting'
        ? current
        : await moveInstance(store, current, 'deleting', {
            now: this.now,
            reason: 'despawn: deleting',
            actor: ctx.actor,
            commandId: ctx.cmd.id,
          });
    return { despawned: true, ...(await this.deps.remove(deleting ?? current, ctx, DISCARD_SCOPES)) };
  }

  /** A despawn that failed for good: undrain, the instance keeps serving. */
  async despawnFailed(instance: Instance, reason: string): Promise<void> {
    const fleet = { ...(instance.fleet ?? {}) };
    delete fleet.draining;
    await this.deps.store.instances.update(instance.id, { activeAction: null, fleet, stateReason: reason }, { now: this.now });
  }

  private async stoppedNow(instance: Instance, ctx: RunContext): Promise<boolean> {
    const details = await this.deps.driver.inspect(ctx.host, instance.id, ctx.ids).catch(() => undefined);
    return details === undefined || (details.state !== 'running' && details.state !== 'paused');
  }

  /** Records a fresh probe reading on the instance (the count playersOn cross-checks); unchanged when the probe has no answer. */
  private async refreshPlayers(instance: Instance, ctx: RunContext): Promise<Instance> {
    const players = await this.deps.probePlayers?.(instance, ctx).catch(() => undefined);
    if (!players) return instance;
    return this.deps.store.instances.update(instance.id, { players: { ...players, at: this.now } }, { now: this.now });
  }

  private async waitEmpty(instance: Instance, ctx: RunContext, deadline: number): Promise<boolean> {
    const wait = this.deps.sleep ?? sleep;
    for (;;) {
      const current = await this.refreshPlayers((await this.deps.store.instances.get(instance.id)) ?? instance, ctx);
      if ((await this.deps.playersOn(current)) === 0) return true;
      if (this.now >= deadline) return false;
      await wait(Math.min(this.deps.emptyPollMs ?? 500, Math.max(1, deadline - this.now)));
    }
  }

  private async step(instance: Instance, ctx: RunContext, step: string, reason: string): Promise<void> {
    await this.deps.store.history.append({
      instanceId: instance.id,
      at: this.now,
      from: instance.state,
      to: instance.state,
      reason: `despawn ${step}: ${reason}`,
      actor: ctx.actor,
      commandId: ctx.cmd.id,
      details: { despawn: step },
    });
  }
}
