// Web panel sessions (server/web/web-sessions.ts): hashed session ids only.

import type { Selectable } from 'kysely';
import { AppError } from '../../shared/errors.js';
import { affected, isUniqueViolation, type StoreContext } from '../context.js';
import { fromJson, toJson } from '../json.js';
import type { WebSessionsTable } from '../schema.js';
import type { WebSessionRecord, WebSessionRepository } from '../store.js';

function toRecord(r: Selectable<WebSessionsTable>): WebSessionRecord {
  return {
    idHash: r.id_hash,
    tokenId: r.token_id,
    principalKind: r.principal_kind as WebSessionRecord['principalKind'],
    name: r.name,
    scopes: fromJson(r.scopes),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    presetSeal: r.preset_seal ?? null,
  };
}

export class KyselyWebSessionRepository implements WebSessionRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(s: WebSessionRecord): Promise<WebSessionRecord> {
    try {
      const row = await this.ctx.db
        .insertInto('web_sessions')
        .values({
          id_hash: s.idHash,
          token_id: s.tokenId,
          principal_kind: s.principalKind,
          name: s.name,
          scopes: toJson(s.scopes),
          created_at: s.createdAt,
          expires_at: s.expiresAt,
          preset_seal: s.presetSeal,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toRecord(row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('CONFLICT', 'web session already exists');
      throw err;
    }
  }

  async get(idHash: string): Promise<WebSessionRecord | undefined> {
    const row = await this.ctx.db.selectFrom('web_sessions').selectAll().where('id_hash', '=', idHash).executeTakeFirst();
    return row && toRecord(row);
  }

  async delete(idHash: string): Promise<boolean> {
    return affected(await this.ctx.db.deleteFrom('web_sessions').where('id_hash', '=', idHash).executeTakeFirst()) === 1;
  }

  async deleteExpired(now: number): Promise<number> {
    return affected(await this.ctx.db.deleteFrom('web_sessions').where('expires_at', '<=', now).executeTakeFirst());
  }
}
