// GET /instances/:id/stats: the last 10 minutes of one instance's CPU, memory
// and network samples, kept in memory by the stats loop (services/instance-stats.ts),
// for the panel's console graphs; `?follow=true` streams them (server-sent
// events: the history, then each new sample), so the browser never polls.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { readScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { paramInstance } from './route-helpers.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const StatsQuery = Type.Object({
  follow: Type.Optional(
    Type.Boolean({ default: false, description: 'text/event-stream: `stats` (the history) on connect, then one `sample` per new point' }),
  ),
});
const KEEPALIVE_MS = 15_000;

export async function instanceStatsRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const streams = new Set<() => void>();
  // Open streams end first at shutdown: they never hold up app.close().
  api.addHook('preClose', async () => {
    for (const end of [...streams]) end();
  });
  api.get(
    '/instances/:id/stats',
    {
      schema: {
        tags: ['instances'],
        params: InstanceParams,
        querystring: StatsQuery,
        summary:
          'The last 10 minutes of CPU (% of one core), memory and network counters, one sample per ENDERCLOUD_STATS_INTERVAL, oldest first (in memory: empty after a restart, while stopped, or with the loop off); follow=true streams them',
      },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req, reply) => {
      const instance = await paramInstance(ctx, req);
      const stats = ctx.metrics.instanceStats;
      const history = stats?.history(instance.id) ?? { intervalMs: 0, samples: [] };
      if (!(req.query as Static<typeof StatsQuery>).follow || !stats) return history;
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'x-request-id': String(req.id),
      });
      res.write(`retry: 5000\n\nevent: stats\ndata: ${JSON.stringify(history)}\n\n`);
      const unsubscribe = stats.onSample((id, point) => {
        if (id === instance.id) res.write(`event: sample\ndata: ${JSON.stringify(point)}\n\n`);
      });
      const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
      keepalive.unref();
      let ended = false;
      const end = (): void => {
        if (ended) return;
        ended = true;
        unsubscribe();
        clearInterval(keepalive);
        streams.delete(end);
        res.end();
      };
      streams.add(end);
      req.raw.on('close', end);
      res.on('error', end);
    },
  );
}
