// Image updates: GET /instances/:id/update-plan?image=… (resolve, check, show
// the changes) and POST /instances/:id/update (confirmed; 202 with the
// durable command id). Automatic updates are off: only this route starts one.

import { Type, type Static } from '@sinclair/typebox';
import { ImageRef, UpdateBody } from '../../contracts/public-api/bodies.js';
import type { FastifyInstance } from 'fastify';
import type { JsonObject } from '../../domain/index.js';
import { auditTarget } from '../audit.js';
import { readScope, writeScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { userActor } from '../services/lifecycle-service.js';
import { acceptedAction, paramInstance } from './route-helpers.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const PlanQuery = Type.Object({ image: ImageRef }, { additionalProperties: false });
export async function instanceUpdateRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const updates = ctx.updates;

  api.get(
    '/instances/:id/update-plan',
    {
      schema: {
        tags: ['instances'],
        summary: 'What an update to `image` would change: current and candidate images, compatibility checks, changes, warnings',
        params: InstanceParams,
        querystring: PlanQuery,
      },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const { image } = req.query as Static<typeof PlanQuery>;
      return updates.plan(id, image);
    },
  );

  api.post(
    '/instances/:id/update',
    {
      schema: {
        tags: ['instances'],
        summary: 'Update the image (confirm: true required; 202; rolls back to the previous image when the new one is not ready)',
        params: InstanceParams,
        body: UpdateBody,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.update', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const body = req.body as Static<typeof UpdateBody>;
      const instance = await paramInstance(ctx, req);
      auditTarget(req, instance.id, { image: body.image, backup: body.backup === true });
      const result = await updates.request(instance.id, body, userActor(req.principal), req.id);
      return acceptedAction(reply, instance.id, result, { plan: result.plan as unknown as JsonObject });
    },
  );
}
