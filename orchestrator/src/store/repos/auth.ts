// API tokens (hashed secrets only) and the append-only audit log.

import type { Insertable, Selectable } from 'kysely';
import type { ApiToken, AuditEvent } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { boundedLimit, isUniqueViolation, type StoreContext } from '../context.js';
import { GroupCommit } from '../group-commit.js';
import { fromJson, toJson } from '../json.js';
import type { AuditTable, TokensTable } from '../schema.js';
import type { AuditRepository, TokenRepository } from '../store.js';

function toToken(r: Selectable<TokensTable>): ApiToken {
  return {
    id: r.id,
    name: r.name,
    hashedSecret: r.hashed_secret,
    scopes: fromJson(r.scopes),
    createdAt: Number(r.created_at),
    lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
    revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
  };
}

export class KyselyTokenRepository implements TokenRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(t: ApiToken): Promise<ApiToken> {
    try {
      const row = await this.ctx.db
        .insertInto('api_tokens')
        .values({
          id: t.id,
          name: t.name,
          hashed_secret: t.hashedSecret,
          scopes: toJson(t.scopes),
          created_at: t.createdAt,
          last_used_at: t.lastUsedAt,
          revoked_at: t.revokedAt,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toToken(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('CONFLICT', `a token named ${t.name} (or with id ${t.id}) already exists`);
      throw err;
    }
  }

  async get(id: string): Promise<ApiToken | undefined> {
    const row = await this.ctx.db.selectFrom('api_tokens').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toToken(row);
  }

  async getByName(name: string): Promise<ApiToken | undefined> {
    const row = await this.ctx.db.selectFrom('api_tokens').selectAll().where('name', '=', name).executeTakeFirst();
    return row && toToken(row);
  }

  async findByHashedSecret(hashedSecret: string): Promise<ApiToken | undefined> {
    const row = await this.ctx.db.selectFrom('api_tokens').selectAll().where('hashed_secret', '=', hashedSecret).executeTakeFirst();
    return row && toToken(row);
  }

  async list(): Promise<ApiToken[]> {
    return (await this.ctx.db.selectFrom('api_tokens').selectAll().orderBy('created_at').orderBy('id').execute()).map(toToken);
  }

  async touch(id: string, now: number): Promise<void> {
    await this.ctx.db.updateTable('api_tokens').set({ last_used_at: now }).where('id', '=', id).execute();
  }

  async revoke(id: string, now: number): Promise<void> {
    await this.ctx.db.updateTable('api_tokens').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  }
}

function toAudit(r: Selectable<AuditTable>): AuditEvent {
  return {
    id: Number(r.id),
    at: Number(r.at),
    actor: r.actor,
    action: r.action,
    targetKind: r.target_kind,
    targetId: r.target_id,
    params: fromJson(r.params),
    result: r.result as AuditEvent['result'],
    errorCode: r.error_code,
    requestId: r.request_id,
  };
}

/** An audit entry as its row (also written by statements that record their action's entry themselves). */
export function auditRow(e: Omit<AuditEvent, 'id'>): Insertable<AuditTable> {
  return {
    at: e.at,
    actor: e.actor,
    action: e.action,
    target_kind: e.targetKind,
    target_id: e.targetId,
    params: toJson(e.params),
    result: e.result,
    error_code: e.errorCode,
    request_id: e.requestId,
  };
}

export class KyselyAuditRepository implements AuditRepository {
  /** Outside a transaction, entries written at the same time share one statement and one commit. */
  private readonly batch: GroupCommit<Omit<AuditEvent, 'id'>, AuditEvent> | undefined;

  constructor(private readonly ctx: StoreContext) {
    this.batch = ctx.inTransaction ? undefined : new GroupCommit((events) => this.insert(events));
  }

  append(e: Omit<AuditEvent, 'id'>): Promise<AuditEvent> {
    return this.batch ? this.batch.submit(e) : this.insert([e]).then((rows) => rows[0]!);
  }

  /** Waits for the entries on their way (the store's close). */
  flushed(): Promise<void> {
    return this.batch?.flushed() ?? Promise.resolve();
  }

  private async insert(events: Omit<AuditEvent, 'id'>[]): Promise<AuditEvent[]> {
    const rows = await this.ctx.db.insertInto('audit_events').values(events.map(auditRow)).returningAll().execute();
    // Ids are assigned in the order of the values; RETURNING's own order is not guaranteed (SQLite).
    return rows.map(toAudit).sort((a, b) => a.id - b.id);
  }

  async list(
    filter: { targetKind?: string; targetId?: string; actor?: string; beforeId?: number; limit?: number } = {},
  ): Promise<AuditEvent[]> {
    const rows = await this.ctx.db
      .selectFrom('audit_events')
      .selectAll()
      .$if(filter.targetKind !== undefined, (q) => q.where('target_kind', '=', filter.targetKind!))
      .$if(filter.targetId !== undefined, (q) => q.where('target_id', '=', filter.targetId!))
      .$if(filter.actor !== undefined, (q) => q.where('actor', '=', filter.actor!))
      .$if(filter.beforeId !== undefined, (q) => q.where('id', '<', filter.beforeId!))
      .orderBy('id', 'desc')
      .limit(boundedLimit(filter.limit, 100))
      .execute();
    return rows.map(toAudit);
  }
}
