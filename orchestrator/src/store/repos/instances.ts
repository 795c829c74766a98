// Instances with an optimistic version column; state transitions write the
// history entry in the same transaction.

import { sql, type Selectable } from 'kysely';
import type { Instance, InstanceState, JsonObject } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { isUniqueViolation, type StoreContext } from '../context.js';
import { toJson } from '../json.js';
import type { InstancesTable } from '../schema.js';
import type { InstanceFilter, InstancePatch, InstanceRepository } from '../store.js';
import { appendHistory } from './history.js';
import { toInstance, toRow, toRowPatch } from './instance-rows.js';

/** Second key of the advisory lock that serializes cap checks (PostgreSQL). */
const PLACEMENT_LOCK = 1;

/** Fields no patch may touch (the container user protects file ownership). */
const IMMUTABLE_FIELDS = ['id', 'createdAt', 'version', 'user', 'updatedAt'] as const;

function cleanPatch(patch: InstancePatch): InstancePatch {
  const copy: Record<string, unknown> = { ...patch };
  for (const field of IMMUTABLE_FIELDS) {
    if (field in copy) {
      if (field === 'user') throw new AppError('IMMUTABLE', 'the container user is chosen at creation and can never be edited');
      delete copy[field];
    }
  }
  return copy as InstancePatch;
}

export class KyselyInstanceRepository implements InstanceRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(instance: Omit<Instance, 'version'>): Promise<Instance> {
    try {
      const row = await this.ctx.db.insertInto('instances').values(toRow({ ...instance, version: 1 })).returningAll().executeTakeFirstOrThrow();
      return toInstance(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('CONFLICT', `an instance with id ${instance.id} or name ${instance.name} already exists`);
      throw err;
    }
  }

  async get(id: string): Promise<Instance | undefined> {
    const row = await this.ctx.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toInstance(row);
  }

  async getByName(name: string): Promise<Instance | undefined> {
    const row = await this.ctx.db.selectFrom('instances').selectAll().where('name', '=', name).executeTakeFirst();
    return row && toInstance(row);
  }

  async list(filter: InstanceFilter = {}): Promise<Instance[]> {
    if (filter.states?.length === 0 || filter.desiredStates?.length === 0 || filter.hostIds?.length === 0) return [];
    const rows = await this.ctx.db
      .selectFrom('instances')
      .selectAll()
      .$if(filter.groupId !== undefined, (q) => q.where('group_id', '=', filter.groupId!))
      .$if(filter.variantId !== undefined, (q) => q.where('variant_id', '=', filter.variantId!))
      .$if(filter.hostId !== undefined, (q) => q.where('host_id', '=', filter.hostId!))
      .$if(filter.hostIds !== undefined, (q) => q.where('host_id', 'in', filter.hostIds!))
      .$if(filter.sessionId !== undefined, (q) => q.where('session_id', '=', filter.sessionId!))
      .$if(filter.states !== undefined, (q) => q.where('state', 'in', filter.states!))
      .$if(filter.desiredStates !== undefined, (q) => q.where('desired_state', 'in', filter.desiredStates!))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toInstance);
  }

  async update(id: string, patch: InstancePatch, opts: { now: number; expectedVersion?: number }): Promise<Instance> {
    const values = toRowPatch({ ...cleanPatch(patch), updatedAt: opts.now });
    let row;
    try {
      row = await this.ctx.db
        .updateTable('instances')
        .set(values)
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', '=', id)
        .$if(opts.expectedVersion !== undefined, (q) => q.where('version', '=', opts.expectedVersion!))
        .returningAll()
        .executeTakeFirst();
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('CONFLICT', `another instance already uses name ${String(patch.name)}`);
      throw err;
    }
    if (row) return toInstance(row);
    const current = await this.get(id);
    if (!current) throw new AppError('INSTANCE_NOT_FOUND', `instance ${id} does not exist`);
    throw new AppError('CONFLICT', `instance ${id} changed concurrently (version ${current.version}, expected ${opts.expectedVersion}); reload and retry`);
  }

  async claimForSession(id: string, sessionId: string, opts: { now: number; expectedVersion: number; session?: { groupId: string | null; metadata: JsonObject } }): Promise<Instance | undefined> {
    const session = opts.session;
    if (session && this.ctx.dialect === 'postgres') {
      // One statement: the claim (a row another allocator holds is skipped, not waited for) and, only if it
      // claimed, the session row. Data-modifying CTEs run exactly once, atomically with the statement.
      const { rows } = await sql<Selectable<InstancesTable>>`
        with claimed as (
          update instances set session_id = ${sessionId}, updated_at = ${opts.now}, version = version + 1
          where id = ${id} and version = ${opts.expectedVersion} and session_id is null
            and id in (select id from instances where id = ${id} for update skip locked)
          returning *
        ), recorded as (
          insert into sessions (id, group_id, instance_id, status, metadata, created_at, released_at)
          select ${sessionId}, ${session.groupId}, claimed.id, 'allocated', ${toJson(session.metadata)}, ${opts.now}, null from claimed
          returning id
        )
        select claimed.* from claimed`.execute(this.ctx.db);
      return rows[0] && toInstance(rows[0]);
    }
    if (session) {
      // SQLite: one writer at a time; the two statements commit together.
      return this.ctx.atomic(async (db) => {
        const claimed = await new KyselyInstanceRepository({ ...this.ctx, db, inTransaction: true }).claimForSession(id, sessionId, { now: opts.now, expectedVersion: opts.expectedVersion });
        if (!claimed) return undefined;
        await db.insertInto('sessions').values({
          id: sessionId, group_id: session.groupId, instance_id: id, status: 'allocated', metadata: toJson(session.metadata), created_at: opts.now, released_at: null,
        }).execute();
        return claimed;
      });
    }
    const row = await this.ctx.db
      .updateTable('instances')
      .set({ session_id: sessionId, updated_at: opts.now })
      .set((eb) => ({ version: eb('version', '+', 1) }))
      .where('id', '=', id)
      .where('version', '=', opts.expectedVersion)
      .where('session_id', 'is', null)
      // PostgreSQL: a row another allocator's transaction holds is skipped, not waited for. SQLite transactions are serial.
      .$if(this.ctx.dialect === 'postgres', (q) => q.where('id', 'in', (eb) => eb.selectFrom('instances').select('id').where('id', '=', id).forUpdate().skipLocked()))
      .returningAll()
      .executeTakeFirst();
    return row && toInstance(row);
  }

  transition(
    id: string,
    to: InstanceState,
    opts: {
      now: number; reason: string; from?: InstanceState[]; actor?: string | null; commandId?: string | null;
      details?: JsonObject | null; patch?: InstancePatch;
    },
  ): Promise<Instance | undefined> {
    return this.ctx.atomic(async (db) => {
      const current = await db.selectFrom('instances').select(['state', 'version']).where('id', '=', id)
        .$if(this.ctx.dialect === 'postgres', (q) => q.forUpdate()).executeTakeFirst();
      if (!current) throw new AppError('INSTANCE_NOT_FOUND', `instance ${id} does not exist`);
      const from = current.state as InstanceState;
      if (opts.from && !opts.from.includes(from)) return undefined;
      const patch: InstancePatch = { ...cleanPatch(opts.patch ?? {}), state: to, stateReason: opts.reason, stateChangedAt: opts.now };
      const row = await db
        .updateTable('instances')
        .set(toRowPatch({ ...patch, updatedAt: opts.now }))
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await appendHistory(db, {
        instanceId: id, at: opts.now, from, to, reason: opts.reason,
        actor: opts.actor ?? null, commandId: opts.commandId ?? null, details: opts.details ?? null,
      });
      return toInstance(row);
    });
  }

  async delete(id: string): Promise<void> {
    await this.ctx.db.deleteFrom('instances').where('id', '=', id).execute();
  }

  async countByState(): Promise<Partial<Record<InstanceState, number>>> {
    const rows = await this.ctx.db.selectFrom('instances').select(['state', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('state').execute();
    return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
  }

  async lastChangeByHost(): Promise<Record<string, number>> {
    const rows = await this.ctx.db
      .selectFrom('instances')
      .select(['host_id', (eb) => eb.fn.max('updated_at').as('at')])
      .where('host_id', 'is not', null)
      .groupBy('host_id')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.host_id as string, Number(r.at)]));
  }

  async countByHost(): Promise<Record<string, number>> {
    const rows = await this.ctx.db
      .selectFrom('instances')
      .select(['host_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('host_id', 'is not', null)
      .groupBy('host_id')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.host_id as string, Number(r.n)]));
  }

  async countByGroup(groupId: string): Promise<number> {
    const row = await this.ctx.db.selectFrom('instances').select((eb) => eb.fn.countAll<number>().as('n')).where('group_id', '=', groupId).executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async countForCaps(groupId: string): Promise<{ group: number; total: number }> {
    if (!this.ctx.inTransaction) throw new AppError('INTERNAL', 'countForCaps must run inside a store transaction (its lock ends with it)');
    if (this.ctx.dialect === 'postgres') {
      // Keyed by this schema's instances table, so stores in other schemas of the same database do not contend.
      await sql`select pg_advisory_xact_lock(cast('instances'::regclass as oid)::int, ${PLACEMENT_LOCK})`.execute(this.ctx.db);
    }
    const row = await this.ctx.db
      .selectFrom('instances')
      .select((eb) => [
        eb.fn.countAll<number>().as('total'),
        eb.fn.sum<number>(eb.case().when('group_id', '=', groupId).then(1).else(0).end()).as('grp'),
      ])
      .executeTakeFirst();
    return { group: Number(row?.grp ?? 0), total: Number(row?.total ?? 0) };
  }
}
