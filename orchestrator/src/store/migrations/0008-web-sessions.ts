// Web panel sessions (issue 14): a login exchanges a token for a random session
// id kept in an HttpOnly cookie; only its sha256 is stored, with the token it
// stands for (null for the preset admin token) and when it expires.

import type { Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, _dialect: StoreDialect): Promise<void> {
  await db.schema
    .createTable('web_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('token_id', 'text')
    .addColumn('principal_kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('web_sessions_expires_at').on('web_sessions').column('expires_at').execute();
}
