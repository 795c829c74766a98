// Durable commands (read-only) and API token management (admin only).

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ADMIN_SCOPE, readScope } from '../auth/scopes.js';
import { auditTarget } from '../audit.js';
import type { ServerContext } from '../context.js';
import { TokenBody } from '../../contracts/public-api/bodies.js';
import { commandView, tokenView } from '../views.js';
import { getOneRoute } from './route-helpers.js';

const CommandParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const CommandsQuery = Type.Object({
  instanceId: Type.Optional(Type.String({ maxLength: 128 })),
  hostId: Type.Optional(Type.String({ maxLength: 128 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
});

export async function commandRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  getOneRoute(api, {
    url: '/commands/:id',
    tags: ['commands'],
    summary: 'One durable command',
    params: CommandParams,
    scope: readScope('commands'),
    load: ({ id }) => ctx.queries.command(id),
    code: 'COMMAND_NOT_FOUND',
    missing: ({ id }) => `command ${id} does not exist`,
    view: commandView,
  });

  api.get(
    '/commands',
    {
      schema: { tags: ['commands'], summary: 'Recent commands, newest first', querystring: CommandsQuery },
      config: { auth: { scope: readScope('commands') } },
    },
    async (req) => {
      const q = req.query as Static<typeof CommandsQuery>;
      return { commands: (await ctx.queries.commands({ ...q, limit: q.limit ?? 100 })).map(commandView) };
    },
  );
}

export async function tokenRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const auth = { auth: { scope: ADMIN_SCOPE } };

  api.post(
    '/tokens',
    {
      schema: { tags: ['tokens'], summary: 'Create a token (the secret is shown once)', body: TokenBody },
      config: { ...auth, audit: { action: 'token.create', targetKind: 'token' } },
    },
    async (req, reply) => {
      const body = req.body as TokenBody;
      const { token, secret } = await ctx.tokens.create(body.name, body.scopes);
      auditTarget(req, token.id, { name: token.name, scopes: token.scopes });
      return reply.status(201).send({ ...tokenView(token), secret });
    },
  );

  api.get('/tokens', { schema: { tags: ['tokens'], summary: 'List tokens (never their secrets)' }, config: auth }, async () => ({
    tokens: (await ctx.queries.tokens()).map(tokenView),
  }));

  api.delete(
    '/tokens/:id',
    {
      schema: { tags: ['tokens'], summary: 'Revoke a token', params: CommandParams },
      config: { ...auth, audit: { action: 'token.revoke', targetKind: 'token' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof CommandParams>;
      return tokenView(await ctx.tokens.revoke(id));
    },
  );
}
