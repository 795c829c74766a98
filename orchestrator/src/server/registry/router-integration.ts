// The orchestrator's side of the router contract: the registry stream,
// transfers and evacuation, session reports. The feed, the transfer service and
// the player sessions are built by the composition root (orchestrator.ts).

import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { routerSessionRoutes } from '../routes/router-sessions.js';
import { transferRoutes } from '../routes/transfers.js';
import { registryRoutes } from './registry-routes.js';

export async function routerIntegrationRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  await api.register(async (scoped) => {
    await registryRoutes(scoped, { feed: ctx.registry, logger: ctx.logger.child({ component: 'registry' }) });
    await transferRoutes(scoped, ctx, { transfers: ctx.transfers, feed: ctx.registry });
    await routerSessionRoutes(scoped, ctx);
  });
}
