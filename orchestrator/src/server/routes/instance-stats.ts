// GET /instances/:id/stats: the last 10 minutes of one instance's CPU, memory
// and network samples, kept in memory by the stats loop (services/instance-stats.ts),
// for the panel's console graphs.

import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { readScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { paramInstance } from './route-helpers.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });

export async function instanceStatsRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.get('/instances/:id/stats', {
    schema: {
      tags: ['instances'], params: InstanceParams,
      summary: 'The last 10 minutes of CPU (% of one core), memory and network counters, one sample per ENDERCLOUD_STATS_INTERVAL, oldest first (in memory: empty after a restart, while stopped, or with the loop off)',
    },
    config: { auth: { scope: readScope('instances') } },
  }, async (req) => {
    const instance = await paramInstance(ctx, req);
    const history = ctx.metrics.instanceStats?.history(instance.id);
    return history ?? { intervalMs: 0, samples: [] };
  });
}
