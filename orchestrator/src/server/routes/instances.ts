// Instances: create (placement + durable create command), list, get. The
// lifecycle engine adds power actions, logs and deletion here.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { INSTANCE_STATES, type InstanceState } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { readScope, writeScope } from '../auth/scopes.js';
import { actorOf, type ServerContext } from '../context.js';
import { IdString } from '../schemas/common.js';
import { instanceView } from '../views.js';

export const CreateInstanceBody = Type.Object(
  {
    groupId: IdString,
    variantId: IdString,
    name: Type.Optional(IdString),
    start: Type.Optional(Type.Boolean({ description: 'start the container once created (default true)' })),
  },
  { additionalProperties: false },
);
const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const ListQuery = Type.Object({
  groupId: Type.Optional(IdString),
  hostId: Type.Optional(Type.String({ maxLength: 128 })),
  state: Type.Optional(Type.Union(INSTANCE_STATES.map((s) => Type.Literal(s)))),
});

export async function instanceRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.post('/instances', {
    schema: { tags: ['instances'], summary: 'Place and create an instance (202: a create command is queued)', body: CreateInstanceBody },
    config: { auth: { scope: writeScope('instances') } },
  }, async (req, reply) => {
    const body = req.body as Static<typeof CreateInstanceBody>;
    const actor = actorOf(req);
    const { instance, command } = await ctx.instances.create(body, actor, req.id);
    await ctx.store.audit.append({
      at: ctx.clock.now(), actor, action: 'instance.create', targetKind: 'instance', targetId: instance.id,
      params: { groupId: body.groupId, variantId: body.variantId, name: instance.name, hostId: instance.hostId }, result: 'ok', errorCode: null, requestId: req.id,
    });
    return reply.status(202).send({ id: instance.id, name: instance.name, state: instance.state, hostId: instance.hostId, commandId: command.id });
  });

  api.get('/instances', {
    schema: { tags: ['instances'], summary: 'List instances', querystring: ListQuery },
    config: { auth: { scope: readScope('instances') } },
  }, async (req) => {
    const q = req.query as Static<typeof ListQuery>;
    const list = await ctx.store.instances.list({
      ...(q.groupId ? { groupId: q.groupId } : {}),
      ...(q.hostId ? { hostId: q.hostId } : {}),
      ...(q.state ? { states: [q.state as InstanceState] } : {}),
    });
    return { instances: list.map(instanceView) };
  });

  api.get('/instances/:id', {
    schema: { tags: ['instances'], summary: 'One instance (by id or name)', params: InstanceParams },
    config: { auth: { scope: readScope('instances') } },
  }, async (req) => {
    const { id } = req.params as Static<typeof InstanceParams>;
    const instance = (await ctx.store.instances.get(id)) ?? (await ctx.store.instances.getByName(id));
    if (!instance) throw new AppError('INSTANCE_NOT_FOUND', `instance ${id} does not exist`);
    return instanceView(instance);
  });
}
