// The agent's backup routes (registered by app.ts under /api/v1): create, list,
// delete one/all, and restore of an instance's runtime directory.

import { dirname, join } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BackupService } from './backups.js';
import type { InstanceService } from './instance-service.js';

const Id = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });

export const CreateBackupBody = Type.Object(
  {
    backupId: Id,
    // Checked again (normalized, no `..`, no absolute) in backups.ts, which names the bad path.
    paths: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { minItems: 1, maxItems: 256 })),
  },
  { additionalProperties: false },
);
export type CreateBackupBody = Static<typeof CreateBackupBody>;

export const RestoreBody = Type.Object({ backupId: Id }, { additionalProperties: false });
export type RestoreBody = Static<typeof RestoreBody>;

const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });
const BackupParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }), backupId: Type.String({ minLength: 1, maxLength: 256 }) });
type Params = Static<typeof BackupParams>;

/** `<runtime>/backups`, beside `<runtime>/instances`, for an app built without an explicit service. */
export function defaultBackupService(service: InstanceService): BackupService {
  const instances = dirname(service.o.directories.localPath('x'));
  return new BackupService({
    backupsDirectory: join(dirname(instances), 'backups'),
    directories: service.o.directories,
    findOwned: (id) => service.findOwned(id),
  });
}

export function registerBackupRoutes(api: FastifyInstance, backups: BackupService): void {
  api.post('/instances/:id/backups', { schema: { params: Params, body: CreateBackupBody } }, async (req) => {
    const { backupId, paths } = req.body as CreateBackupBody;
    const info = await backups.create((req.params as Params).id, backupId, paths);
    req.log.info({ instanceId: (req.params as Params).id, backupId, sizeBytes: info.sizeBytes }, 'backup written');
    return info;
  });
  api.get('/instances/:id/backups', { schema: { params: Params } }, async (req) => ({ backups: await backups.list((req.params as Params).id) }));
  api.delete('/instances/:id/backups/:backupId', { schema: { params: BackupParams } }, async (req) => {
    const { id, backupId } = req.params as Params;
    return backups.delete(id, backupId);
  });
  api.delete('/instances/:id/backups', { schema: { params: Params } }, async (req) => backups.deleteAll((req.params as Params).id));
  api.post('/instances/:id/restore', { schema: { params: Params, body: RestoreBody } }, async (req) => {
    const { id } = req.params as Params;
    const result = await backups.restore(id, (req.body as RestoreBody).backupId);
    req.log.info({ instanceId: id, ...result }, 'backup restored');
    return result;
  });
}
