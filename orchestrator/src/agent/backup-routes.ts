// The agent's backup routes (registered by app.ts under /api/v1): create, list,
// delete one/all, restore of an instance's runtime directory, and an archive's
// download (GET …/archive) and upload (PUT …/archive, checked like an import).

import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import { AppError } from '../shared/errors.js';
import {
  BACKUP_ARCHIVE_CONTENT_TYPES,
  BACKUP_ARCHIVE_HEADERS,
  BackupParams,
  BackupUploadQuery,
  CreateBackupBody,
  InstanceParams,
  RestoreBody,
  type BackupList,
} from '../contracts/agent-api.js';
import { BackupService } from './backups.js';
import type { InstanceService } from './instance-service.js';

/** `<runtime>/backups`, beside `<runtime>/instances`, for an app built without an explicit service. */
export function defaultBackupService(service: InstanceService): BackupService {
  const instances = dirname(service.deps.directories.localPath('x'));
  return new BackupService({
    backupsDirectory: join(dirname(instances), 'backups'),
    directories: service.deps.directories,
    findOwned: (id) => service.findOwned(id),
    instanceLocks: service.instanceLocks,
  });
}

/** A JSON array of relative paths from the upload query; refused when it is anything else. */
function uploadedPaths(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.some((p) => typeof p !== 'string'))
    throw new AppError('VALIDATION_FAILED', 'querystring/paths must be a JSON array of relative paths');
  return parsed as string[];
}

async function registerArchiveRoutes(api: FastifyInstance, backups: BackupService): Promise<void> {
  await api.register(async (scope) => {
    // The body stays a stream: receive() bounds, hashes and checks it.
    scope.addContentTypeParser(BACKUP_ARCHIVE_CONTENT_TYPES, (_req, payload, done) => done(null, payload));
    scope.get('/instances/:id/backups/:backupId/archive', { schema: { params: BackupParams } }, async (req, reply) => {
      const { id, backupId } = req.params as BackupParams;
      const { info, stream } = await backups.openArchive(id, backupId);
      reply
        .header('content-type', 'application/gzip')
        .header('content-length', String(info.sizeBytes))
        .header(BACKUP_ARCHIVE_HEADERS.sha256, info.sha256)
        .header(BACKUP_ARCHIVE_HEADERS.createdAt, info.createdAt);
      if (info.paths) reply.header(BACKUP_ARCHIVE_HEADERS.paths, JSON.stringify(info.paths));
      return reply.send(stream);
    });
    scope.put(
      '/instances/:id/backups/:backupId/archive',
      { schema: { params: BackupParams, querystring: BackupUploadQuery } },
      async (req) => {
        const { id, backupId } = req.params as BackupParams;
        const q = req.query as BackupUploadQuery;
        const body = req.body as Readable | undefined;
        if (!body || typeof body.pipe !== 'function')
          throw new AppError('VALIDATION_FAILED', 'send the backup as a gzip tar (content-type application/gzip)');
        const paths = uploadedPaths(q.paths);
        const info = await backups.receive(id, backupId, body, { sha256: q.sha256, createdAt: q.createdAt, ...(paths ? { paths } : {}) });
        req.log.info({ instanceId: id, backupId, sizeBytes: info.sizeBytes }, 'backup received');
        return info;
      },
    );
  });
}

export async function registerBackupRoutes(api: FastifyInstance, backups: BackupService): Promise<void> {
  await registerArchiveRoutes(api, backups);
  api.post('/instances/:id/backups', { schema: { params: InstanceParams, body: CreateBackupBody } }, async (req) => {
    const { backupId, paths } = req.body as CreateBackupBody;
    const info = await backups.create((req.params as InstanceParams).id, backupId, paths);
    req.log.info({ instanceId: (req.params as InstanceParams).id, backupId, sizeBytes: info.sizeBytes }, 'backup written');
    return info;
  });
  api.get('/instances/:id/backups', { schema: { params: InstanceParams } }, async (req): Promise<BackupList> => ({
    backups: await backups.list((req.params as InstanceParams).id),
  }));
  api.delete('/instances/:id/backups/:backupId', { schema: { params: BackupParams } }, async (req) => {
    const { id, backupId } = req.params as BackupParams;
    return backups.delete(id, backupId);
  });
  api.delete('/instances/:id/backups', { schema: { params: InstanceParams } }, async (req) =>
    backups.deleteAll((req.params as InstanceParams).id),
  );
  api.post('/instances/:id/restore', { schema: { params: InstanceParams, body: RestoreBody } }, async (req) => {
    const { id } = req.params as BackupParams;
    const result = await backups.restore(id, (req.body as RestoreBody).backupId);
    req.log.info({ instanceId: id, ...result }, 'backup restored');
    return result;
  });
}
