// The provisioner loop (docs/provisioning.md "How fleets scale"): every few seconds, per group, one snapshot →
// the pure decisions → actions through the one command pipeline. For every
// group it advances each instance's idle clock with the probe's player count
// (router reports advance it as they arrive) and applies due idle tiers (the
// instance's, the group's or the system's: sleep is on by default). A group
// with a scaling policy is also planned as a fleet (min, buffer, scale up/down,
// wakes; idle tiers leave what the fleet holds alone), its empty allocations
// released and its archived worlds past retention deleted. Every decision is
// audited with the inputs it came from.

import type { Group, InstanceFleet, JsonObject } from '../../domain/index.js';
import type { Actor } from '../../lifecycle/actions.js';
import { stopBackupPayload } from '../../lifecycle/backup.js';
import {
  capsRemainingOf,
  idleSince,
  shouldRelease,
  startIdleClock,
  type CapsRemaining,
  type FleetPlan,
  type ScalingPolicy,
} from '../../provisioning/index.js';
import type { Logger } from '../../shared/logger.js';
import { PeriodicTask } from '../../shared/periodic-task.js';
import type { Timers } from '../../shared/timers.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { roomsFor } from '../services/instance-limits.js';
import type { LifecycleService } from '../services/lifecycle-service.js';
import { templateOf } from '../services/template-of.js';
import type { FleetService } from './fleet-service.js';
import { fleetMemoryKey, idleOutlooks, planGroup, readFleetMemory, readGroup, type FleetMemory, type GroupSnapshot } from './fleet-view.js';
import type { IdleTierSettings } from './idle-tier-settings.js';
import { FleetShortReporter, shortOf } from './fleet-short.js';
import { AppError } from '../../shared/errors.js';

export const PROVISIONER_ACTOR: Actor = { kind: 'system', name: 'provisioner', scopes: [] };
const SETTLED = ['online', 'paused', 'stopped', 'archived'] as const;

export interface ProvisionerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  lifecycle: LifecycleService;
  fleet: FleetService;
  /** The tiers of worlds whose instance and group set none. */
  idleTiers: IdleTierSettings;
  intervalMs: number;
  maxTotalInstances: number | undefined;
  timers?: Timers;
  /** Only the active replica provisions (the HA lease); default: always. */
  isActive?: () => boolean;
}

export class Provisioner {
  private readonly loop: PeriodicTask;
  private readonly short: FleetShortReporter;

  constructor(private readonly deps: ProvisionerDeps) {
    this.short = new FleetShortReporter({
      store: deps.store,
      logger: deps.logger,
      audit: (groupId, params, now) => this.audit('fleet.short', groupId, params, `fleet-short-${groupId}-${now}`, now),
    });
    this.loop = new PeriodicTask({
      name: 'provisioner tick',
      intervalMs: deps.intervalMs,
      run: () => this.tick(),
      logger: deps.logger,
      ...(deps.timers ? { timers: deps.timers } : {}),
    });
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Provision soon (this replica just became the leader). */
  kick(): void {
    this.loop.kick();
  }

  /** One pass over every group: idle tiers everywhere, the fleet plan where a scaling policy is set. */
  async tick(): Promise<void> {
    if (this.deps.isActive && !this.deps.isActive()) return;
    const systemTiers = await this.deps.idleTiers.tiers();
    for (const group of await this.deps.store.groups.list()) {
      try {
        await this.provision(group, systemTiers);
      } catch (err) {
        this.deps.logger.error({ groupId: group.id, err }, 'provisioning a group failed');
      }
    }
  }

  private async provision(group: Group, systemTiers: SystemTiers): Promise<void> {
    const { store } = this.deps;
    const now = this.deps.clock.now();
    let snap = await readGroup(store, group.id);
    if (snap.instances.length === 0 && !group.scaling) return;
    if (await this.advanceIdleClocks(snap, now)) snap = await readGroup(store, group.id);
    const policy = group.scaling;
    let held: ReadonlySet<string> = new Set();
    if (policy) {
      const memory = await readFleetMemory(store, group.id);
      const plan = planGroup({ ...group, scaling: policy }, snap, memory, await this.capsRemaining(group), now);
      await this.applyPlan(group, plan, memory, now);
      held = new Set(plan.hold);
    }
    await this.applyIdleTiers(group, snap, systemTiers, held, now);
    if (policy) {
      await this.releaseEmptyAllocations(policy, snap, now);
      await this.expireArchives(policy, snap, now);
    }
  }

  /** Folds the probe's count into each settled instance's idle clock; true when any clock changed. */
  private async advanceIdleClocks(snap: GroupSnapshot, now: number): Promise<boolean> {
    let changed = false;
    for (const instance of snap.instances) {
      if (!(SETTLED as readonly string[]).includes(instance.state)) continue;
      const prev = instance.fleet?.idle ?? startIdleClock(instance.stateChangedAt);
      const next = idleSince(
        prev,
        {
          router: { at: now, playersOnline: snap.routerPlayers[instance.id] ?? 0, logins: [], logouts: [] },
          ...(instance.players ? { probe: { at: instance.players.at, playersOnline: instance.players.online } } : {}),
        },
        now,
      );
      // Written only when what the tiers read changed (not every tick's report time).
      if (
        instance.fleet?.idle &&
        next.emptySince === prev.emptySince &&
        next.lastLoginAt === prev.lastLoginAt &&
        next.playersOnline === prev.playersOnline
      )
        continue;
      await this.deps.store.instances.update(instance.id, { fleet: { ...(instance.fleet ?? {}), idle: next } }, { now });
      changed = true;
    }
    return changed;
  }

  private async applyPlan(group: Group, plan: FleetPlan, memory: FleetMemory, now: number): Promise<void> {
    const decisions: JsonObject[] = [];
    const requestId = `provisioner-${now}`;
    let refused: { code: string; message: string } | undefined;
    for (let n = 0; n < plan.spawn.count; n++) {
      try {
        const { instance } = await this.deps.fleet.spawn(group.id, {}, PROVISIONER_ACTOR, requestId);
        decisions.push({ spawn: instance.id, reason: plan.spawn.reason });
      } catch (err) {
        refused = { code: err instanceof AppError ? err.code : 'INTERNAL', message: (err as Error).message };
        decisions.push({ spawn: null, reason: plan.spawn.reason, refused: refused.message });
        break;
      }
    }
    await this.short.report(group.id, shortOf(plan, refused), now);
    for (const w of plan.wake) {
      const instance = await this.deps.store.instances.get(w.instanceId);
      const action = instance?.state === 'paused' ? 'resume' : 'start';
      decisions.push(await this.request(w.instanceId, action, w.reason, requestId, {}));
    }
    for (const d of plan.despawn) {
      try {
        await this.deps.fleet.despawn(d.instanceId, { reason: `autoscaler: ${d.reason}` }, PROVISIONER_ACTOR, requestId);
        decisions.push({ despawn: d.instanceId, reason: d.reason });
      } catch (err) {
        decisions.push({ despawn: d.instanceId, reason: d.reason, refused: (err as Error).message });
      }
    }
    if (decisions.length === 0) return;
    const scaledUp = plan.spawn.count > 0 || plan.wake.length > 0;
    const next = {
      lastScaleUpAt: scaledUp ? now : memory.lastScaleUpAt,
      lastScaleDownAt: plan.despawn.length > 0 ? now : memory.lastScaleDownAt,
    };
    await this.deps.store.system.put(fleetMemoryKey(group.id), { ...next }, now);
    await this.audit('fleet.scale', group.id, { inputs: plan.inputs as unknown as JsonObject, decisions }, requestId, now);
    this.deps.logger.info({ groupId: group.id, decisions }, 'autoscaler acted');
  }

  /** Due idle tiers, from the same outlook the fleet view shows; a stop takes the manual stop's path (with the template's backup). */
  private async applyIdleTiers(
    group: Group,
    snap: GroupSnapshot,
    systemTiers: SystemTiers,
    held: ReadonlySet<string>,
    now: number,
  ): Promise<void> {
    const byId = new Map(snap.instances.map((i) => [i.id, i]));
    for (const { instanceId, choice, decision } of idleOutlooks(group, snap, systemTiers, held, now)) {
      const instance = byId.get(instanceId)!;
      const clock = instance.fleet?.idle;
      if (!clock || !decision || !('action' in decision)) continue;
      const requestId = `idle-${instance.id}-${now}`;
      const reason = `idle for ${Math.round(decision.idleForMs / 1000)} s (${choice.source} tier ${decision.tier.after} → ${decision.action})`;
      let result: JsonObject;
      if (decision.action === 'pause') {
        result = await this.request(instance.id, 'pause', reason, requestId, { save: true });
      } else if (decision.action === 'stop') {
        const template = await templateOf(this.deps.store, instance);
        result = await this.request(
          instance.id,
          'stop',
          reason,
          requestId,
          stopBackupPayload({
            automatic: true,
            backup: template?.backup !== undefined,
            ...(template?.backup?.onFailure ? { failurePolicy: template.backup.onFailure } : {}),
          }),
        );
      } else if (group.scaling?.savegame.mode === 'discard') {
        // Nothing of a discarded world is kept: the archive tier is a despawn.
        result = await this.deps.fleet.despawn(instance.id, { reason }, PROVISIONER_ACTOR, requestId).then(
          (r) => ({ instanceId: instance.id, action: 'despawn', commandId: r.commandId }),
          (err: unknown) => ({ instanceId: instance.id, action: 'despawn', refused: (err as Error).message }),
        );
      } else {
        result = await this.request(instance.id, 'archive', reason, requestId, {});
      }
      if (!('refused' in result)) {
        const latest = (await this.deps.store.instances.get(instance.id)) ?? instance;
        const fleet: InstanceFleet = { ...(latest.fleet ?? {}), lastTier: { action: decision.action, at: now } };
        await this.deps.store.instances.update(instance.id, { fleet }, { now });
      }
      await this.audit(
        'instance.idle',
        instance.id,
        {
          groupId: group.id,
          tier: decision.tier.after,
          action: decision.action,
          tiersFrom: choice.source,
          idleForMs: decision.idleForMs,
          emptySince: clock.emptySince,
          result,
        },
        requestId,
        now,
      );
    }
  }

  private async releaseEmptyAllocations(policy: ScalingPolicy, snap: GroupSnapshot, now: number): Promise<void> {
    if (policy.releaseWhenEmptyForMs === undefined) return;
    for (const instance of snap.instances) {
      if (!instance.sessionId) continue;
      const session = await this.deps.store.sessions.get(instance.sessionId);
      if (!session || session.status !== 'allocated') continue;
      const decision = shouldRelease(
        { sessionId: session.id, allocatedAt: session.createdAt },
        {
          playersOnline: Math.max(snap.routerPlayers[instance.id] ?? 0, instance.players?.online ?? 0),
          emptySince: instance.fleet?.idle?.emptySince ?? null,
        },
        policy.releaseWhenEmptyForMs,
        now,
      );
      if (!decision.release) continue;
      await this.deps.fleet.release(session.id, decision.reason);
      await this.audit(
        'allocation.release',
        session.id,
        { instanceId: instance.id, reason: decision.reason },
        `release-${session.id}`,
        now,
      );
    }
  }

  /** Archived worlds past the savegame retention are deleted with their backups. */
  private async expireArchives(policy: ScalingPolicy, snap: GroupSnapshot, now: number): Promise<void> {
    const retention = policy.savegame.retentionMs;
    if (retention === undefined) return;
    for (const instance of snap.instances) {
      const archivedAt = instance.fleet?.archived?.at;
      if (instance.state !== 'archived' || archivedAt === undefined || now - archivedAt < retention || instance.activeAction) continue;
      const reason = `archived world past its retention (${policy.savegame.retention})`;
      const result = await this.request(instance.id, 'delete', reason, `retention-${instance.id}-${now}`, {
        keepData: false,
        paths: [],
        scopes: ['container', 'technical', 'player_data', 'backups'],
      });
      await this.audit('instance.retention', instance.id, { archivedAt, retentionMs: retention, result }, `retention-${instance.id}`, now);
    }
  }

  private async request(
    instanceId: string,
    action: 'pause' | 'stop' | 'archive' | 'resume' | 'start' | 'delete',
    reason: string,
    requestId: string,
    payload: JsonObject,
  ): Promise<JsonObject> {
    try {
      const res = await this.deps.lifecycle.request(instanceId, action, PROVISIONER_ACTOR, { requestId, reason, payload });
      return { instanceId, action, commandId: res.commandId, ...(res.noop ? { noop: res.noop } : {}) };
    } catch (err) {
      this.deps.logger.info({ instanceId, action, err: (err as Error).message }, 'provisioning action refused');
      return { instanceId, action, refused: (err as Error).message };
    }
  }

  /** What every limit still allows, from the one place that enforces them (instance-limits.ts). */
  private async capsRemaining(group: Group): Promise<CapsRemaining> {
    const { store } = this.deps;
    const templates = await Promise.all(group.variants.map((v) => store.templates.get(v.template.name, v.template.version)));
    return store.transaction(async (tx) => {
      const rooms = [];
      for (const t of templates) rooms.push(...(await roomsFor(tx, group, t, this.deps.maxTotalInstances)));
      return capsRemainingOf(group.id, rooms);
    });
  }

  private async audit(action: string, targetId: string, params: JsonObject, requestId: string, now: number): Promise<void> {
    await this.deps.store.audit.append({
      at: now,
      actor: PROVISIONER_ACTOR.name,
      action,
      targetKind: action.startsWith('fleet') ? 'group' : action.startsWith('allocation') ? 'allocation' : 'instance',
      targetId,
      params,
      result: 'ok',
      errorCode: null,
      requestId,
    });
  }
}

type SystemTiers = Awaited<ReturnType<IdleTierSettings['tiers']>>;
