// Router session reports: POST /router/sessions applies login/denied/disconnect
// batches idempotently on (routerId, id, type) — the router retries batches —
// and GET /instances/:id/players shows who is on an instance.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { PlayerSession } from '../../domain/index.js';
import { ContractError, parseRouterSessionsBatch, type RouterSessionEvent, type RouterSessionsBatch } from '../../protocol/registry-contract.js';
import { AppError, isAppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import { ROUTER_ACCESS, readScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import type { RegistryFeed } from '../registry/registry-feed.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });

/** Store key of a router's session: router ids are unique per router, session ids per router. */
export const playerSessionKey = (routerId: string, id: string): string => `${routerId}/${id}`;

/** A duplicate insert means the event was applied before (a retried batch): not an error. */
async function openOnce(store: Store, session: PlayerSession): Promise<void> {
  try {
    await store.playerSessions.open(session);
  } catch (err) {
    if (!(isAppError(err) && err.code === 'CONFLICT')) throw err;
  }
}

async function applyEvent(store: Store, routerId: string, e: RouterSessionEvent): Promise<void> {
  const id = playerSessionKey(routerId, e.id);
  const at = Date.parse(e.at);
  if (e.type === 'disconnect') {
    // Closing an already closed (or never seen) session changes nothing: idempotent.
    await store.playerSessions.close(id, at, e.reason ?? null);
    return;
  }
  await openOnce(store, {
    id, routerId, playerName: e.player, playerUuid: e.uuid, instanceId: e.instanceId, clientAddress: null,
    status: e.type === 'login' ? 'active' : 'denied', reason: e.reason ?? null, connectedAt: at, disconnectedAt: e.type === 'denied' ? at : null,
  });
}

/**
 * Applies one batch: `reset` first closes every open session of the router (it
 * restarted) — except the logins this very batch carries, since a retried reset
 * batch whose first delivery was applied must not close them for good.
 */
export async function applySessionsBatch(store: Store, batch: RouterSessionsBatch, now: number): Promise<{ closed: number }> {
  let closed = 0;
  if (batch.reset) {
    const carried = new Set(batch.events.filter((e) => e.type === 'login').map((e) => playerSessionKey(batch.routerId, e.id)));
    for (const s of await store.playerSessions.listActive({ routerId: batch.routerId })) {
      if (carried.has(s.id)) continue;
      await store.playerSessions.close(s.id, now, 'router restarted');
      closed += 1;
    }
  }
  for (const e of batch.events) await applyEvent(store, batch.routerId, e);
  return { closed };
}

export async function routerSessionRoutes(api: FastifyInstance, ctx: ServerContext, deps: { feed: RegistryFeed }): Promise<void> {
  api.post('/router/sessions', {
    schema: { tags: ['router'], summary: 'Router session reports (login, denied, disconnect); idempotent, 204' },
    config: { auth: { scope: ROUTER_ACCESS } },
  }, async (req, reply) => {
    let batch: RouterSessionsBatch;
    try {
      batch = parseRouterSessionsBatch(req.body);
    } catch (err) {
      if (err instanceof ContractError) throw new AppError('VALIDATION_FAILED', err.message);
      throw err;
    }
    const { closed } = await applySessionsBatch(ctx.store, batch, ctx.clock.now());
    if (closed > 0) req.log.info({ routerId: batch.routerId, closed }, 'router reset: closed its stale sessions');
    if (batch.reset || batch.events.length > 0) deps.feed.kick(); // player counts changed
    return reply.status(204).send();
  });

  api.get('/instances/:id/players', {
    schema: { tags: ['instances', 'router'], summary: 'Players on an instance: router reports and the last probe', params: InstanceParams },
    config: { auth: { scope: readScope('instances') } },
  }, async (req) => {
    const { id } = req.params as Static<typeof InstanceParams>;
    const instance = (await ctx.store.instances.get(id)) ?? (await ctx.store.instances.getByName(id));
    if (!instance) throw new AppError('INSTANCE_NOT_FOUND', `instance ${id} does not exist`);
    const sessions = await ctx.store.playerSessions.listActive({ instanceId: instance.id });
    const probe = instance.players;
    return {
      instanceId: instance.id,
      online: Math.max(sessions.length, probe?.online ?? 0),
      routerReported: sessions.length,
      probe: probe ? { online: probe.online, max: probe.max, at: new Date(probe.at).toISOString() } : null,
      players: sessions.map((s) => ({ name: s.playerName, uuid: s.playerUuid, routerId: s.routerId, connectedAt: new Date(s.connectedAt).toISOString() })),
    };
  });
}
