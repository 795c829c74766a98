// The agent's backup routes (registered by app.ts under /api/v1): create, list,
// delete one/all, and restore of an instance's runtime directory.

import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { BackupParams, CreateBackupBody, InstanceParams, RestoreBody, type BackupList } from '../contracts/agent-api.js';
import { BackupService } from './backups.js';
import type { InstanceService } from './instance-service.js';


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
  api.post('/instances/:id/backups', { schema: { params: InstanceParams, body: CreateBackupBody } }, async (req) => {
    const { backupId, paths } = req.body as CreateBackupBody;
    const info = await backups.create((req.params as InstanceParams).id, backupId, paths);
    req.log.info({ instanceId: (req.params as InstanceParams).id, backupId, sizeBytes: info.sizeBytes }, 'backup written');
    return info;
  });
  api.get('/instances/:id/backups', { schema: { params: InstanceParams } }, async (req): Promise<BackupList> => ({ backups: await backups.list((req.params as InstanceParams).id) }));
  api.delete('/instances/:id/backups/:backupId', { schema: { params: BackupParams } }, async (req) => {
    const { id, backupId } = req.params as BackupParams;
    return backups.delete(id, backupId);
  });
  api.delete('/instances/:id/backups', { schema: { params: InstanceParams } }, async (req) => backups.deleteAll((req.params as InstanceParams).id));
  api.post('/instances/:id/restore', { schema: { params: InstanceParams, body: RestoreBody } }, async (req) => {
    const { id } = req.params as BackupParams;
    const result = await backups.restore(id, (req.body as RestoreBody).backupId);
    req.log.info({ instanceId: id, ...result }, 'backup restored');
    return result;
  });
}
