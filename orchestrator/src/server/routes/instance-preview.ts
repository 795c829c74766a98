// POST /instances/preview: the canonical deployment preview of a create body,
// shown before anything is written (creation step 5, docs/lifecycle.md "Creating an instance").

import type { Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { writeScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { CreateInstanceBody } from '../../contracts/public-api/bodies.js';

export async function instancePreviewRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const previewer = ctx.previewer;
  api.post(
    '/instances/preview',
    {
      schema: {
        tags: ['instances'],
        summary: 'What POST /instances with this body would create (resolved config, redacted env, placement, caps left); writes nothing',
        body: CreateInstanceBody,
      },
      config: { auth: { scope: writeScope('instances') } },
    },
    async (req) => previewer.preview(req.body as Static<typeof CreateInstanceBody>, req.principal),
  );
}
