// Instance state history and immutable configuration revisions.

import type { Kysely, Selectable } from 'kysely';
import type { ConfigRevision, InstanceHistoryEntry, InstanceState } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { boundedLimit, isUniqueViolation, type StoreContext } from '../context.js';
import { fromJson, fromJsonOrNull, toJson, toJsonOrNull } from '../json.js';
import type { Database, HistoryTable, RevisionsTable } from '../schema.js';
import type { HistoryRepository, RevisionRepository } from '../store.js';
import { pruneRevisions, REVISIONS_KEPT } from '../../lifecycle/settings.js';

function toEntry(r: Selectable<HistoryTable>): InstanceHistoryEntry {
  return {
    id: Number(r.id),
    instanceId: r.instance_id,
    at: Number(r.at),
    from: r.from_state as InstanceState | null,
    to: r.to_state as InstanceState,
    reason: r.reason,
    actor: r.actor,
    commandId: r.command_id,
    details: fromJsonOrNull(r.details),
  };
}

/** Shared with instances.transition, which appends inside its own transaction. */
export async function appendHistory(db: Kysely<Database>, e: Omit<InstanceHistoryEntry, 'id'>): Promise<InstanceHistoryEntry> {
  const row = await db
    .insertInto('instance_history')
    .values({
      instance_id: e.instanceId,
      at: e.at,
      from_state: e.from,
      to_state: e.to,
      reason: e.reason,
      actor: e.actor,
      command_id: e.commandId,
      details: toJsonOrNull(e.details),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toEntry(row);
}

export class KyselyHistoryRepository implements HistoryRepository {
  constructor(private readonly ctx: StoreContext) {}

  append(entry: Omit<InstanceHistoryEntry, 'id'>): Promise<InstanceHistoryEntry> {
    return appendHistory(this.ctx.db, entry);
  }

  async list(instanceId: string, opts: { limit?: number } = {}): Promise<InstanceHistoryEntry[]> {
    const rows = await this.ctx.db
      .selectFrom('instance_history')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .orderBy('id', 'desc')
      .limit(boundedLimit(opts.limit, 100))
      .execute();
    return rows.map(toEntry);
  }
}

function toRevision(r: Selectable<RevisionsTable>): ConfigRevision {
  return {
    instanceId: r.instance_id,
    revision: r.revision,
    createdAt: Number(r.created_at),
    actor: r.actor,
    reason: r.reason,
    config: fromJson(r.config),
  };
}

export class KyselyRevisionRepository implements RevisionRepository {
  constructor(private readonly ctx: StoreContext) {}

  append(rev: ConfigRevision, opts: { keep?: number; pinned?: number[] } = {}): Promise<ConfigRevision> {
    const keep = boundedLimit(opts.keep, REVISIONS_KEPT);
    return this.ctx.atomic(async (db) => {
      let row;
      try {
        row = await db
          .insertInto('config_revisions')
          .values({
            instance_id: rev.instanceId,
            revision: rev.revision,
            created_at: rev.createdAt,
            actor: rev.actor,
            reason: rev.reason,
            config: toJson(rev.config),
          })
          .returningAll()
          .executeTakeFirstOrThrow();
      } catch (err) {
        if (isUniqueViolation(err))
          throw new AppError('IMMUTABLE', `revision ${rev.revision} of instance ${rev.instanceId} already exists; revisions are immutable`);
        throw err;
      }
      // The pure rule decides what goes: the newest `keep`, plus the pinned ones (the revision the
      // container ran before this one, which a rollback or a diff needs).
      const existing = await db.selectFrom('config_revisions').select('revision').where('instance_id', '=', rev.instanceId).execute();
      const { drop } = pruneRevisions(existing, keep, opts.pinned ?? []);
      if (drop.length > 0) {
        await db
          .deleteFrom('config_revisions')
          .where('instance_id', '=', rev.instanceId)
          .where(
            'revision',
            'in',
            drop.map((r) => r.revision),
          )
          .execute();
      }
      return toRevision(row);
    });
  }

  async get(instanceId: string, revision: number): Promise<ConfigRevision | undefined> {
    const row = await this.ctx.db
      .selectFrom('config_revisions')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('revision', '=', revision)
      .executeTakeFirst();
    return row && toRevision(row);
  }

  async list(instanceId: string): Promise<ConfigRevision[]> {
    const rows = await this.ctx.db
      .selectFrom('config_revisions')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .orderBy('revision', 'desc')
      .execute();
    return rows.map(toRevision);
  }
}
