// Instances with an optimistic version column; state transitions write the
// history entry in the same transaction.

import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { AuditEvent, Instance, InstanceState, JsonObject, Session } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { isUniqueViolation, PREPARED, type StoreContext } from '../context.js';
import { toJson } from '../json.js';
import type { InstancesTable, SessionsTable } from '../schema.js';
import type {
  AllocationRow,
  ClaimCandidate,
  ClaimedInstance,
  InstanceFilter,
  InstancePatch,
  InstanceRepository,
  ReleasedSession,
} from '../store.js';
import { appendHistory } from './history.js';
import { instanceFields, requireSecretCodec, toInstance, toRow, toRowPatch } from './instance-rows.js';
import { toSession } from './sessions.js';
import { auditRow } from './auth.js';

/** What a claim answers (ClaimedInstance), and its column list (by name: a prepared statement's result type must not change when a migration adds a column). */
const CLAIMED = instanceFields(['id', 'groupId', 'hostId', 'sessionId', 'endpoint', 'version', 'updatedAt']);
const CLAIMED_LIST = sql.raw(CLAIMED.columns.join(', '));

/** An action's audit entry, its params with the instance the action touched. */
function withInstance(entry: Omit<AuditEvent, 'id'>, instanceId: string): Omit<AuditEvent, 'id'> {
  return { ...entry, params: { ...entry.params, instanceId } };
}

/**
 * PostgreSQL: the INSERT of an audit entry into a data-modifying CTE, one row
 * per row of `from` (none when the action changed nothing), its params with
 * `instanceId` taken from `instanceId`.
 */
function auditedInsert(entry: Omit<AuditEvent, 'id'>, instanceId: RawBuilder<unknown>, from: RawBuilder<unknown>): RawBuilder<unknown> {
  const row = auditRow(entry);
  return sql`insert into audit_events (at, actor, action, target_kind, target_id, params, result, error_code, request_id)
    select ${row.at}::bigint, ${row.actor}::text, ${row.action}::text, ${row.target_kind}::text, ${row.target_id ?? null}::text,
      (${row.params}::jsonb || jsonb_build_object('instanceId', ${instanceId}))::text, ${row.result}::text, ${row.error_code ?? null}::text, ${row.request_id ?? null}::text
    from ${from} returning id`;
}

/** A release's answer: the session, and the freed instance's new version when one held it. */
function released(session: Session, freedVersion: number | string | null): ReleasedSession {
  return freedVersion === null ? { session, instanceFreed: false } : { session, instanceFreed: true, freedVersion: Number(freedVersion) };
}

/** Second key of the advisory lock that serializes cap checks (PostgreSQL). */
const PLACEMENT_LOCK = 1;

/** Fields no patch may touch (the container user protects file ownership). */
const IMMUTABLE_FIELDS = ['id', 'createdAt', 'version', 'user', 'updatedAt'] as const;

function cleanPatch(patch: InstancePatch): InstancePatch {
  const copy: Record<string, unknown> = { ...patch };
  // Only a transition writes the state (with its history entry).
  if ('state' in copy)
    throw new AppError(
      'INTERNAL',
      'an instance patch may not set state: change it with a transition (moveInstance), which checks it against the table and records the history',
    );
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
      const row = await this.ctx.db
        .insertInto('instances')
        .values(toRow({ ...instance, version: 1 }, this.ctx.secrets))
        .returningAll()
        .executeTakeFirstOrThrow();
      return toInstance(row, this.ctx.secrets);
    } catch (err) {
      if (isUniqueViolation(err))
        throw new AppError('CONFLICT', `an instance with id ${instance.id} or name ${instance.name} already exists`);
      throw err;
    }
  }

  async get(id: string): Promise<Instance | undefined> {
    const row = await this.ctx.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toInstance(row, this.ctx.secrets);
  }

  async getByName(name: string): Promise<Instance | undefined> {
    const row = await this.ctx.db.selectFrom('instances').selectAll().where('name', '=', name).executeTakeFirst();
    return row && toInstance(row, this.ctx.secrets);
  }

  async list(filter: InstanceFilter = {}): Promise<Instance[]> {
    if (filter.ids?.length === 0 || filter.states?.length === 0 || filter.desiredStates?.length === 0 || filter.hostIds?.length === 0)
      return [];
    const rows = await this.ctx.db
      .selectFrom('instances')
      .selectAll()
      .$if(filter.ids !== undefined, (q) => q.where('id', 'in', filter.ids!))
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
    return rows.map((row) => toInstance(row, this.ctx.secrets));
  }

  async update(id: string, patch: InstancePatch, opts: { now: number; expectedVersion?: number }): Promise<Instance> {
    requireSecretCodec(id, this.ctx.secrets);
    const values = toRowPatch({ ...cleanPatch(patch), updatedAt: opts.now }, id, this.ctx.secrets);
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
    if (row) return toInstance(row, this.ctx.secrets);
    const current = await this.get(id);
    if (!current) throw new AppError('INSTANCE_NOT_FOUND', `instance ${id} does not exist`);
    throw new AppError(
      'CONFLICT',
      `instance ${id} changed concurrently (version ${current.version}, expected ${opts.expectedVersion}); reload and retry`,
    );
  }

  async claimForSession(
    candidates: readonly ClaimCandidate[],
    sessionId: string,
    opts: { now: number; session?: { groupId: string | null; metadata: JsonObject }; audit?: Omit<AuditEvent, 'id'> },
  ): Promise<ClaimedInstance | undefined> {
    if (candidates.length === 0) return undefined;
    const session = opts.session;
    if (this.ctx.dialect === 'postgres') {
      // One statement: lock the first candidate (in the caller's order) that is still at its version and
      // unallocated, skipping rows other allocators hold instead of waiting for them; claim it and, only
      // if it claimed, record the session row. Data-modifying CTEs run exactly once, atomically.
      // The candidates go as two array parameters (unnest, ranked by their order): one statement text, so one
      // prepared statement, whatever their number, and two values to bind instead of three per candidate.
      const ids = candidates.map((c) => c.id);
      const versions = candidates.map((c) => c.expectedVersion);
      const recorded = session
        ? sql`, recorded as (
          insert into sessions (id, group_id, instance_id, status, metadata, created_at, released_at)
          select ${sessionId}, ${session.groupId}, claimed.id, 'allocated', ${toJson(session.metadata)}, ${opts.now}, null from claimed
          returning id
        )`
        : sql``;
      const audited = opts.audit ? sql`, audited as (${auditedInsert(opts.audit, sql`claimed.id`, sql`claimed`)})` : sql``;
      const { rows } = await sql<Selectable<InstancesTable>>`${sql.raw(PREPARED)}
        with wanted (id, version, rank) as (select * from unnest(${ids}::text[], ${versions}::bigint[]) with ordinality),
        pick as (
          select i.id from instances i join wanted w on w.id = i.id and w.version = i.version
          where i.session_id is null order by w.rank limit 1 for update of i skip locked
        ), claimed as (
          update instances set session_id = ${sessionId}, updated_at = ${opts.now}, version = version + 1
          where id in (select id from pick) and session_id is null
          returning ${CLAIMED_LIST}
        )${recorded}${audited}
        select ${CLAIMED_LIST} from claimed`.execute(this.ctx.db);
      return rows[0] && CLAIMED.decode(rows[0]);
    }
    // SQLite: one writer at a time; the first candidate still at its version and unallocated is claimed,
    // and the session row commits with it.
    return this.ctx.atomic(async (db) => {
      for (const c of candidates) {
        const row = await db
          .updateTable('instances')
          .set({ session_id: sessionId, updated_at: opts.now })
          .set((eb) => ({ version: eb('version', '+', 1) }))
          .where('id', '=', c.id)
          .where('version', '=', c.expectedVersion)
          .where('session_id', 'is', null)
          .returningAll()
          .executeTakeFirst();
        if (!row) continue;
        if (session) {
          await db
            .insertInto('sessions')
            .values({
              id: sessionId,
              group_id: session.groupId,
              instance_id: c.id,
              status: 'allocated',
              metadata: toJson(session.metadata),
              created_at: opts.now,
              released_at: null,
            })
            .execute();
        }
        if (opts.audit)
          await db
            .insertInto('audit_events')
            .values(auditRow(withInstance(opts.audit, c.id)))
            .execute();
        return CLAIMED.decode(row);
      }
      return undefined;
    });
  }

  async releaseSession(
    sessionId: string,
    now: number,
    opts: { groupIds?: readonly string[]; audit?: Omit<AuditEvent, 'id'> } = {},
  ): Promise<ReleasedSession | undefined> {
    const groupIds = opts.groupIds;
    if (groupIds?.length === 0) return undefined;
    if (this.ctx.dialect === 'postgres') {
      const inGroups = groupIds ? sql` and group_id in (${sql.join(groupIds)})` : sql``;
      // On its own (not inside a caller's transaction), the release does not wait for its WAL flush:
      // a database crash right after it can only undo it, leaving the instance allocated (never
      // allocated twice) until released again or by releaseWhenEmptyFor. The claim stays synchronous.
      const [lazy, lazyColumn] = this.ctx.inTransaction
        ? [sql``, sql``]
        : [sql`lazy as (select set_config('synchronous_commit', 'off', true) as v), `, sql`, (select v from lazy) as lazy`];
      const { rows } = await sql<Selectable<SessionsTable> & { freed_version: number | string | null }>`${sql.raw(PREPARED)}
        with ${lazy}rel as (
          update sessions set status = 'released', released_at = ${now} where id = ${sessionId} and status = 'allocated'${inGroups}
          returning id, group_id, instance_id, status, metadata, created_at, released_at
        ), freed as (
          update instances set session_id = null, updated_at = ${now}, version = version + 1
          where session_id = ${sessionId} and id in (select instance_id from rel) returning version
        )${opts.audit ? sql`, audited as (${auditedInsert(opts.audit, sql`rel.instance_id`, sql`rel`)})` : sql``}
        select id, group_id, instance_id, status, metadata, created_at, released_at, (select version from freed) as freed_version${lazyColumn} from rel`.execute(
        this.ctx.db,
      );
      const row = rows[0];
      return row && released(toSession(row), row.freed_version);
    }
    return this.ctx.atomic(async (db) => {
      const row = await db
        .updateTable('sessions')
        .set({ status: 'released', released_at: now })
        .where('id', '=', sessionId)
        .where('status', '=', 'allocated')
        .$if(groupIds !== undefined, (q) => q.where('group_id', 'in', groupIds!))
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      const freed = await db
        .updateTable('instances')
        .set({ session_id: null, updated_at: now })
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', '=', row.instance_id)
        .where('session_id', '=', sessionId)
        .returning('version')
        .executeTakeFirst();
      if (opts.audit)
        await db
          .insertInto('audit_events')
          .values(auditRow(withInstance(opts.audit, row.instance_id)))
          .execute();
      return released(toSession(row), freed?.version ?? null);
    });
  }

  async allocationRows(groupId: string): Promise<AllocationRow[]> {
    const pg = this.ctx.dialect === 'postgres';
    // The JSON documents are text in both dialects; only the two members an allocation needs are extracted.
    const labels = pg
      ? sql<string | null>`(container_config::json -> 'labels')::text`
      : sql<string | null>`json_extract(container_config, '$.labels')`;
    // Draining: being drained, or a despawn/delete accepted and not yet begun (a leader change can hold one back;
    // an allocation must not take a world that is about to go).
    const draining = pg
      ? sql<number>`case when fleet::json -> 'draining' is not null or active_action::json ->> 'kind' in ('despawn', 'delete') then 1 else 0 end`
      : sql<number>`(json_type(fleet, '$.draining') is not null or coalesce(json_extract(active_action, '$.kind') in ('despawn', 'delete'), 0))`;
    const { rows } = await sql<{
      id: string;
      host_id: string | null;
      variant_id: string;
      state: string;
      allocated: number | boolean;
      draining: number | boolean;
      labels: string | null;
      version: number;
    }>`${sql.raw(PREPARED)}
      select id, host_id, variant_id, state, case when session_id is null then 0 else 1 end as allocated, ${draining} as draining, ${labels} as labels, version
      from instances where group_id = ${groupId} order by created_at, id`.execute(this.ctx.db);
    return rows.map((r) => ({
      id: r.id,
      hostId: r.host_id,
      variantId: r.variant_id,
      state: r.state as InstanceState,
      allocated: Number(r.allocated) === 1,
      draining: Number(r.draining) === 1,
      labels: r.labels === null ? undefined : (JSON.parse(r.labels) as Record<string, string>),
      version: Number(r.version),
    }));
  }

  async transition(
    id: string,
    to: InstanceState,
    opts: {
      now: number;
      reason: string;
      from?: InstanceState[];
      actor?: string | null;
      commandId?: string | null;
      details?: JsonObject | null;
      patch?: InstancePatch;
    },
  ): Promise<Instance | undefined> {
    requireSecretCodec(id, this.ctx.secrets);
    return this.ctx.atomic(async (db) => {
      const current = await db
        .selectFrom('instances')
        .select(['state', 'version'])
        .where('id', '=', id)
        .$if(this.ctx.dialect === 'postgres', (q) => q.forUpdate())
        .executeTakeFirst();
      if (!current) throw new AppError('INSTANCE_NOT_FOUND', `instance ${id} does not exist`);
      const from = current.state as InstanceState;
      if (opts.from && !opts.from.includes(from)) return undefined;
      const patch: InstancePatch & Pick<Instance, 'state'> = {
        ...cleanPatch(opts.patch ?? {}),
        state: to,
        stateReason: opts.reason,
        stateChangedAt: opts.now,
      };
      const row = await db
        .updateTable('instances')
        .set(toRowPatch({ ...patch, updatedAt: opts.now }, id, this.ctx.secrets))
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await appendHistory(db, {
        instanceId: id,
        at: opts.now,
        from,
        to,
        reason: opts.reason,
        actor: opts.actor ?? null,
        commandId: opts.commandId ?? null,
        details: opts.details ?? null,
      });
      return toInstance(row, this.ctx.secrets);
    });
  }

  async delete(id: string): Promise<void> {
    await this.ctx.db.deleteFrom('instances').where('id', '=', id).execute();
  }

  async countByState(): Promise<Partial<Record<InstanceState, number>>> {
    const rows = await this.ctx.db
      .selectFrom('instances')
      .select(['state', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('state')
      .execute();
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
    const row = await this.ctx.db
      .selectFrom('instances')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('group_id', '=', groupId)
      .executeTakeFirst();
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
      // An archived world has no container and reserves nothing: it counts toward no instance limit (bringing it back does).
      .where('state', '!=', 'archived')
      .executeTakeFirst();
    return { group: Number(row?.grp ?? 0), total: Number(row?.total ?? 0) };
  }
}
