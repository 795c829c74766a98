// Sessions (instance allocations), player transfers and router-reported
// player sessions (docs/provisioning.md "Allocation", docs/router.md).

import { sql, type Selectable } from 'kysely';
import type { PlayerSession, Session, Transfer } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { affected, boundedLimit, isUniqueViolation, type StoreContext } from '../context.js';
import { fromJson, toJson } from '../json.js';
import type { PlayerSessionsTable, SessionsTable, TransfersTable } from '../schema.js';
import type { PlayerSessionRepository, SessionRepository, TransferRepository } from '../store.js';

const msOrNull = (v: number | null): number | null => (v === null ? null : Number(v));

function rethrowDuplicate(err: unknown, what: string): never {
  if (isUniqueViolation(err)) throw new AppError('CONFLICT', `${what} already exists`);
  throw err;
}

export function toSession(r: Selectable<SessionsTable>): Session {
  return {
    id: r.id,
    groupId: r.group_id,
    instanceId: r.instance_id,
    status: r.status as Session['status'],
    metadata: fromJson(r.metadata),
    createdAt: Number(r.created_at),
    releasedAt: msOrNull(r.released_at),
  };
}

export class KyselySessionRepository implements SessionRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(s: Session): Promise<Session> {
    const row = await this.ctx.db
      .insertInto('sessions')
      .values({
        id: s.id,
        group_id: s.groupId,
        instance_id: s.instanceId,
        status: s.status,
        metadata: toJson(s.metadata),
        created_at: s.createdAt,
        released_at: s.releasedAt,
      })
      .returningAll()
      .executeTakeFirstOrThrow()
      .catch((err: unknown) => rethrowDuplicate(err, `session ${s.id}`));
    return toSession(row);
  }

  async get(id: string): Promise<Session | undefined> {
    const row = await this.ctx.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toSession(row);
  }

  async list(filter: { instanceId?: string; groupId?: string; status?: Session['status'] } = {}): Promise<Session[]> {
    const rows = await this.ctx.db
      .selectFrom('sessions')
      .selectAll()
      .$if(filter.instanceId !== undefined, (q) => q.where('instance_id', '=', filter.instanceId!))
      .$if(filter.groupId !== undefined, (q) => q.where('group_id', '=', filter.groupId!))
      .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toSession);
  }
}

function toTransfer(r: Selectable<TransfersTable>): Transfer {
  return {
    id: r.id,
    player: r.player,
    playerUuid: r.player_uuid,
    target: fromJson(r.target),
    status: r.status as Transfer['status'],
    resolvedInstanceId: r.resolved_instance_id,
    reason: r.reason,
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    consumedAt: msOrNull(r.consumed_at),
  };
}

export class KyselyTransferRepository implements TransferRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(t: Transfer): Promise<Transfer> {
    const row = await this.ctx.db
      .insertInto('transfers')
      .values({
        id: t.id,
        player: t.player,
        player_key: t.player.toLowerCase(),
        player_uuid: t.playerUuid,
        target: toJson(t.target),
        status: t.status,
        resolved_instance_id: t.resolvedInstanceId,
        reason: t.reason,
        created_at: t.createdAt,
        expires_at: t.expiresAt,
        consumed_at: t.consumedAt,
      })
      .returningAll()
      .executeTakeFirstOrThrow()
      .catch((err: unknown) => rethrowDuplicate(err, `transfer ${t.id}`));
    return toTransfer(row);
  }

  async get(id: string): Promise<Transfer | undefined> {
    const row = await this.ctx.db.selectFrom('transfers').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toTransfer(row);
  }

  async list(filter: { player?: string; status?: Transfer['status']; limit?: number } = {}): Promise<Transfer[]> {
    const rows = await this.ctx.db
      .selectFrom('transfers')
      .selectAll()
      .$if(filter.player !== undefined, (q) => q.where('player_key', '=', filter.player!.toLowerCase()))
      .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(boundedLimit(filter.limit, 100))
      .execute();
    return rows.map(toTransfer);
  }

  async consumePending(player: string, now: number, resolvedInstanceId: string | null = null): Promise<Transfer | undefined> {
    const newest = this.ctx.db
      .selectFrom('transfers')
      .select('id')
      .where('player_key', '=', player.toLowerCase())
      .where('status', '=', 'pending')
      .where('expires_at', '>', now)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1);
    // The outer status check is re-evaluated after a row-lock wait on
    // PostgreSQL, so two concurrent logins cannot both consume it.
    const row = await this.ctx.db
      .updateTable('transfers')
      .set({ status: 'consumed', consumed_at: now, resolved_instance_id: resolvedInstanceId })
      .where('id', '=', (eb) => eb.selectFrom(newest.as('n')).select('n.id'))
      .where('status', '=', 'pending')
      .returningAll()
      .executeTakeFirst();
    return row && toTransfer(row);
  }

  async expire(now: number): Promise<number> {
    const res = await this.ctx.db
      .updateTable('transfers')
      .set({ status: 'expired' })
      .where('status', '=', 'pending')
      .where('expires_at', '<=', now)
      .executeTakeFirst();
    return affected(res);
  }
}

function toPlayerSession(r: Selectable<PlayerSessionsTable>): PlayerSession {
  return {
    id: r.id,
    routerId: r.router_id,
    playerName: r.player_name,
    playerUuid: r.player_uuid,
    instanceId: r.instance_id,
    clientAddress: r.client_address,
    status: r.status as PlayerSession['status'],
    reason: r.reason,
    connectedAt: Number(r.connected_at),
    disconnectedAt: msOrNull(r.disconnected_at),
  };
}

export class KyselyPlayerSessionRepository implements PlayerSessionRepository {
  constructor(private readonly ctx: StoreContext) {}

  async open(p: PlayerSession): Promise<PlayerSession> {
    const row = await this.ctx.db
      .insertInto('player_sessions')
      .values({
        id: p.id,
        router_id: p.routerId,
        player_name: p.playerName,
        player_uuid: p.playerUuid,
        instance_id: p.instanceId,
        client_address: p.clientAddress,
        status: p.status,
        reason: p.reason,
        connected_at: p.connectedAt,
        disconnected_at: p.disconnectedAt,
      })
      .returningAll()
      .executeTakeFirstOrThrow()
      .catch((err: unknown) => rethrowDuplicate(err, `player session ${p.id}`));
    return toPlayerSession(row);
  }

  async close(id: string, now: number, reason: string | null = null): Promise<PlayerSession | undefined> {
    await this.ctx.db
      .updateTable('player_sessions')
      .set({ status: 'closed', disconnected_at: now, reason: sql<string | null>`coalesce(${reason}, reason)` })
      .where('id', '=', id)
      .where('status', '=', 'active')
      .execute();
    return this.get(id);
  }

  async closeAllForRouter(routerId: string, now: number, reason: string): Promise<number> {
    const res = await this.ctx.db
      .updateTable('player_sessions')
      .set({ status: 'closed', disconnected_at: now, reason })
      .where('router_id', '=', routerId)
      .where('status', '=', 'active')
      .executeTakeFirst();
    return affected(res);
  }

  async get(id: string): Promise<PlayerSession | undefined> {
    const row = await this.ctx.db.selectFrom('player_sessions').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toPlayerSession(row);
  }

  async listActive(filter: { instanceId?: string; routerId?: string } = {}): Promise<PlayerSession[]> {
    const rows = await this.ctx.db
      .selectFrom('player_sessions')
      .selectAll()
      .where('status', '=', 'active')
      .$if(filter.instanceId !== undefined, (q) => q.where('instance_id', '=', filter.instanceId!))
      .$if(filter.routerId !== undefined, (q) => q.where('router_id', '=', filter.routerId!))
      .orderBy('connected_at')
      .orderBy('id')
      .execute();
    return rows.map(toPlayerSession);
  }

  async countActiveByInstance(): Promise<Record<string, number>> {
    const rows = await this.ctx.db
      .selectFrom('player_sessions')
      .select(['instance_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('status', '=', 'active')
      .where('instance_id', 'is not', null)
      .groupBy('instance_id')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.instance_id as string, Number(r.n)]));
  }
}
