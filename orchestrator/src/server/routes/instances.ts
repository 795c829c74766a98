// Instances: create (placement + durable create command), list, get, history,
// revisions and logs. Actions live in instance-actions.ts, admin in instance-admin.ts.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { INSTANCE_STATES, type InstanceState } from '../../domain/index.js';
import { hiddenFrom } from '../../eggs/variable-access.js';
import { AppError } from '../../shared/errors.js';
import { readScope, writeScope } from '../auth/scopes.js';
import type { JsonObject } from '../../domain/index.js';
import { auditTarget } from '../audit.js';
import { actorOf, type ServerContext } from '../context.js';
import { CreateInstanceBody } from '../../contracts/public-api/bodies.js';
import { LOG_CONTAINER_HEADER } from '../../contracts/public-api/panel-rules.js';
import { IdString } from '../schemas/common.js';
import { historyView, instanceView, revisionView } from '../views.js';
import { actionsForCaller, hiddenForCaller, hostOfInstance, paramInstance } from './route-helpers.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const HistoryQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) });
const LogsQuery = Type.Object({
  tail: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  follow: Type.Optional(
    Type.Boolean({
      description:
        'stream: the last `tail` lines, then each line as it is written, as chunked text/plain until the client disconnects or the container stops',
    }),
  ),
});
const ListQuery = Type.Object({
  groupId: Type.Optional(IdString),
  hostId: Type.Optional(Type.String({ maxLength: 128 })),
  state: Type.Optional(Type.Union(INSTANCE_STATES.map((s) => Type.Literal(s)))),
});

export async function instanceRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.post(
    '/instances',
    {
      schema: { tags: ['instances'], summary: 'Place and create an instance (202: a create command is queued)', body: CreateInstanceBody },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.create', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const body = req.body as Static<typeof CreateInstanceBody>;
      const actor = actorOf(req);
      const { instance, command } = await ctx.instances.create(body, actor, req.id, req.principal);
      auditTarget(req, instance.id, {
        groupId: body.groupId,
        variantId: body.variantId,
        name: instance.name,
        hostId: instance.hostId,
        start: body.start ?? true,
        user: instance.user as unknown as JsonObject,
        ...(body.settings ? { settings: Object.keys(body.settings).sort() } : {}),
        ...(body.secrets ? { secrets: Object.keys(body.secrets).sort() } : {}),
        ...(body.image !== undefined ? { image: instance.containerConfig.image } : {}),
      });
      return reply
        .status(202)
        .send({ id: instance.id, name: instance.name, state: instance.state, hostId: instance.hostId, commandId: command.id });
    },
  );

  api.get(
    '/instances',
    {
      schema: { tags: ['instances'], summary: 'List instances', querystring: ListQuery },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const q = req.query as Static<typeof ListQuery>;
      const list = await ctx.queries.instances({
        ...(q.groupId ? { groupId: q.groupId } : {}),
        ...(q.hostId ? { hostId: q.hostId } : {}),
        ...(q.state ? { states: [q.state as InstanceState] } : {}),
      });
      const hidden = hiddenForCaller(ctx, req);
      const actions = actionsForCaller(ctx, req);
      return { instances: await Promise.all(list.map(async (i) => instanceView(i, undefined, await hidden(i), await actions(i)))) };
    },
  );

  api.get(
    '/instances/:id',
    {
      schema: {
        tags: ['instances'],
        summary:
          'One instance (by id or name): state, desiredState, observedState, players, pendingChanges, crashLoop, actions (the power actions the caller may run now)',
        params: InstanceParams,
      },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const instance = await paramInstance(ctx, req);
      const template = await ctx.lifecycle.templateOf(instance);
      const actions = await actionsForCaller(ctx, req)(instance);
      return instanceView(
        instance,
        { policy: ctx.lifecycle.crashPolicy(template), now: ctx.clock.now() },
        hiddenFrom(req.principal, template),
        actions,
      );
    },
  );

  api.get(
    '/instances/:id/history',
    {
      schema: {
        tags: ['instances'],
        summary: 'State changes with their reasons, newest first',
        params: InstanceParams,
        querystring: HistoryQuery,
      },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const { limit } = req.query as Static<typeof HistoryQuery>;
      const instance = await paramInstance(ctx, req);
      return { instanceId: instance.id, history: (await ctx.queries.history(instance.id, limit ?? 100)).map(historyView) };
    },
  );

  api.get(
    '/instances/:id/revisions',
    {
      schema: { tags: ['instances'], summary: 'Immutable configuration revisions (newest 20, secrets redacted)', params: InstanceParams },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const instance = await paramInstance(ctx, req);
      const hidden = await hiddenForCaller(ctx, req)(instance);
      return { instanceId: instance.id, revisions: (await ctx.queries.revisions(instance.id)).map((r) => revisionView(r, hidden)) };
    },
  );

  api.get(
    '/instances/:id/logs',
    {
      schema: {
        tags: ['instances'],
        summary: 'The container output (last `tail` lines, through the agent); follow=true streams it',
        params: InstanceParams,
        querystring: LogsQuery,
      },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req, reply) => {
      const { tail, follow } = req.query as Static<typeof LogsQuery>;
      const instance = await paramInstance(ctx, req);
      const host = await hostOfInstance(ctx, instance);
      if (!host) throw new AppError('HOST_UNAVAILABLE', `instance ${instance.name} is on no registered host`);
      if (host.status === 'OFFLINE') throw new AppError('HOST_UNAVAILABLE', `host ${host.id} is OFFLINE; its logs cannot be read`);
      if (follow) {
        // A client that leaves while the host is still answering aborts the host call; once piped,
        // Fastify destroys the stream when the client goes, which closes it at the host.
        const gone = new AbortController();
        const leave = (): void => gone.abort();
        reply.raw.once('close', leave);
        // Which container this log is (the panel keeps an earlier container's lines above a marker). Read before the
        // follow: a replacement between the two is named by the next follow. No container: the follow answers that.
        const container = await ctx.driver
          .inspect(host, instance.id, { requestId: req.id })
          .then((d) => d.containerId)
          .catch(() => undefined);
        const stream = await ctx.driver.followLogs(host, instance.id, { tail: tail ?? 100 }, gone.signal, { requestId: req.id });
        reply.raw.off('close', leave);
        if (container) reply.header(LOG_CONTAINER_HEADER, container);
        return reply
          .type('text/plain; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('x-content-type-options', 'nosniff')
          .send(stream);
      }
      const text = await ctx.driver.logs(host, instance.id, { tail: tail ?? 100 }, { requestId: req.id });
      return reply.type('text/plain; charset=utf-8').send(text);
    },
  );
}
