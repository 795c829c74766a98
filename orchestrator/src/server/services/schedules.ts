// Instance schedules (issue 24): the CRUD the routes call, and the runner —
// on the leader only — that starts every due schedule's task chain
// (lifecycle/schedules.ts): a command through the console path, a power action
// or a backup through the lifecycle service's action pipeline, exactly as the
// routes do. The run claim in the store keeps one schedule from running twice
// at once (replicas, restarts, run-now during a run). Missed slots collapse
// into one run; the next slot is computed from the cron when a run starts.

import { randomUUID } from 'node:crypto';
import type { Instance } from '../../domain/index.js';
import type { Actor } from '../../lifecycle/actions.js';
import {
  checkSchedule,
  nextScheduleRun,
  runTaskChain,
  type ScheduleDefinitionInput,
  type ScheduleTask,
  type SchedulePowerAction,
} from '../../lifecycle/schedules.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { PeriodicTask } from '../../shared/periodic-task.js';
import { sleep, type Timers } from '../../shared/timers.js';
import type { ScheduleRecord, Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { HostDriver } from '../drivers/host-driver.js';
import { sendConsoleCommand, type ConsoleDeps } from './instance-console.js';
import { templateOf } from './template-of.js';
import { killInstance } from './instance-kill.js';
import type { LifecycleService } from './lifecycle-service.js';

/** A run claim older than this is a dead runner's (10 tasks × 900 s offsets is 2.5 h). */
const STALE_CLAIM_MS = 3 * 3_600_000;
const DUE_BATCH = 100;
/** Backups taken by a schedule task; the backup policy's retention prunes only its own (`schedule`). */
export const SCHEDULE_TASK_TRIGGER = 'schedule-task';

export interface ScheduleView extends ScheduleDefinitionInput {
  id: string;
  instanceId: string;
  nextRunAt: number | null;
  lastRunAt: number | null;
  lastResult: 'ok' | 'failed' | 'skipped' | null;
  lastError: string | null;
  running: boolean;
  createdAt: number;
  updatedAt: number;
}

export interface ScheduleServiceOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  lifecycle: Pick<LifecycleService, 'request' | 'find'>;
  /** The driver the console route uses (RCON / stdin). */
  driver: HostDriver;
  intervalMs: number;
  timers?: Timers;
  /** The wait between tasks (tests move a manual clock instead of sleeping). Default: a real sleep. */
  wait?: (ms: number) => Promise<void>;
  /** Only the leader runs schedules. Default: always. */
  isActive?: () => boolean;
}

export function scheduleView(r: ScheduleRecord): ScheduleView {
  return {
    id: r.id,
    instanceId: r.instanceId,
    name: r.name,
    cron: r.cron,
    enabled: r.enabled,
    onlyWhenOnline: r.onlyWhenOnline,
    tasks: r.tasks,
    nextRunAt: r.nextRunAt,
    lastRunAt: r.lastRunAt,
    lastResult: r.lastResult,
    lastError: r.lastError,
    running: r.runningSince !== null,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

export class ScheduleService {
  private readonly loop: PeriodicTask;
  /** Chains started by this process, by schedule id (awaited by idle() and stop()). */
  private readonly runs = new Map<string, Promise<void>>();
  private readonly console: ConsoleDeps;

  constructor(private readonly deps: ScheduleServiceOptions) {
    this.console = { host: (id) => deps.store.hosts.get(id), templateOf: (i) => templateOf(deps.store, i), driver: deps.driver };
    this.loop = new PeriodicTask({
      name: 'schedule tick',
      intervalMs: deps.intervalMs,
      run: () => this.tick(),
      logger: deps.logger,
      ...(deps.timers ? { timers: deps.timers } : {}),
    });
  }

  start(): void {
    this.loop.start(0);
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.idle();
  }

  /** Resolves when every chain this process started has finished. */
  async idle(): Promise<void> {
    while (this.runs.size > 0) await Promise.all([...this.runs.values()]);
  }

  async list(instanceId: string): Promise<ScheduleView[]> {
    const instance = await this.deps.lifecycle.find(instanceId);
    return (await this.deps.store.schedules.listForInstance(instance.id)).map(scheduleView);
  }

  async get(instanceId: string, scheduleId: string): Promise<ScheduleView> {
    return scheduleView(await this.record(instanceId, scheduleId));
  }

  async create(instanceId: string, input: ScheduleDefinitionInput): Promise<ScheduleView> {
    const instance = await this.deps.lifecycle.find(instanceId);
    const d = checkSchedule(input);
    const now = this.deps.clock.now();
    const created = await this.deps.store.schedules.create({
      id: `sch-${randomUUID()}`,
      instanceId: instance.id,
      ...d,
      nextRunAt: nextScheduleRun(d.cron, d.enabled, now),
      createdAt: now,
    });
    return scheduleView(created);
  }

  async update(instanceId: string, scheduleId: string, input: ScheduleDefinitionInput): Promise<ScheduleView> {
    const existing = await this.record(instanceId, scheduleId);
    const d = checkSchedule(input);
    const now = this.deps.clock.now();
    return scheduleView(
      await this.deps.store.schedules.update(existing.id, { ...d, nextRunAt: nextScheduleRun(d.cron, d.enabled, now) }, now),
    );
  }

  async delete(instanceId: string, scheduleId: string): Promise<{ id: string; instanceId: string }> {
    const existing = await this.record(instanceId, scheduleId);
    await this.deps.store.schedules.delete(existing.id);
    return { id: existing.id, instanceId: existing.instanceId };
  }

  /** Run now (202): starts the chain at once, whatever the cron, enabled or not; INSTANCE_BUSY while a run of it is in progress. */
  async runNow(instanceId: string, scheduleId: string): Promise<{ id: string; instanceId: string }> {
    const existing = await this.record(instanceId, scheduleId);
    if (!(await this.begin(existing))) {
      throw new AppError('INSTANCE_BUSY', `schedule ${existing.name} is already running; try again when its run finishes`, {
        details: { scheduleId: existing.id },
      });
    }
    return { id: existing.id, instanceId: existing.instanceId };
  }

  /** One pass (leader only): starts every due schedule's chain; returns the ids started. */
  async tick(): Promise<string[]> {
    if (this.deps.isActive && !this.deps.isActive()) return [];
    const started: string[] = [];
    for (const due of await this.deps.store.schedules.listDue(this.deps.clock.now(), DUE_BATCH)) {
      try {
        if (await this.begin(due, nextScheduleRun(due.cron, due.enabled, this.deps.clock.now()))) started.push(due.id);
      } catch (err) {
        this.deps.logger.warn({ scheduleId: due.id, err: (err as Error).message }, 'schedule not started');
      }
    }
    return started;
  }

  private async record(instanceId: string, scheduleId: string): Promise<ScheduleRecord> {
    const instance = await this.deps.lifecycle.find(instanceId);
    const record = await this.deps.store.schedules.get(scheduleId);
    if (!record || record.instanceId !== instance.id)
      throw new AppError('NOT_FOUND', `schedule ${scheduleId} of instance ${instance.name} does not exist`);
    return record;
  }

  /** Takes the run claim (false: a run holds it) and starts the chain in the background. */
  private async begin(schedule: ScheduleRecord, nextRunAt?: number | null): Promise<boolean> {
    const now = this.deps.clock.now();
    if (this.runs.has(schedule.id)) return false;
    const claimed = await this.deps.store.schedules.claimRun(schedule.id, {
      now,
      staleBefore: now - STALE_CLAIM_MS,
      ...(nextRunAt !== undefined ? { nextRunAt } : {}),
    });
    if (!claimed) return false;
    const run = this.execute(schedule).finally(() => this.runs.delete(schedule.id));
    this.runs.set(schedule.id, run);
    return true;
  }

  private async execute(schedule: ScheduleRecord): Promise<void> {
    const log = this.deps.logger.child({ scheduleId: schedule.id, instanceId: schedule.instanceId });
    let outcome: { result: 'ok' | 'failed' | 'skipped'; error: string | null };
    try {
      const instance = await this.deps.lifecycle.find(schedule.instanceId);
      if (schedule.onlyWhenOnline && instance.state !== 'online') {
        outcome = { result: 'skipped', error: `instance ${instance.name} is ${instance.state}, not online` };
      } else {
        const actor: Actor = { kind: 'system', name: `schedule ${schedule.name}`, scopes: [] };
        const wait = this.deps.wait ?? ((ms: number) => sleep(ms, this.deps.timers));
        const runId = `${schedule.id}-${this.deps.clock.now()}`;
        outcome = await runTaskChain(schedule.tasks, (task, index) => this.runTask(instance.id, task, actor, `${runId}-${index}`), wait);
      }
    } catch (err) {
      outcome = { result: 'failed', error: (err as Error).message };
    }
    await this.deps.store.schedules
      .finishRun(schedule.id, { at: this.deps.clock.now(), ...outcome })
      .catch((err: unknown) => log.warn({ err: (err as Error).message }, 'could not record the schedule run'));
    log.info({ result: outcome.result, error: outcome.error }, `schedule ${schedule.name} ran: ${outcome.result}`);
  }

  /** One task through the path its route uses; a refusal (busy, wrong state, no console) throws. */
  private async runTask(instanceId: string, task: ScheduleTask, actor: Actor, requestId: string): Promise<void> {
    const instance: Instance = await this.deps.lifecycle.find(instanceId);
    switch (task.action) {
      case 'command':
        await sendConsoleCommand(this.console, instance, task.payload, { requestId });
        return;
      case 'power': {
        const action = task.payload as SchedulePowerAction;
        if (action === 'kill') {
          const kill = {
            host: (id: string) => this.deps.store.hosts.get(id),
            driver: this.deps.driver,
            lifecycle: this.deps.lifecycle,
            logger: this.deps.logger,
          };
          await killInstance(kill, instance.id, actor, { requestId });
        } else await this.deps.lifecycle.request(instance.id, action, actor, { requestId });
        return;
      }
      case 'backup':
        await this.deps.lifecycle.request(instance.id, 'backup', actor, {
          requestId,
          payload: { previousState: instance.state, trigger: SCHEDULE_TASK_TRIGGER, ...(task.payload ? { reason: task.payload } : {}) },
        });
        return;
    }
  }
}
