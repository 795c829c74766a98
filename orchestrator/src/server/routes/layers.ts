// Template layers: upload (gzip tar body, streamed and checked), list, and the
// archive download agents use to fill their cache.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import { AppError } from '../../shared/errors.js';
import { readScope, writeScope } from '../auth/scopes.js';
import { auditTarget } from '../audit.js';
import type { ServerContext } from '../context.js';
import { IdParams, IdString, Sha256String } from '../schemas/common.js';
import { layerView } from '../views.js';
import { listRoute } from './route-helpers.js';

const ArchiveQuery = Type.Object({ checksum: Sha256String });
const ListQuery = Type.Object({ id: Type.Optional(IdString) });
const DeleteQuery = Type.Object({ checksum: Type.Optional(Sha256String) });
const ARCHIVE_TYPES = ['application/gzip', 'application/x-gzip', 'application/octet-stream', 'application/x-tar+gzip'];

export async function layerRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  // The body stays a stream: the layer store bounds and checks it while writing.
  api.addContentTypeParser(ARCHIVE_TYPES, (req, payload, done) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > ctx.layers.maxArchiveBytes) {
      done(
        new AppError(
          'ARCHIVE_TOO_LARGE',
          `layer archive of ${declared} bytes is larger than the limit of ${ctx.layers.maxArchiveBytes} bytes`,
        ),
        undefined,
      );
      return;
    }
    done(null, payload);
  });

  api.put(
    '/template-layers/:id',
    {
      schema: { tags: ['layers'], summary: 'Upload a layer (gzip tar); answers its canonical checksum', params: IdParams },
      config: { auth: { scope: writeScope('layers') }, audit: { action: 'layer.upload', targetKind: 'layer' } },
    },
    async (req, reply) => {
      const { id } = req.params as Static<typeof IdParams>;
      if (!req.body || typeof (req.body as Readable).pipe !== 'function') {
        throw new AppError('VALIDATION_FAILED', `send the layer as a gzip tar with content-type ${ARCHIVE_TYPES.slice(0, 2).join(' or ')}`);
      }
      const { layer, created } = await ctx.layers.upload(id, req.body as Readable);
      auditTarget(req, id, { checksum: layer.checksum, sizeBytes: layer.sizeBytes, created });
      return reply.status(created ? 201 : 200).send({ id: layer.id, checksum: layer.checksum, sizeBytes: layer.sizeBytes, created });
    },
  );

  listRoute(api, {
    url: '/template-layers',
    tags: ['layers'],
    summary: 'List layers (every checksum of every id)',
    querystring: ListQuery,
    scope: readScope('layers'),
    key: 'layers',
    load: ({ id }) => ctx.queries.layers(id ? { id } : {}),
    view: layerView,
  });

  api.delete(
    '/template-layers/:id',
    {
      schema: {
        tags: ['layers'],
        summary: 'Delete a layer (every checksum, or ?checksum=); 409 while a template, variant or instance references it',
        params: IdParams,
        querystring: DeleteQuery,
      },
      config: { auth: { scope: writeScope('layers') }, audit: { action: 'layer.delete', targetKind: 'layer' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof IdParams>;
      const { checksum } = req.query as Static<typeof DeleteQuery>;
      auditTarget(req, id, checksum ? { checksum } : {});
      return { deleted: (await ctx.layers.remove(id, checksum)).map(layerView) };
    },
  );

  api.post(
    '/template-layers/prune',
    {
      schema: { tags: ['layers'], summary: 'Delete every layer checksum nothing references' },
      config: { auth: { scope: writeScope('layers') }, audit: { action: 'layer.prune', targetKind: 'layer' } },
    },
    async (req) => {
      const deleted = await ctx.layers.prune();
      auditTarget(req, '*', { deleted: deleted.map((l) => `${l.id}@${l.checksum}`) });
      return { deleted: deleted.map(layerView) };
    },
  );

  api.get(
    '/template-layers/:id/archive',
    {
      schema: {
        tags: ['layers'],
        summary: 'Download one layer archive (agent token or layers:read)',
        params: IdParams,
        querystring: ArchiveQuery,
      },
      config: { auth: { agent: true, orScope: readScope('layers') } },
    },
    async (req, reply) => {
      const { id } = req.params as Static<typeof IdParams>;
      const { checksum } = req.query as Static<typeof ArchiveQuery>;
      const { stream, sizeBytes } = await ctx.layers.open(id, checksum);
      return reply.type('application/gzip').header('content-length', sizeBytes).send(stream);
    },
  );
}
