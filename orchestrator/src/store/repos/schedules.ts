// Instance schedules and their run claim (see ScheduleRepository).

import type { Selectable } from 'kysely';
import { AppError } from '../../shared/errors.js';
import { affected, isUniqueViolation, type StoreContext } from '../context.js';
import { fromJson, toJson } from '../json.js';
import type { SchedulesTable } from '../schema.js';
import type { ScheduleDefinition, ScheduleRecord, ScheduleRepository } from '../store.js';

const num = (v: number | null): number | null => (v === null ? null : Number(v));

function toRecord(r: Selectable<SchedulesTable>): ScheduleRecord {
  return {
    id: r.id,
    instanceId: r.instance_id,
    name: r.name,
    cron: r.cron,
    enabled: Number(r.enabled) === 1,
    onlyWhenOnline: Number(r.only_when_online) === 1,
    tasks: fromJson(r.tasks),
    nextRunAt: num(r.next_run_at),
    lastRunAt: num(r.last_run_at),
    lastResult: r.last_result as ScheduleRecord['lastResult'],
    lastError: r.last_error,
    runningSince: num(r.running_since),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

function definitionColumns(d: ScheduleDefinition) {
  return {
    name: d.name,
    cron: d.cron,
    enabled: d.enabled ? 1 : 0,
    only_when_online: d.onlyWhenOnline ? 1 : 0,
    tasks: toJson(d.tasks),
    next_run_at: d.nextRunAt,
  };
}

export class KyselyScheduleRepository implements ScheduleRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(s: Parameters<ScheduleRepository['create']>[0]): Promise<ScheduleRecord> {
    try {
      const row = await this.ctx.db
        .insertInto('schedules')
        .values({
          id: s.id,
          instance_id: s.instanceId,
          ...definitionColumns(s),
          last_run_at: null,
          last_result: null,
          last_error: null,
          running_since: null,
          created_at: s.createdAt,
          updated_at: s.createdAt,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toRecord(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('CONFLICT', `schedule ${s.id} already exists`);
      throw err;
    }
  }

  async get(id: string): Promise<ScheduleRecord | undefined> {
    const row = await this.ctx.db.selectFrom('schedules').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  async listForInstance(instanceId: string): Promise<ScheduleRecord[]> {
    const rows = await this.ctx.db
      .selectFrom('schedules')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toRecord);
  }

  async listDue(now: number, limit: number): Promise<ScheduleRecord[]> {
    const rows = await this.ctx.db
      .selectFrom('schedules')
      .selectAll()
      .where('enabled', '=', 1)
      .where('next_run_at', '<=', now)
      .orderBy('next_run_at')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map(toRecord);
  }

  async update(id: string, definition: ScheduleDefinition, now: number): Promise<ScheduleRecord> {
    const row = await this.ctx.db
      .updateTable('schedules')
      .set({ ...definitionColumns(definition), updated_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw new AppError('NOT_FOUND', `schedule ${id} does not exist`);
    return toRecord(row);
  }

  async delete(id: string): Promise<boolean> {
    return affected(await this.ctx.db.deleteFrom('schedules').where('id', '=', id).executeTakeFirst()) > 0;
  }

  async deleteForInstance(instanceId: string): Promise<number> {
    return affected(await this.ctx.db.deleteFrom('schedules').where('instance_id', '=', instanceId).executeTakeFirst());
  }

  async claimRun(id: string, opts: { now: number; staleBefore: number; nextRunAt?: number | null }): Promise<boolean> {
    const result = await this.ctx.db
      .updateTable('schedules')
      .set({ running_since: opts.now, ...(opts.nextRunAt !== undefined ? { next_run_at: opts.nextRunAt } : {}) })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('running_since', 'is', null), eb('running_since', '<', opts.staleBefore)]))
      .executeTakeFirst();
    return affected(result) > 0;
  }

  async finishRun(id: string, outcome: { at: number; result: 'ok' | 'failed' | 'skipped'; error: string | null }): Promise<void> {
    await this.ctx.db
      .updateTable('schedules')
      .set({ running_since: null, last_run_at: outcome.at, last_result: outcome.result, last_error: outcome.error })
      .where('id', '=', id)
      .execute();
  }
}
