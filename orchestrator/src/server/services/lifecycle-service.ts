// Handlers' side of the lifecycle: decide with the pure checkAction, then
// persist the intent (desired state, active action, entry state) and the
// durable `action` command in one transaction, before anything is dispatched.
// The worker (action-runner.ts) applies it; a second conflicting action gets
// INSTANCE_BUSY naming the one in progress.

import { randomUUID } from 'node:crypto';
import type { Instance, InstanceState, JsonObject, MaintenanceMode, TemplateSpec } from '../../domain/index.js';
import { checkAction, type Actor, type InstanceAction } from '../../lifecycle/actions.js';
import { entersOnDispatch } from '../../lifecycle/backup.js';
import { crashLoopPolicy, resetCrashLoop, toStored, type CrashLoopPolicy } from '../../lifecycle/crash-loop.js';
import { unwrap } from '../../lifecycle/result.js';
import { planUnarchive } from '../../provisioning/unarchive.js';
import { assertRoom } from './instance-limits.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { InstancePatch, Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { moveInstance } from '../lifecycle-engine/instance-transitions.js';
import { applyPendingChanges, planSettingsPatch, type SettingsPatchBody } from './pending-changes.js';
import { assertEulaAccepted } from '../../eggs/features.js';
import type { BackupStore } from './backup-store.js';
import { placeInstance } from '../../placement/placement.js';
import { placementHosts } from './instance-creator.js';
import { templateOf } from './template-of.js';

export const SYSTEM_ACTOR: Actor = { kind: 'system', name: 'system', scopes: [] };
const GLOBAL_MAINTENANCE_KEY = 'maintenance';
const PERSIST_ATTEMPTS = 3;
/** Another placement may take the chosen host's last memory between the read and the reservation. */
const UNARCHIVE_PLACEMENT_ATTEMPTS = 5;

export interface ActionRequestOptions {
  requestId: string;
  /** Extra command payload (deletion scopes, replacement mode, …). Never secrets. */
  payload?: JsonObject;
  /** Earliest dispatch (crash-restart backoff). */
  notBefore?: number;
  /** Keep the current state until the command runs (a delayed restart stays `stopped`). */
  deferEnter?: boolean;
  reason?: string;
  /** Fields persisted with the intent in the same transaction (deletion progress, …). */
  patch?: InstancePatch;
}

export interface ActionRequestResult {
  commandId: string | null;
  /** Set when nothing had to be done (the effect already holds or is in progress). */
  noop?: string;
  state: InstanceState;
}

export interface SettingsChangeResult {
  instance: Instance;
  /** Keys whose value took effect at once. */
  applied: string[];
  /** The `apply-settings` command when the change replaces the container now. */
  commandId: string | null;
}

export interface LifecycleServiceOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  commandMaxAttempts: number;
  onCommandsQueued: () => void;
  crashLoopDefaults: CrashLoopPolicy;
  /** The backup store: whether it holds an archived world's final backup (moving the world to another host). */
  archives?: Pick<BackupStore, 'holds'>;
  /** ENDERCLOUD_MAX_INSTANCES: an archived world brought back counts toward it again. */
  maxTotalInstances?: number;
}

export class LifecycleService {
  constructor(private readonly deps: LifecycleServiceOptions) {}

  /** The template version the instance was created from. */
  templateOf(instance: Instance): Promise<TemplateSpec | undefined> {
    return templateOf(this.deps.store, instance);
  }

  crashPolicy(template: TemplateSpec | undefined): CrashLoopPolicy {
    return crashLoopPolicy(this.deps.crashLoopDefaults, template?.crashLoop);
  }

  /**
   * Admin reset after diagnosis: clears the breaker and re-enables automatic
   * restarts; an instance in `error` becomes `stopped` (start it explicitly).
   */
  async resetCrashLoop(idOrName: string, actor: string): Promise<Instance> {
    const instance = await this.find(idOrName);
    if (instance.activeAction) {
      throw new AppError('INSTANCE_BUSY', `instance ${instance.name} is busy: ${instance.activeAction.kind} is in progress`, {
        details: { inProgress: instance.activeAction.kind, commandId: instance.activeAction.commandId },
      });
    }
    const now = this.deps.clock.now();
    const crashLoop = toStored(resetCrashLoop(), this.crashPolicy(await this.templateOf(instance)));
    if (instance.state === 'error') {
      const moved = await moveInstance(this.deps.store, instance, 'stopped', {
        now,
        reason: `crash loop reset by ${actor}`,
        actor,
        patch: { crashLoop, desiredState: 'stopped' },
      });
      if (moved) return moved;
    }
    return this.deps.store.instances.update(instance.id, { crashLoop }, { now });
  }

  /** By id or by name; INSTANCE_NOT_FOUND otherwise. */
  async find(idOrName: string): Promise<Instance> {
    const instance = (await this.deps.store.instances.get(idOrName)) ?? (await this.deps.store.instances.getByName(idOrName));
    if (!instance) throw new AppError('INSTANCE_NOT_FOUND', `instance ${idOrName} does not exist`);
    return instance;
  }

  async globalMaintenance(): Promise<MaintenanceMode | null> {
    const value = (await this.deps.store.system.get(GLOBAL_MAINTENANCE_KEY)) as MaintenanceMode | undefined;
    return value?.enabled ? value : null;
  }

  async setGlobalMaintenance(enabled: boolean, message: string): Promise<MaintenanceMode | null> {
    const now = this.deps.clock.now();
    if (!enabled) {
      await this.deps.store.system.delete(GLOBAL_MAINTENANCE_KEY);
      return null;
    }
    const mode: MaintenanceMode = { enabled: true, message, since: now };
    await this.deps.store.system.put(GLOBAL_MAINTENANCE_KEY, { ...mode }, now);
    return mode;
  }

  async setInstanceMaintenance(idOrName: string, enabled: boolean, message: string): Promise<Instance> {
    const instance = await this.find(idOrName);
    const now = this.deps.clock.now();
    return this.deps.store.instances.update(instance.id, { maintenance: enabled ? { enabled: true, message, since: now } : null }, { now });
  }

  /** What request would decide now, without persisting: throws the refusal (INVALID_TRANSITION, INSTANCE_BUSY, …). */
  async check(idOrName: string, action: InstanceAction, actor: Actor): Promise<void> {
    const instance = await this.find(idOrName);
    unwrap(checkAction(instance, action, actor, { globalMaintenance: await this.globalMaintenance() }));
  }

  /**
   * Checks and persists one action. Concurrent requests race on the instance
   * version: the loser re-reads, sees the winner's active action and gets
   * INSTANCE_BUSY (or a no-op for the same idempotent action).
   */
  async request(idOrName: string, action: InstanceAction, actor: Actor, opts: ActionRequestOptions): Promise<ActionRequestResult> {
    for (let attempt = 1; ; attempt++) {
      const instance = await this.find(idOrName);
      const plan = unwrap(checkAction(instance, action, actor, { globalMaintenance: await this.globalMaintenance() }));
      if (plan.kind === 'noop') return { commandId: instance.activeAction?.commandId ?? null, noop: plan.reason, state: instance.state };
      if (action === 'start' || action === 'restart') {
        const template = await this.templateOf(instance);
        // The value the start would run with: pending setting changes are applied by it.
        assertEulaAccepted(template, applyPendingChanges(instance, template).containerConfig.env, instance.name);
      }
      try {
        const defer = opts.deferEnter === true || entersOnDispatch(action, opts.payload);
        const result = await this.persist(instance, action, plan.desiredState, defer ? null : plan.enterState, actor, opts);
        this.deps.onCommandsQueued();
        return result;
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'CONFLICT') || attempt >= PERSIST_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * A settings, image or label change (PATCH /instances/:id/settings): the
   * pure plan, then its patch and, when it replaces the container now, the
   * `apply-settings` action, written in one transaction: either both or nothing.
   */
  async changeSettings(
    idOrName: string,
    body: SettingsPatchBody,
    actor: Actor,
    opts: { requestId: string },
  ): Promise<SettingsChangeResult> {
    for (let attempt = 1; ; attempt++) {
      const instance = await this.find(idOrName);
      const now = this.deps.clock.now();
      const plan = planSettingsPatch(instance, await this.templateOf(instance), body, now);
      const action = plan.replaceNow
        ? unwrap(checkAction(instance, 'apply-settings', actor, { globalMaintenance: await this.globalMaintenance() }))
        : undefined;
      try {
        const result = await this.deps.store.transaction(async (tx) => {
          const updated = await tx.instances.update(instance.id, plan.patch, { now, expectedVersion: instance.version });
          if (action?.kind !== 'dispatch') return { instance: updated, commandId: null };
          const persisted = await this.persistIn(
            tx,
            updated,
            'apply-settings',
            action.desiredState,
            action.enterState,
            actor,
            {
              requestId: opts.requestId,
              reason: `configuration replacement requested by ${actor.name}`,
            },
            now,
          );
          return { instance: (await tx.instances.get(instance.id)) ?? updated, commandId: persisted.commandId };
        });
        if (result.commandId) this.deps.onCommandsQueued();
        return { ...result, applied: plan.applied };
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'CONFLICT') || attempt >= PERSIST_ATTEMPTS) throw err;
      }
    }
  }

  private async persist(
    instance: Instance,
    action: InstanceAction,
    desiredState: Instance['desiredState'],
    enterState: InstanceState | null,
    actor: Actor,
    opts: ActionRequestOptions,
  ): Promise<ActionRequestResult> {
    const now = this.deps.clock.now();
    return this.deps.store.transaction((tx) => this.persistIn(tx, instance, action, desiredState, enterState, actor, opts, now));
  }

  /**
   * Where an archived world comes back (planUnarchive over every host, the
   * group's placement), with its memory reserved there: the kept world on its
   * host, or the final backup from the backup store restored on another.
   */
  private async placeUnarchive(tx: Store, instance: Instance): Promise<{ hostId: string; payload: JsonObject; reason: string }> {
    const group = await tx.groups.get(instance.groupId);
    if (group) {
      // An archived world counts toward no limit; brought back it does again, checked like a new instance.
      const variant = group.variants.find((v) => v.id === instance.variantId);
      const template = variant ? await tx.templates.get(variant.template.name, variant.template.version) : undefined;
      await assertRoom(tx, group, template, this.deps.maxTotalInstances);
    }
    const strategy = group?.placement ?? 'packed';
    const archived = instance.fleet?.archived;
    const backupId = archived?.backupId ?? null;
    const record = backupId ? await this.deps.archives?.holds(instance.id, backupId, tx) : undefined;
    // A partial backup (template `backup.paths`) is not a whole instance directory: it cannot stand in for the kept one.
    const finalBackup = backupId === null ? null : { backupId, stored: record !== undefined && record.paths === null };
    for (let attempt = 1; ; attempt++) {
      const hosts = await placementHosts(tx, await tx.hosts.list(), instance.groupId, strategy);
      const plan = unwrap(
        planUnarchive({
          instance: { name: instance.name, groupId: instance.groupId, memoryMb: instance.memoryMb },
          keptHostId: archived?.hostId ?? instance.hostId,
          hosts,
          strategy,
          finalBackup,
        }),
      );
      if (
        await tx.hosts.reserveMemory(plan.hostId, instance.memoryMb, {
          statuses: plan.kind === 'kept' ? ['ONLINE', 'MAINTENANCE'] : ['ONLINE'],
        })
      ) {
        const restore: JsonObject = plan.kind === 'restore' ? { restore: { backupId: plan.backupId, fromHostId: plan.fromHostId } } : {};
        return { hostId: plan.hostId, payload: { start: true, unarchive: true, ...restore }, reason: plan.reason };
      }
      // Another placement took the memory between the read and the reservation.
      if (attempt >= UNARCHIVE_PLACEMENT_ATTEMPTS)
        throw new AppError(
          'NO_CAPACITY',
          `archived instance ${instance.name}: other placements kept taking the free memory on host ${plan.hostId}; try again`,
        );
    }
  }

  /**
   * A start of an instance without a container and without a memory reservation re-creates the
   * container after reserving the memory: an archived world (placeUnarchive, also after its
   * unarchive failed), or an instance whose create failed before its container existed (its
   * reservation was released then: create-handler.ts failedForGood).
   */
  private async placementFor(
    tx: Store,
    instance: Instance,
    action: InstanceAction,
  ): Promise<{ hostId: string; payload: JsonObject; reason: string } | undefined> {
    if (action !== 'start' && action !== 'restart') return undefined;
    const unplaced = instance.state === 'error' && !instance.memoryReserved;
    if ((action === 'start' && instance.state === 'archived') || (unplaced && instance.fleet?.archived))
      return this.placeUnarchive(tx, instance);
    if (unplaced) return this.placeFailedCreate(tx, instance);
    return undefined;
  }

  /**
   * A failed create left nothing on any host (the agent undoes its half-made directory), so it is
   * placed like a new instance: on its own host when that has the room, else where the group's
   * placement puts it; NO_CAPACITY when no ONLINE host has it.
   */
  private async placeFailedCreate(tx: Store, instance: Instance): Promise<{ hostId: string; payload: JsonObject; reason: string }> {
    const strategy = (await tx.groups.get(instance.groupId))?.placement ?? 'packed';
    for (let attempt = 1; ; attempt++) {
      const online = await tx.hosts.list({ statuses: ['ONLINE'] });
      const own = online.find((h) => h.id === instance.hostId && h.resources.memoryMb - h.memoryReservedMb >= instance.memoryMb);
      const hostId =
        own?.id ??
        unwrap(
          placeInstance(
            await placementHosts(tx, online, instance.groupId, strategy),
            { groupId: instance.groupId, memoryMb: instance.memoryMb },
            strategy,
          ),
        );
      if (await tx.hosts.reserveMemory(hostId, instance.memoryMb)) {
        return {
          hostId,
          payload: { start: true },
          reason: `its create runs again on host ${hostId} with ${instance.memoryMb} MiB reserved`,
        };
      }
      if (attempt >= UNARCHIVE_PLACEMENT_ATTEMPTS)
        throw new AppError(
          'NO_CAPACITY',
          `instance ${instance.name}: other placements kept taking the free memory on host ${hostId}; try again`,
        );
    }
  }

  /** The intent (desired state, active action, entry state) and the durable command, inside the caller's transaction. */
  private async persistIn(
    tx: Store,
    instance: Instance,
    action: InstanceAction,
    desiredState: Instance['desiredState'],
    enterState: InstanceState | null,
    actor: Actor,
    opts: ActionRequestOptions,
    now: number,
  ): Promise<ActionRequestResult> {
    const commandId = `cmd-${randomUUID()}`;
    const unarchive = await this.placementFor(tx, instance, action);
    const hostId = unarchive?.hostId ?? instance.hostId;
    // A start that re-creates the container goes through `installing` (the create command's guard).
    if (unarchive) enterState = 'installing';
    let updated = await tx.instances.update(
      instance.id,
      {
        ...opts.patch,
        activeAction: { kind: action, commandId, startedAt: now },
        desiredState,
        ...(hostId !== instance.hostId ? { hostId } : {}),
        ...(unarchive ? { memoryReserved: true } : {}),
      },
      { now, expectedVersion: instance.version },
    );
    if (enterState !== null && enterState !== instance.state) {
      const reason = opts.reason ?? `${action} requested by ${actor.name}`;
      const moved = await moveInstance(tx, updated, enterState, {
        now,
        reason: unarchive ? `${reason}; ${unarchive.reason}` : reason,
        actor: actor.name,
        commandId,
        details: { action, ...(unarchive ? { hostId, ...(unarchive.payload.restore ? { restore: unarchive.payload.restore } : {}) } : {}) },
      });
      if (!moved) throw new AppError('CONFLICT', `instance ${instance.id} changed state concurrently`);
      updated = moved;
    }
    await tx.commands.create(
      {
        id: commandId,
        kind: unarchive ? 'create' : action,
        instanceId: instance.id,
        hostId,
        requestId: opts.requestId,
        payload: { actor: actor.name, ...(opts.payload ?? {}), ...(unarchive?.payload ?? {}) },
        maxAttempts: this.deps.commandMaxAttempts,
        ...(opts.notBefore !== undefined ? { nextAttemptAt: Math.max(now, opts.notBefore) } : {}),
      },
      now,
    );
    return { commandId, state: updated.state };
  }
}

/**
 * The lifecycle actor of an API request: its token's name and scopes. A
 * router token waking a server acts as an automatic actor (maintenance and
 * the error state stop it like any scheduled work).
 */
export function userActor(principal: { name: string; scopes: readonly string[] } | undefined): Actor {
  const scopes = principal?.scopes ?? [];
  const automatic =
    scopes.includes('router') && !scopes.some((s) => ['admin', 'manager', 'operator'].includes(s) || s.startsWith('instances:'));
  return { kind: automatic ? 'system' : 'user', name: principal?.name ?? 'anonymous', scopes };
}
