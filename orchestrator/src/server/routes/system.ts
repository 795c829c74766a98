// Liveness and readiness, for load balancers and `ectl system`. /health is
// liveness: cheap, never touches the database (a replica that answers it is
// running), and says who leads as this replica last saw it. /ready is
// readiness: 503 DATABASE_UNAVAILABLE when the database does not answer within
// ENDERCLOUD_READY_TIMEOUT, so a balancer stops sending heartbeats and API
// calls to a replica that cannot store them.

import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';

export async function systemRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.get(
    '/health',
    {
      schema: { tags: ['meta'], summary: 'Liveness (no database read): version, dialect, this node, the leader and its epoch' },
      config: { auth: { public: true } },
    },
    async () => ({
      status: 'ok',
      version: ctx.version,
      database: ctx.queries.dialect,
      node: ctx.nodeId,
      leader: ctx.leadership.leader(),
    }),
  );
  api.get(
    '/ready',
    {
      schema: {
        tags: ['meta'],
        summary: 'Readiness: the database answers a query within ENDERCLOUD_READY_TIMEOUT (503 DATABASE_UNAVAILABLE otherwise)',
      },
      config: { auth: { public: true } },
    },
    async () => ctx.readiness.check(),
  );
}
