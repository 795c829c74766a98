// The orchestrator's side of the router contract, as one Fastify plugin: the
// registry feed and stream, transfers and evacuation, session reports. Built
// from the ServerContext so app.ts registers it with one line; the feed's poll
// loop lives and dies with the app.

import type { FastifyInstance } from 'fastify';
import { AgentClient } from '../agent-client.js';
import type { ServerContext } from '../context.js';
import { routerSessionRoutes } from '../routes/router-sessions.js';
import { transferRoutes } from '../routes/transfers.js';
import { changesOf } from './change-notifier.js';
import { RegistryFeed } from './registry-feed.js';
import { registryRoutes } from './registry-routes.js';
import { TransferService } from './transfer-service.js';

/** RCON calls are quick; do not inherit the agent timeout sized for image pulls. */
const RCON_CALL_TIMEOUT_MS = 15_000;

export interface RouterIntegrationOptions {
  /** Tests shorten these; production uses the contract's 15 s keepalive and the feed's default poll. */
  keepaliveMs?: number;
  pollIntervalMs?: number;
  fetch?: typeof fetch;
  /** Receives the feed (tests and the benchmark watch revisions). */
  onFeed?: (feed: RegistryFeed) => void;
}

export async function routerIntegrationRoutes(api: FastifyInstance, ctx: ServerContext, opts: RouterIntegrationOptions = {}): Promise<void> {
  await api.register(async (scoped) => {
    const logger = ctx.logger.child({ component: 'registry' });
    // The store built by orchestrator.ts announces its writes: the feed refreshes on them, not on a poll.
    const changes = changesOf(ctx.store);
    const feed = new RegistryFeed({
      store: ctx.store, clock: ctx.clock, logger, ...(changes ? { changes } : {}), ...(opts.pollIntervalMs !== undefined ? { pollIntervalMs: opts.pollIntervalMs } : {}),
    });
    opts.onFeed?.(feed);
    scoped.addHook('onClose', async () => feed.close());
    const agents = new AgentClient({ fetch: opts.fetch ?? globalThis.fetch, token: ctx.config.agentToken, timeoutMs: Math.min(RCON_CALL_TIMEOUT_MS, ctx.config.agentRequestTimeoutMs) });
    const transfers = new TransferService({ store: ctx.store, clock: ctx.clock, logger: ctx.logger.child({ component: 'transfers' }), feed, agents, routerAddress: ctx.config.routerPublicAddress });
    await registryRoutes(scoped, { feed, logger, ...(opts.keepaliveMs !== undefined ? { keepaliveMs: opts.keepaliveMs } : {}) });
    await transferRoutes(scoped, ctx, { transfers, feed });
    await routerSessionRoutes(scoped, ctx, { feed });
  });
}
