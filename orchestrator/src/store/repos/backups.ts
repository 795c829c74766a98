// Off-host backups: the backup store's records and the per-instance backup
// policy with the scheduler's last-run mark (see StoredBackupRepository).

import type { Selectable } from 'kysely';
import type { JsonObject } from '../../domain/index.js';
import { affected, type StoreContext } from '../context.js';
import { fromJsonOrNull, toJsonOrNull } from '../json.js';
import type { BackupPoliciesTable, StoredBackupsTable } from '../schema.js';
import type { BackupPolicyRecord, BackupPolicyRepository, StoredBackup, StoredBackupRepository } from '../store.js';

function toBackup(r: Selectable<StoredBackupsTable>): StoredBackup {
  return {
    instanceId: r.instance_id,
    backupId: r.backup_id,
    sha256: r.sha256,
    sizeBytes: Number(r.size_bytes),
    createdAt: Number(r.created_at),
    storedAt: Number(r.stored_at),
    originHost: r.origin_host,
    storedPath: r.stored_path,
    paths: fromJsonOrNull<string[]>(r.paths),
    trigger: r.trigger,
  };
}

export class KyselyStoredBackupRepository implements StoredBackupRepository {
  constructor(private readonly ctx: StoreContext) {}

  async put(b: StoredBackup): Promise<StoredBackup> {
    const columns = {
      sha256: b.sha256,
      size_bytes: b.sizeBytes,
      created_at: b.createdAt,
      stored_at: b.storedAt,
      origin_host: b.originHost,
      stored_path: b.storedPath,
      paths: toJsonOrNull(b.paths),
      trigger: b.trigger,
    };
    await this.ctx.db
      .insertInto('stored_backups')
      .values({ instance_id: b.instanceId, backup_id: b.backupId, ...columns })
      .onConflict((oc) => oc.columns(['instance_id', 'backup_id']).doUpdateSet(columns))
      .execute();
    return (await this.get(b.instanceId, b.backupId))!;
  }

  async get(instanceId: string, backupId: string): Promise<StoredBackup | undefined> {
    const row = await this.ctx.db
      .selectFrom('stored_backups')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .where('backup_id', '=', backupId)
      .executeTakeFirst();
    return row && toBackup(row);
  }

  async listForInstance(instanceId: string): Promise<StoredBackup[]> {
    const rows = await this.ctx.db
      .selectFrom('stored_backups')
      .selectAll()
      .where('instance_id', '=', instanceId)
      .orderBy('created_at')
      .orderBy('backup_id')
      .execute();
    return rows.map(toBackup);
  }

  async delete(instanceId: string, backupId: string): Promise<boolean> {
    const result = await this.ctx.db
      .deleteFrom('stored_backups')
      .where('instance_id', '=', instanceId)
      .where('backup_id', '=', backupId)
      .executeTakeFirst();
    return affected(result) > 0;
  }
}

function toPolicy(r: Selectable<BackupPoliciesTable>): BackupPolicyRecord {
  return {
    instanceId: r.instance_id,
    policy: fromJsonOrNull<JsonObject>(r.policy),
    lastScheduledAt: r.last_scheduled_at === null ? null : Number(r.last_scheduled_at),
    updatedAt: Number(r.updated_at),
  };
}

export class KyselyBackupPolicyRepository implements BackupPolicyRepository {
  constructor(private readonly ctx: StoreContext) {}

  async get(instanceId: string): Promise<BackupPolicyRecord | undefined> {
    const row = await this.ctx.db.selectFrom('backup_policies').selectAll().where('instance_id', '=', instanceId).executeTakeFirst();
    return row && toPolicy(row);
  }

  async list(): Promise<BackupPolicyRecord[]> {
    return (await this.ctx.db.selectFrom('backup_policies').selectAll().orderBy('instance_id').execute()).map(toPolicy);
  }

  async setPolicy(instanceId: string, policy: JsonObject | null, now: number): Promise<BackupPolicyRecord> {
    const text = toJsonOrNull(policy);
    await this.ctx.db
      .insertInto('backup_policies')
      .values({ instance_id: instanceId, policy: text, last_scheduled_at: null, updated_at: now })
      .onConflict((oc) => oc.column('instance_id').doUpdateSet({ policy: text, updated_at: now }))
      .execute();
    return (await this.get(instanceId))!;
  }

  async markScheduled(instanceId: string, at: number, now: number): Promise<void> {
    await this.ctx.db
      .insertInto('backup_policies')
      .values({ instance_id: instanceId, policy: null, last_scheduled_at: at, updated_at: now })
      .onConflict((oc) => oc.column('instance_id').doUpdateSet({ last_scheduled_at: at, updated_at: now }))
      .execute();
  }
}
