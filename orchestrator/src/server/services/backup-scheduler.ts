// Scheduled backups and retention: one loop that, for every instance whose
// policy (its own, else its group's `backup:`) has a cron schedule, requests
// the `backup` action as the system actor when a slot is due (automatic rules:
// online save when the template allows it, otherwise stop first), and prunes
// scheduled backups beyond the retention rule from the store and the host.
// Missed slots (orchestrator down) collapse into one run; a busy instance is
// tried again on the next tick.

import type { Instance, JsonObject } from '../../domain/index.js';
import { parseBackupPolicy, type BackupPolicy } from '../../contracts/backup-policy.js';
import { planRetention } from '../../lifecycle/backup-retention.js';
import { nextRun, parseCron } from '../../lifecycle/cron.js';
import type { Logger } from '../../shared/logger.js';
import type { Timers } from '../../shared/timers.js';
import { PeriodicTask } from '../../shared/periodic-task.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { HostDriver } from '../drivers/host-driver.js';
import type { BackupStore } from './backup-store.js';
import { SYSTEM_ACTOR, type LifecycleService } from './lifecycle-service.js';

export interface BackupSchedulerOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  lifecycle: Pick<LifecycleService, 'request'>;
  backupStore: BackupStore;
  driver: HostDriver;
  intervalMs: number;
  timers?: Timers;
  /** With several orchestrator replicas, only the active one schedules (the leader lease). Default: always. */
  isActive?: () => boolean;
}

/** States a scheduled backup may start from (the backup action's own rule). */
const BACKUPABLE: readonly string[] = ['online', 'degraded', 'stopped'];
/** The trigger scheduled backups are recorded with; retention prunes only these. */
export const SCHEDULE_TRIGGER = 'schedule';

export interface SchedulerTick {
  requested: string[];
  pruned: { instanceId: string; backupId: string }[];
}

export class BackupScheduler {
  private readonly loop: PeriodicTask;

  constructor(private readonly deps: BackupSchedulerOptions) {
    this.loop = new PeriodicTask({
      name: 'backup scheduler tick',
      intervalMs: deps.intervalMs,
      run: () => this.tick(),
      logger: deps.logger,
      ...(deps.timers ? { timers: deps.timers } : {}),
    });
  }

  start(): void {
    this.loop.start(0);
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** The instance's own policy, else its group's; undefined when neither sets one. */
  async policyOf(instance: Instance): Promise<BackupPolicy | undefined> {
    const own = (await this.deps.store.backupPolicies.get(instance.id))?.policy;
    if (own) return own as BackupPolicy;
    const group = instance.groupId ? await this.deps.store.groups.get(instance.groupId) : undefined;
    return group?.backup ?? undefined;
  }

  /** The instance's own policy, the one in force (own, else the group's) and its next slot. */
  async describe(
    instance: Instance,
  ): Promise<{ own: BackupPolicy | null; effective: BackupPolicy | null; source: 'instance' | 'group' | null; nextRunAt: string | null }> {
    const record = await this.deps.store.backupPolicies.get(instance.id);
    const own = (record?.policy as BackupPolicy | null | undefined) ?? null;
    const effective = (await this.policyOf(instance)) ?? null;
    const from = record?.lastScheduledAt ?? this.deps.clock.now();
    const next = effective?.schedule ? nextRun(parseCron(effective.schedule), Math.max(from, this.deps.clock.now() - 60_000)) : undefined;
    return {
      own,
      effective,
      source: own ? 'instance' : effective ? 'group' : null,
      nextRunAt: next === undefined ? null : new Date(next).toISOString(),
    };
  }

  /** Sets (null: clears, the group's applies again) the instance's own policy. */
  async setPolicy(instance: Instance, policy: BackupPolicy | null): Promise<void> {
    const checked = policy === null ? null : parseBackupPolicy(policy, 'body');
    await this.deps.store.backupPolicies.setPolicy(instance.id, checked as JsonObject | null, this.deps.clock.now());
  }

  /** One pass: request due backups, then prune per retention. */
  async tick(): Promise<SchedulerTick> {
    const out: SchedulerTick = { requested: [], pruned: [] };
    if (this.deps.isActive && !this.deps.isActive()) return out;
    for (const instance of await this.deps.store.instances.list()) {
      try {
        const policy = await this.policyOf(instance);
        if (!policy) continue;
        if (policy.schedule && (await this.runIfDue(instance, policy.schedule))) out.requested.push(instance.id);
        if (policy.retention) out.pruned.push(...(await this.prune(instance, policy)));
      } catch (err) {
        this.deps.logger.warn({ instanceId: instance.id, err: (err as Error).message }, 'scheduled backup skipped');
      }
    }
    return out;
  }

  private async runIfDue(instance: Instance, schedule: string): Promise<boolean> {
    const now = this.deps.clock.now();
    const mark = (await this.deps.store.backupPolicies.get(instance.id))?.lastScheduledAt ?? null;
    // A policy seen for the first time waits for its next slot instead of firing at once.
    if (mark === null) {
      await this.deps.store.backupPolicies.markScheduled(instance.id, now, now);
      return false;
    }
    const due = nextRun(parseCron(schedule), mark);
    if (due === undefined || due > now) return false;
    if (!BACKUPABLE.includes(instance.state) || instance.activeAction) return false; // next tick
    await this.deps.lifecycle.request(instance.id, 'backup', SYSTEM_ACTOR, {
      requestId: `backup-schedule-${instance.id}-${due}`,
      payload: { previousState: instance.state, trigger: SCHEDULE_TRIGGER, reason: `schedule ${schedule}` },
    });
    await this.deps.store.backupPolicies.markScheduled(instance.id, now, now);
    this.deps.logger.info({ instanceId: instance.id, slot: new Date(due).toISOString() }, 'scheduled backup requested');
    return true;
  }

  /** Scheduled backups beyond the retention rule leave the store and the host. */
  private async prune(instance: Instance, policy: BackupPolicy): Promise<{ instanceId: string; backupId: string }[]> {
    const scheduled = (await this.deps.store.storedBackups.listForInstance(instance.id)).filter((b) => b.trigger === SCHEDULE_TRIGGER);
    const plan = planRetention(scheduled, policy.retention ?? {});
    const host = instance.hostId ? await this.deps.store.hosts.get(instance.hostId) : undefined;
    const pruned: { instanceId: string; backupId: string }[] = [];
    for (const backupId of plan.prune) {
      if (host && this.deps.driver.backups) {
        await this.deps.driver.backups
          .delete(host, instance.id, backupId)
          .catch((err: unknown) =>
            this.deps.logger.warn(
              { instanceId: instance.id, backupId, err: (err as Error).message },
              'pruning a backup on its host failed; the store copy is pruned anyway',
            ),
          );
      }
      await this.deps.backupStore.delete(instance.id, backupId);
      pruned.push({ instanceId: instance.id, backupId });
    }
    if (pruned.length > 0)
      this.deps.logger.info({ instanceId: instance.id, pruned: pruned.length, kept: plan.keep.length }, 'backups pruned by retention');
    return pruned;
  }
}
