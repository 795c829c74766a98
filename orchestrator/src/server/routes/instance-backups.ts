// Backup routes: take a backup (202, the `backup` action; 409 when it would
// stop a running server unless `stop: true`), list an instance's backups (the
// orchestrator's backup store merged with its host), download one (streamed),
// read/set its backup policy, and restore a kept backup or an uploaded archive
// (stopped only, typed-name confirmation, audited). Stop-with-backup options
// are validated by stopBackupPayload (lifecycle/backup.ts).

import type { Readable } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import { BackupBody, RestoreBody } from '../../contracts/public-api/bodies.js';
import { NullableBackupPolicySchema, type BackupPolicy } from '../../contracts/backup-policy.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../shared/errors.js';
import { auditTarget } from '../audit.js';
import { readScope, writeScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { capability } from '../drivers/host-driver.js';
import { userActor } from '../services/lifecycle-service.js';
import { acceptedAction, hostOfInstance, paramInstance } from './route-helpers.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const BackupParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128 }),
  backupId: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' }),
});
export async function instanceBackupRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const takeBackup = async (req: FastifyRequest, reply: FastifyReply) => {
    const body = req.body as Static<typeof BackupBody>;
    const instance = await paramInstance(ctx, req);
    auditTarget(req, instance.id, { name: instance.name, ...(body.stop ? { stop: body.stop } : {}) });
    return acceptedAction(reply, instance.id, await ctx.backupRequests.backup(instance, body, userActor(req.principal), req.id));
  };
  const backupRoute = {
    schema: {
      tags: ['instances'],
      summary: 'Back up the instance data (202: queued; online save over RCON when the template allows it, else 409 unless "stop": true)',
      params: InstanceParams,
      body: BackupBody,
    },
    config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.backup', targetKind: 'instance' } },
    preValidation: async (req: FastifyRequest) => {
      if (req.body === undefined || req.body === null) req.body = {};
    },
  };
  api.post('/instances/:id/backup', backupRoute, takeBackup);
  api.post('/instances/:id/backups', backupRoute, takeBackup);

  api.get(
    '/instances/:id/backups',
    {
      schema: {
        tags: ['instances'],
        summary: 'The instance backups: kept in the orchestrator backup store (stored) and/or on its host (onHost)',
        params: InstanceParams,
      },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const instance = await paramInstance(ctx, req);
      const host = await hostOfInstance(ctx, instance);
      const { backups, hostError } = await ctx.backupStore.list(instance.id, host, { requestId: req.id });
      return { id: instance.id, backups, ...(hostError ? { hostError } : {}) };
    },
  );

  api.get(
    '/instances/:id/backups/:backupId/download',
    {
      schema: {
        tags: ['instances'],
        summary: 'Stream one backup archive (gzip tar) from the backup store, else from its host',
        params: BackupParams,
      },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req, reply) => {
      const { id, backupId } = req.params as Static<typeof BackupParams>;
      const instance = await ctx.lifecycle.find(id);
      let opened: { info: { sizeBytes: number; sha256: string }; stream: Readable };
      try {
        const { record, stream } = await ctx.backupStore.open(instance.id, backupId);
        opened = { info: record, stream };
      } catch (err) {
        const host = await hostOfInstance(ctx, instance);
        if (!(err instanceof AppError && err.code === 'NOT_FOUND') || !host) throw err;
        opened = await capability(ctx.driver.backups, 'backups', host).download(host, instance.id, backupId, { requestId: req.id });
      }
      return reply
        .header('content-type', 'application/gzip')
        .header('content-length', String(opened.info.sizeBytes))
        .header('x-backup-sha256', opened.info.sha256)
        .header('content-disposition', `attachment; filename="${instance.name}-${backupId}.tar.gz"`)
        .send(opened.stream);
    },
  );

  api.get(
    '/instances/:id/backup-policy',
    {
      schema: {
        tags: ['instances'],
        summary: 'The instance backup schedule and retention: its own, and the one in force (own, else the group)',
        params: InstanceParams,
      },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const instance = await paramInstance(ctx, req);
      return { id: instance.id, ...(await ctx.backupScheduler.describe(instance)) };
    },
  );

  api.put(
    '/instances/:id/backup-policy',
    {
      schema: {
        tags: ['instances'],
        summary: 'Set the instance own backup schedule (cron, UTC) and retention; null clears it (the group policy applies)',
        params: InstanceParams,
        body: NullableBackupPolicySchema,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.backup_policy', targetKind: 'instance' } },
    },
    async (req) => {
      const instance = await paramInstance(ctx, req);
      auditTarget(req, instance.id, { name: instance.name });
      await ctx.backupScheduler.setPolicy(instance, req.body as BackupPolicy | null);
      return { id: instance.id, ...(await ctx.backupScheduler.describe(instance)) };
    },
  );

  api.post(
    '/instances/:id/restore',
    {
      schema: {
        tags: ['instances'],
        summary: 'Restore a backup (stopped only; "confirm" must equal the instance name; a safety backup is written first)',
        params: InstanceParams,
        body: RestoreBody,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.restore', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const body = req.body as Static<typeof RestoreBody>;
      const instance = await paramInstance(ctx, req);
      auditTarget(req, instance.id, {
        ...(body.backupId ? { backupId: body.backupId } : {}),
        ...(body.uploadId ? { uploadId: body.uploadId } : {}),
        confirmed: body.confirm === instance.name,
        name: instance.name,
      });
      const { backupId, ...result } = await ctx.backupRequests.restore(instance, body, userActor(req.principal), req.id);
      return acceptedAction(reply, instance.id, result, { backupId });
    },
  );
}
