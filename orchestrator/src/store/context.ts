// What every repository shares: the Kysely handle (a plain connection pool or
// an open transaction), the dialect, and a way to run several statements atomically.

import type { Kysely } from 'kysely';
import type { StoreDialect } from './migrations/index.js';
import type { HeartbeatCoalescer } from './heartbeat-coalescer.js';
import type { Database } from './schema.js';
import type { SecretSlot } from './secret-codec.js';

export interface StoreContext {
  readonly db: Kysely<Database>;
  readonly dialect: StoreDialect;
  /** True when `db` is an open transaction (locks taken now last until it ends). */
  readonly inTransaction: boolean;
  /** Runs `fn` inside the current transaction, or in a new one when there is none. */
  atomic<T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  /** Heartbeats that change nothing but their time, shared by the store and its transactions. */
  readonly heartbeats: HeartbeatCoalescer;
  /** The codec secret columns are sealed with, shared by the store and its transactions (installed after opening). */
  readonly secrets: SecretSlot;
}

/**
 * A statement whose text starts with this comment is run as a named,
 * server-side prepared statement (planned once per connection, not at every
 * execution: planning was half the database's CPU of an allocation). Only
 * for hot statements with an explicit column list in and out, so a plan
 * stays valid when a later migration adds columns (rolling upgrades);
 * needs session-mode pooling, as LISTEN and advisory locks already do.
 */
export const PREPARED = '/* prepared */';

/** True for a unique / primary-key violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = (err as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Rows changed by an UPDATE/DELETE result from Kysely. */
export function affected(result: { numUpdatedRows?: bigint; numDeletedRows?: bigint }): number {
  return Number(result.numUpdatedRows ?? result.numDeletedRows ?? 0n);
}

/** A bounded list size: at least 1, at most `max`, `fallback` when unset. */
export function boundedLimit(limit: number | undefined, fallback: number, max = 1000): number {
  if (limit === undefined || !Number.isFinite(limit)) return fallback;
  return Math.max(1, Math.min(max, Math.floor(limit)));
}
