// One-time join tokens for agent enrolment (server/services/host-enrolment.ts):
// sha256 of the secret only; `consume` is the one conditional write that makes
// a token single-use, also when two enrolments race.

import type { Selectable } from 'kysely';
import { AppError } from '../../shared/errors.js';
import { affected, isUniqueViolation, type StoreContext } from '../context.js';
import type { JoinTokensTable } from '../schema.js';
import type { JoinTokenRecord, JoinTokenRepository } from '../store.js';

const num = (v: number | null): number | null => (v === null ? null : Number(v));

function toJoinToken(r: Selectable<JoinTokensTable>): JoinTokenRecord {
  return {
    id: r.id,
    hashedSecret: r.hashed_secret,
    agentId: r.agent_id,
    createdBy: r.created_by,
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    usedAt: num(r.used_at),
    usedBy: r.used_by,
    revokedAt: num(r.revoked_at),
  };
}

export class KyselyJoinTokenRepository implements JoinTokenRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(t: JoinTokenRecord): Promise<JoinTokenRecord> {
    try {
      const row = await this.ctx.db
        .insertInto('join_tokens')
        .values({
          id: t.id,
          hashed_secret: t.hashedSecret,
          agent_id: t.agentId,
          created_by: t.createdBy,
          created_at: t.createdAt,
          expires_at: t.expiresAt,
          used_at: t.usedAt,
          used_by: t.usedBy,
          revoked_at: t.revokedAt,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toJoinToken(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('CONFLICT', `a join token with id ${t.id} already exists`);
      throw err;
    }
  }

  async get(id: string): Promise<JoinTokenRecord | undefined> {
    const row = await this.ctx.db.selectFrom('join_tokens').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toJoinToken(row);
  }

  async findByHashedSecret(hashedSecret: string): Promise<JoinTokenRecord | undefined> {
    const row = await this.ctx.db.selectFrom('join_tokens').selectAll().where('hashed_secret', '=', hashedSecret).executeTakeFirst();
    return row && toJoinToken(row);
  }

  async list(): Promise<JoinTokenRecord[]> {
    return (await this.ctx.db.selectFrom('join_tokens').selectAll().orderBy('created_at', 'desc').orderBy('id').execute()).map(toJoinToken);
  }

  async consume(id: string, agentId: string, now: number): Promise<boolean> {
    const result = await this.ctx.db
      .updateTable('join_tokens')
      .set({ used_at: now, used_by: agentId })
      .where('id', '=', id)
      .where('used_at', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return affected(result) === 1;
  }

  async revoke(id: string, now: number): Promise<void> {
    await this.ctx.db.updateTable('join_tokens').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  }
}
