// Router session reports: POST /router/sessions (applied by the player-sessions
// service) and GET /instances/:id/players, who is on an instance.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ContractError, parseRouterSessionsBatch, type RouterSessionsBatch } from '../../protocol/registry-contract.js';
import { AppError } from '../../shared/errors.js';
import { ROUTER_ACCESS, readScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });

export async function routerSessionRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.post(
    '/router/sessions',
    {
      schema: { tags: ['router'], summary: 'Router session reports (login, denied, disconnect); idempotent, 204' },
      // Batched every second while players come and go: debug unless refused (shared/request-log.ts).
      config: { auth: { scope: ROUTER_ACCESS }, quietLog: true },
    },
    async (req, reply) => {
      let batch: RouterSessionsBatch;
      try {
        batch = parseRouterSessionsBatch(req.body);
      } catch (err) {
        if (err instanceof ContractError) throw new AppError('VALIDATION_FAILED', err.message);
        throw err;
      }
      const { closed } = await ctx.playerSessions.applyBatch(batch);
      if (closed > 0) req.log.info({ routerId: batch.routerId, closed }, 'router reset: closed its stale sessions');
      if (batch.reset || batch.events.length > 0) ctx.registry.kick(); // player counts changed
      return reply.status(204).send();
    },
  );

  api.get(
    '/instances/:id/players',
    {
      schema: {
        tags: ['instances', 'router'],
        summary: 'Players on an instance: router reports and the last probe',
        params: InstanceParams,
      },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const instance = await ctx.lifecycle.find(id);
      const { online, routerReported, probe, sessions } = await ctx.playerSessions.onInstance(instance);
      return {
        instanceId: instance.id,
        online,
        routerReported,
        probe: probe ? { online: probe.online, max: probe.max, at: new Date(probe.at).toISOString() } : null,
        players: sessions.map((s) => ({
          name: s.playerName,
          uuid: s.playerUuid,
          routerId: s.routerId,
          connectedAt: new Date(s.connectedAt).toISOString(),
        })),
      };
    },
  );
}
