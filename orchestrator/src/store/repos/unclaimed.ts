// Unclaimed containers per host: the durable set recovery runs keep and
// operators empty by adopting or deleting (see UnclaimedRepository).

import type { Selectable } from 'kysely';
import type { EpochMs, UnclaimedRecord } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { affected, type StoreContext } from '../context.js';
import type { UnclaimedContainersTable } from '../schema.js';
import type { UnclaimedEntry, UnclaimedRepository } from '../store.js';

function toRecord(r: Selectable<UnclaimedContainersTable>): UnclaimedRecord {
  return {
    hostId: r.host_id,
    instanceId: r.instance_id,
    groupId: r.group_id,
    variantId: r.variant_id,
    firstSeenAt: Number(r.first_seen_at),
  };
}

export class KyselyUnclaimedRepository implements UnclaimedRepository {
  constructor(private readonly ctx: StoreContext) {}

  async listForHost(hostId: string): Promise<UnclaimedRecord[]> {
    const rows = await this.ctx.db
      .selectFrom('unclaimed_containers')
      .selectAll()
      .where('host_id', '=', hostId)
      .orderBy('instance_id')
      .execute();
    return rows.map(toRecord);
  }

  async get(hostId: string, instanceId: string): Promise<UnclaimedRecord | undefined> {
    const row = await this.ctx.db
      .selectFrom('unclaimed_containers')
      .selectAll()
      .where('host_id', '=', hostId)
      .where('instance_id', '=', instanceId)
      .executeTakeFirst();
    return row && toRecord(row);
  }

  async replaceForHost(hostId: string, entries: readonly UnclaimedEntry[], now: EpochMs): Promise<UnclaimedRecord[]> {
    const wanted = new Map<string, UnclaimedEntry>();
    for (const e of entries) if (!wanted.has(e.instanceId)) wanted.set(e.instanceId, e);
    return this.ctx.atomic(async (db) => {
      const host = await db.selectFrom('hosts').select('id').where('id', '=', hostId).executeTakeFirst();
      if (!host) throw new AppError('HOST_NOT_FOUND', `host ${hostId} is not registered`);
      const current = new Map(
        (await db.selectFrom('unclaimed_containers').selectAll().where('host_id', '=', hostId).execute()).map((r) => [r.instance_id, r]),
      );
      const gone = [...current.keys()].filter((id) => !wanted.has(id));
      if (gone.length > 0)
        await db.deleteFrom('unclaimed_containers').where('host_id', '=', hostId).where('instance_id', 'in', gone).execute();
      for (const e of wanted.values()) {
        const row = current.get(e.instanceId);
        if (!row) {
          await db
            .insertInto('unclaimed_containers')
            .values({ host_id: hostId, instance_id: e.instanceId, group_id: e.groupId, variant_id: e.variantId, first_seen_at: now })
            .execute();
        } else if (row.group_id !== e.groupId || row.variant_id !== e.variantId) {
          await db
            .updateTable('unclaimed_containers')
            .set({ group_id: e.groupId, variant_id: e.variantId })
            .where('host_id', '=', hostId)
            .where('instance_id', '=', e.instanceId)
            .execute();
        }
      }
      const rows = await db.selectFrom('unclaimed_containers').selectAll().where('host_id', '=', hostId).orderBy('instance_id').execute();
      return rows.map(toRecord);
    });
  }

  async remove(hostId: string, instanceId: string): Promise<boolean> {
    const result = await this.ctx.db
      .deleteFrom('unclaimed_containers')
      .where('host_id', '=', hostId)
      .where('instance_id', '=', instanceId)
      .executeTakeFirst();
    return affected(result) > 0;
  }
}
