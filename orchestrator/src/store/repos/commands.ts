// Durable commands: created pending before dispatch, claimed atomically by one
// dispatcher at a time (per instance in creation order), retried or failed.

import { sql, type Selectable } from 'kysely';
import type { Command, CommandStatus, JsonObject } from '../../domain/index.js';
import { COMMAND_STATUSES } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { affected, boundedLimit, isUniqueViolation, type StoreContext } from '../context.js';
import { fromJson, fromJsonOrNull, toJson, toJsonOrNull } from '../json.js';
import type { CommandsTable } from '../schema.js';
import type { CommandRepository, NewCommand } from '../store.js';

const DEFAULT_MAX_ATTEMPTS = 10;

function toCommand(r: Selectable<CommandsTable>): Command {
  return {
    id: r.id,
    instanceId: r.instance_id,
    hostId: r.host_id,
    kind: r.kind,
    payload: fromJson(r.payload),
    status: r.status as CommandStatus,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    nextAttemptAt: Number(r.next_attempt_at),
    lastError: r.last_error,
    result: fromJsonOrNull(r.result),
    requestId: r.request_id,
    claimedBy: r.claimed_by,
    leaseUntil: r.lease_until === null ? null : Number(r.lease_until),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    completedAt: r.completed_at === null ? null : Number(r.completed_at),
  };
}

export class KyselyCommandRepository implements CommandRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(cmd: NewCommand, now: number): Promise<Command> {
    try {
      const row = await this.ctx.db
        .insertInto('commands')
        .values({
          id: cmd.id,
          instance_id: cmd.instanceId ?? null,
          host_id: cmd.hostId ?? null,
          kind: cmd.kind,
          payload: toJson(cmd.payload),
          status: 'pending',
          attempts: 0,
          max_attempts: cmd.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
          next_attempt_at: cmd.nextAttemptAt ?? now,
          request_id: cmd.requestId,
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toCommand(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('CONFLICT', `command ${cmd.id} already exists`);
      throw err;
    }
  }

  async get(id: string): Promise<Command | undefined> {
    const row = await this.ctx.db.selectFrom('commands').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toCommand(row);
  }

  async list(filter: { instanceId?: string; hostId?: string; statuses?: CommandStatus[]; limit?: number } = {}): Promise<Command[]> {
    if (filter.statuses?.length === 0) return [];
    const rows = await this.ctx.db
      .selectFrom('commands')
      .selectAll()
      .$if(filter.instanceId !== undefined, (q) => q.where('instance_id', '=', filter.instanceId!))
      .$if(filter.hostId !== undefined, (q) => q.where('host_id', '=', filter.hostId!))
      .$if(filter.statuses !== undefined, (q) => q.where('status', 'in', filter.statuses!))
      .orderBy('seq', 'desc')
      .limit(boundedLimit(filter.limit, 100))
      .execute();
    return rows.map(toCommand);
  }

  async claimDue(now: number, limit: number, opts: { claimer: string; leaseMs: number }): Promise<Command[]> {
    const n = boundedLimit(limit, 10);
    const db = this.ctx.db;
    // The subquery picks due commands whose instance has no older unfinished
    // command. PostgreSQL: FOR UPDATE SKIP LOCKED lets parallel claimers take
    // disjoint rows, and the row re-check after a lock wait drops rows another
    // claimer already moved to dispatched. SQLite: one writer at a time.
    const due = db
      .selectFrom('commands as c')
      .select('c.seq')
      .where((eb) =>
        eb.or([
          eb.and([eb('c.status', '=', 'pending'), eb('c.next_attempt_at', '<=', now)]),
          eb.and([eb('c.status', '=', 'dispatched'), eb('c.lease_until', '<=', now)]),
        ]),
      )
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('commands as e')
              .select(sql.lit(1).as('one'))
              .whereRef('e.instance_id', '=', 'c.instance_id')
              .whereRef('e.seq', '<', 'c.seq')
              .where('e.status', 'in', ['pending', 'dispatched']),
          ),
        ),
      )
      .orderBy('c.seq')
      .limit(n)
      .$if(this.ctx.dialect === 'postgres', (q) => q.forUpdate().skipLocked());
    const rows = await db
      .updateTable('commands')
      .set((eb) => ({
        status: 'dispatched',
        attempts: eb('attempts', '+', 1),
        claimed_by: opts.claimer,
        lease_until: now + opts.leaseMs,
        updated_at: now,
      }))
      .where('seq', 'in', due)
      .returningAll()
      .execute();
    return rows.sort((a, b) => Number(a.seq) - Number(b.seq)).map(toCommand);
  }

  async renewLease(id: string, claimer: string, leaseUntil: number): Promise<boolean> {
    const result = await this.ctx.db
      .updateTable('commands')
      .set({ lease_until: leaseUntil })
      .where('id', '=', id)
      .where('status', '=', 'dispatched')
      .where('claimed_by', '=', claimer)
      .executeTakeFirst();
    return affected(result) === 1;
  }

  async succeed(id: string, result: JsonObject | null, opts: { now: number; claimer?: string }): Promise<boolean> {
    const res = await this.ctx.db
      .updateTable('commands')
      .set({ status: 'succeeded', result: toJsonOrNull(result), completed_at: opts.now, updated_at: opts.now, lease_until: null })
      .where('id', '=', id)
      .where('status', 'in', ['pending', 'dispatched'])
      .$if(opts.claimer !== undefined, (q) => q.where('claimed_by', '=', opts.claimer!))
      .executeTakeFirst();
    if (affected(res) === 1) return true;
    if (!(await this.get(id))) throw new AppError('COMMAND_NOT_FOUND', `command ${id} does not exist`);
    return false;
  }

  async fail(id: string, error: string, opts: { now: number; retryAt?: number; claimer?: string }): Promise<Command> {
    const retry = opts.retryAt !== undefined;
    // One statement: retry only while attempts remain, else fail for good.
    const canRetry = sql<boolean>`(${sql.lit(retry ? 1 : 0)} = 1 and attempts < max_attempts)`;
    const row = await this.ctx.db
      .updateTable('commands')
      .set({
        status: sql<string>`case when ${canRetry} then 'pending' else 'failed' end`,
        next_attempt_at: sql<number>`case when ${canRetry} then cast(${opts.retryAt ?? 0} as bigint) else next_attempt_at end`,
        completed_at: sql<number | null>`case when ${canRetry} then null else cast(${opts.now} as bigint) end`,
        last_error: error,
        lease_until: null,
        updated_at: opts.now,
      })
      .where('id', '=', id)
      .where('status', 'in', ['pending', 'dispatched'])
      .$if(opts.claimer !== undefined, (q) => q.where('claimed_by', '=', opts.claimer!))
      .returningAll()
      .executeTakeFirst();
    if (row) return toCommand(row);
    const current = await this.get(id);
    if (!current) throw new AppError('COMMAND_NOT_FOUND', `command ${id} does not exist`);
    throw new AppError(
      'CONFLICT',
      `command ${id} is ${current.status}${current.claimedBy ? ` (claimed by ${current.claimedBy})` : ''}; cannot record a failure`,
    );
  }

  async unfinishedForInstance(instanceId: string): Promise<Command[]> {
    const rows = await this.ctx.db
      .selectFrom('commands')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('status', 'in', ['pending', 'dispatched'])
      .orderBy('seq')
      .execute();
    return rows.map(toCommand);
  }

  async releaseClaimsOf(nodeId: string, exceptIncarnation: string, now: number): Promise<number> {
    const prefix = `${nodeId}:`;
    // substr, not LIKE: a node id's characters are never wildcards.
    const result = await this.ctx.db
      .updateTable('commands')
      .set({ lease_until: now, updated_at: now })
      .where('status', '=', 'dispatched')
      .where(sql<boolean>`substr(claimed_by, 1, ${prefix.length}) = ${prefix}`)
      .where('claimed_by', '<>', `${prefix}${exceptIncarnation}`)
      .executeTakeFirst();
    return affected(result);
  }

  async countByStatus(): Promise<Record<CommandStatus, number>> {
    const rows = await this.ctx.db
      .selectFrom('commands')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    const out = Object.fromEntries(COMMAND_STATUSES.map((s) => [s, 0])) as Record<CommandStatus, number>;
    for (const r of rows) out[r.status as CommandStatus] = Number(r.n);
    return out;
  }
}
