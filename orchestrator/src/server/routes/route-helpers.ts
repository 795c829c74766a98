// Preambles and answers the route files share: the instance a `:id` route
// names, the host it is placed on, a host with its instance count, and the 202
// answer of an accepted instance action.

import type { Static, TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasScope, powerActionScope, type ScopeRequirement } from '../auth/scopes.js';
import { availableActions, killApplies, type PowerAction } from '../../lifecycle/actions.js';
import { userActor } from '../services/lifecycle-service.js';
import type { Host, Instance } from '../../domain/index.js';
import { AppError, type ErrorCode } from '../../shared/errors.js';
import type { ServerContext } from '../context.js';
import { hiddenFrom, type HiddenValues } from '../../eggs/variable-access.js';
import { hostView } from '../views.js';

/** The instance (by id or name) named by the `:id` parameter; INSTANCE_NOT_FOUND otherwise. The route's schema has checked the parameter. */
export function paramInstance(ctx: ServerContext, req: FastifyRequest): Promise<Instance> {
  return ctx.lifecycle.find((req.params as { id: string }).id);
}

/** What the caller may not see of instances of one group variant (hidden variables), asked once per variant. */
export function hiddenForCaller(ctx: ServerContext, req: FastifyRequest): (instance: Instance) => Promise<HiddenValues> {
  const byVariant = new Map<string, Promise<HiddenValues>>();
  return (instance) => {
    const key = `${instance.groupId}\u0000${instance.variantId}`;
    let hidden = byVariant.get(key);
    if (!hidden) {
      hidden = ctx.lifecycle.templateOf(instance).then((template) => hiddenFrom(req.principal, template));
      byVariant.set(key, hidden);
    }
    return hidden;
  };
}

/**
 * The power actions the caller may run on an instance now (the view's `actions`):
 * those its scopes reach (the action routes' own requirements), then what
 * checkAction would dispatch. Global maintenance is read once per request.
 */
export function actionsForCaller(ctx: ServerContext, req: FastifyRequest): (instance: Instance) => Promise<(PowerAction | 'kill')[]> {
  const scopes = req.principal?.scopes ?? [];
  const actor = userActor(req.principal);
  const context = ctx.lifecycle.globalMaintenance().then((globalMaintenance) => ({ globalMaintenance }));
  return async (instance) => {
    const resolved = await context;
    const allowed: (PowerAction | 'kill')[] = availableActions(instance, actor, resolved);
    if (killApplies(instance, actor, resolved)) allowed.push('kill');
    return allowed.filter((action) => hasScope(scopes, powerActionScope(action)));
  };
}

/** The registered host the instance is placed on, or undefined (not placed, or the host is gone). */
export async function hostOfInstance(ctx: ServerContext, instance: Instance): Promise<Host | undefined> {
  return instance.hostId ? ctx.queries.host(instance.hostId) : undefined;
}

/** A host as GET /hosts/:id shows it: with the number of instances placed on it. */
export async function hostAnswer(ctx: ServerContext, host: Host): Promise<ReturnType<typeof hostView>> {
  const counts = await ctx.queries.instanceCountsByHost();
  return hostView(host, counts[host.id] ?? 0);
}

/** 202 for an instance action the worker will carry out: the instance, its command and its state now, plus what the route adds. */
export function acceptedAction(
  reply: FastifyReply,
  instanceId: string,
  result: { commandId: string | null; state: string },
  extra: Record<string, unknown> = {},
): FastifyReply {
  return reply.status(202).send({ id: instanceId, commandId: result.commandId, state: result.state, ...extra });
}

/** The value a route looked up, or its not-found error (`code`, `message`) when there is none. */
export function found<T>(value: T | undefined | null, code: ErrorCode, message: string): T {
  if (!value) throw new AppError(code, message);
  return value;
}

/**
 * A read-one route: GET `url`, the record `load` finds for its parameters
 * shown through `view`, or `code` with `missing`'s message when there is none.
 */
export function getOneRoute<P extends TSchema, T>(
  api: FastifyInstance,
  o: {
    url: string;
    tags: string[];
    summary: string;
    params: P;
    scope: ScopeRequirement;
    load: (params: Static<P>) => Promise<T | undefined>;
    code: ErrorCode;
    missing: (params: Static<P>) => string;
    view: (record: T) => unknown;
  },
): void {
  api.get(o.url, { schema: { tags: o.tags, summary: o.summary, params: o.params }, config: { auth: { scope: o.scope } } }, async (req) => {
    const params = req.params as Static<P>;
    return o.view(found(await o.load(params), o.code, o.missing(params)));
  });
}

/** A list route: GET `url` with an optional query, answered as `{ [key]: records.map(view) }`. */
export function listRoute<Q extends TSchema, T>(
  api: FastifyInstance,
  o: {
    url: string;
    tags: string[];
    summary: string;
    querystring: Q;
    scope: ScopeRequirement;
    key: string;
    load: (query: Static<Q>) => Promise<T[]>;
    view: (record: T) => unknown;
  },
): void {
  api.get(
    o.url,
    { schema: { tags: o.tags, summary: o.summary, querystring: o.querystring }, config: { auth: { scope: o.scope } } },
    async (req) => ({
      [o.key]: (await o.load(req.query as Static<Q>)).map(o.view),
    }),
  );
}
