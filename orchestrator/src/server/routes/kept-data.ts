// Data a scoped delete kept (worlds and backups of deleted instances), per
// host from the agents' runtime directories: listed, and purged one instance
// at a time, or attached to a new (stopped) instance on the same host.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { auditTarget } from '../audit.js';
import { readScope, writeScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';

const AttachBody = Type.Object(
  { instance: Type.String({ minLength: 1, maxLength: 256, description: 'the new instance (id or name), stopped on the same host' }) },
  { additionalProperties: false },
);
const KeptParams = Type.Object({
  hostId: Type.String({ minLength: 1, maxLength: 128 }),
  instanceId: Type.String({ minLength: 1, maxLength: 256 }),
});

export async function keptDataRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.get(
    '/kept-data',
    {
      schema: { tags: ['hosts'], summary: 'Worlds and backups of deleted instances, per host (unreachable hosts are named)' },
      config: { auth: { scope: readScope('hosts') } },
    },
    async () => ctx.hostRemoval.listKeptData(),
  );

  api.delete(
    '/kept-data/:hostId/:instanceId',
    {
      schema: {
        tags: ['hosts'],
        summary: 'Purge the kept world and backups of one deleted instance (409 while the instance exists)',
        params: KeptParams,
      },
      config: { auth: { scope: writeScope('hosts') }, audit: { action: 'kept-data.delete', targetKind: 'host' } },
    },
    async (req) => {
      const { hostId, instanceId } = req.params as Static<typeof KeptParams>;
      auditTarget(req, hostId, { instanceId });
      return ctx.hostRemoval.purgeKeptData(hostId, instanceId);
    },
  );

  api.post(
    '/kept-data/:hostId/:instanceId/attach',
    {
      schema: {
        tags: ['hosts'],
        summary: 'Give a new, stopped instance on the same host the kept world of a deleted one',
        params: KeptParams,
        body: AttachBody,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'kept-data.attach', targetKind: 'instance' } },
    },
    async (req) => {
      const { hostId, instanceId } = req.params as Static<typeof KeptParams>;
      const target = await ctx.lifecycle.find((req.body as Static<typeof AttachBody>).instance);
      auditTarget(req, target.id, { hostId, from: instanceId });
      return ctx.hostRemoval.attachKeptData(hostId, instanceId, target);
    },
  );
}
