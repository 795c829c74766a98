// Backup routes: take a backup (202, the `backup` action), list an instance's
// backups (from its agent), and restore one (stopped only, typed-name
// confirmation, audited). Stop-with-backup options are validated by
// stopBackupPayload (backup-service.ts).

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../shared/errors.js';
import { auditTarget } from '../audit.js';
import { readScope, writeScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { capability } from '../drivers/host-driver.js';
import { userActor } from '../services/lifecycle-service.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const BackupBody = Type.Object({ reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })) }, { additionalProperties: false });
const RestoreBody = Type.Object(
  {
    backupId: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' }),
    confirm: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false },
);

/** States a restore may start from: the container is not running. */
const RESTORABLE: readonly string[] = ['stopped', 'error', 'intervention_required'];

export async function instanceBackupRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {

  api.post('/instances/:id/backup', {
    schema: { tags: ['instances'], summary: 'Back up the instance data (202: the backup action is queued; online save over RCON when the template allows it)', params: InstanceParams, body: BackupBody },
    config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.backup', targetKind: 'instance' } },
    preValidation: async (req) => {
      if (req.body === undefined || req.body === null) req.body = {};
    },
  }, async (req, reply) => {
    const { id } = req.params as Static<typeof InstanceParams>;
    const { reason } = req.body as Static<typeof BackupBody>;
    const instance = await ctx.lifecycle.find(id);
    auditTarget(req, instance.id, { name: instance.name });
    const result = await ctx.lifecycle.request(instance.id, 'backup', userActor(req.principal), {
      requestId: req.id,
      payload: { previousState: instance.state, ...(reason ? { reason } : {}) },
    });
    return reply.status(202).send({ id: instance.id, commandId: result.commandId, state: result.state });
  });

  api.get('/instances/:id/backups', {
    schema: { tags: ['instances'], summary: 'The instance backups kept on its host', params: InstanceParams },
    config: { auth: { scope: readScope('instances') } },
  }, async (req) => {
    const { id } = req.params as Static<typeof InstanceParams>;
    const instance = await ctx.lifecycle.find(id);
    const host = instance.hostId ? await ctx.store.hosts.get(instance.hostId) : undefined;
    if (!host) throw new AppError('HOST_UNAVAILABLE', `instance ${instance.name} has no host holding its backups`);
    return { id: instance.id, backups: await capability(ctx.driver.backups, 'backups', host).list(host, instance.id, { requestId: req.id }) };
  });

  api.post('/instances/:id/restore', {
    schema: { tags: ['instances'], summary: 'Restore a backup (stopped only; "confirm" must equal the instance name; a safety backup is written first)', params: InstanceParams, body: RestoreBody },
    config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.restore', targetKind: 'instance' } },
  }, async (req, reply) => {
    const { id } = req.params as Static<typeof InstanceParams>;
    const body = req.body as Static<typeof RestoreBody>;
    const instance = await ctx.lifecycle.find(id);
    auditTarget(req, instance.id, { backupId: body.backupId, confirmed: body.confirm === instance.name, name: instance.name });
    if (body.confirm !== instance.name) {
      throw new AppError('CONFIRMATION_REQUIRED', `restoring replaces the current data: send "confirm" equal to the instance name ${JSON.stringify(instance.name)}`);
    }
    if (!RESTORABLE.includes(instance.state) || instance.activeAction) {
      throw new AppError('INVALID_TRANSITION', `cannot restore instance ${instance.name} while it is ${instance.activeAction ? `busy (${instance.activeAction.kind})` : instance.state}: stop it first`, {
        details: { from: instance.state, action: 'restore' },
      });
    }
    const result = await ctx.lifecycle.request(instance.id, 'restore', userActor(req.principal), { requestId: req.id, payload: { backupId: body.backupId } });
    return reply.status(202).send({ id: instance.id, commandId: result.commandId, state: result.state });
  });
}
