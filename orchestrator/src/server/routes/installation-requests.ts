// Installation requests (docs/orchestrator.md "Installation requests"): a user
// with `instances:request` asks for an instance; an administrator previews the
// suggested values and approves or rejects (InstallationRequestService).

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { InstallationRequest, JsonObject } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { auditTarget } from '../audit.js';
import { hasScope, MANAGER_SCOPE, REQUEST_ACCESS } from '../auth/scopes.js';
import { actorOf, type ServerContext } from '../context.js';
import { IdString } from '../schemas/common.js';

const Settings = Type.Object({}, { additionalProperties: true, description: 'suggested settings, reviewed by the administrator' });
const Note = Type.String({ maxLength: 2000 });
const CreateBody = Type.Object(
  {
    groupId: IdString,
    variantId: IdString,
    name: Type.Optional(IdString),
    suggested: Type.Optional(
      Type.Object({ settings: Type.Optional(Settings), note: Type.Optional(Note) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);
const ApproveBody = Type.Object(
  { name: Type.Optional(IdString), settings: Type.Optional(Settings), note: Type.Optional(Note) },
  { additionalProperties: false },
);
const RejectBody = Type.Object({ note: Note }, { additionalProperties: false });
const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const ListQuery = Type.Object({
  status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('rejected')])),
});

const PATH = '/installation-requests';

function seesAll(req: FastifyRequest): boolean {
  return hasScope(req.principal?.scopes ?? [], MANAGER_SCOPE);
}

/** Requesters see only their own requests; another's is "not found" so ids leak nothing. */
async function visible(ctx: ServerContext, req: FastifyRequest, id: string): Promise<InstallationRequest> {
  const found = await ctx.installationRequests.get(id);
  if (!found || (!seesAll(req) && found.requestedBy !== actorOf(req)))
    throw new AppError('NOT_FOUND', `installation request ${id} does not exist`);
  return found;
}

export async function installationRequestRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const previewer = ctx.previewer;

  api.post(
    PATH,
    {
      schema: {
        tags: ['installation-requests'],
        summary: 'Ask for an instance (201 pending; an administrator reviews and approves or rejects)',
        body: CreateBody,
      },
      config: { auth: { scope: REQUEST_ACCESS }, audit: { action: 'installation-request.create', targetKind: 'installation-request' } },
    },
    async (req, reply) => {
      const body = req.body as Static<typeof CreateBody>;
      const suggested = {
        ...(body.suggested?.settings ? { settings: body.suggested.settings as JsonObject } : {}),
        ...(body.suggested?.note !== undefined ? { note: body.suggested.note } : {}),
      };
      const created = await ctx.installationRequests.ask({
        requestedBy: actorOf(req),
        groupId: body.groupId,
        variantId: body.variantId,
        ...(body.name !== undefined ? { name: body.name } : {}),
        suggested,
      });
      auditTarget(req, created.id, { groupId: created.groupId, variantId: created.variantId, name: created.name });
      return reply.status(201).send(created);
    },
  );

  api.get(
    PATH,
    {
      schema: {
        tags: ['installation-requests'],
        summary: 'Installation requests (requesters: their own; administrators and managers: all), oldest first',
        querystring: ListQuery,
      },
      config: { auth: { scope: REQUEST_ACCESS } },
    },
    async (req) => {
      const { status } = req.query as Static<typeof ListQuery>;
      const list = await ctx.installationRequests.list({
        ...(status ? { status } : {}),
        ...(seesAll(req) ? {} : { requestedBy: actorOf(req) }),
      });
      return { requests: list };
    },
  );

  api.get(
    `${PATH}/:id`,
    {
      schema: { tags: ['installation-requests'], summary: 'One installation request', params: Params },
      config: { auth: { scope: REQUEST_ACCESS } },
    },
    async (req) => visible(ctx, req, (req.params as Static<typeof Params>).id),
  );

  api.get(
    `${PATH}/:id/preview`,
    {
      schema: {
        tags: ['installation-requests'],
        summary: 'The deployment preview of the suggested values (what approving would create now); writes nothing',
        params: Params,
      },
      config: { auth: { scope: MANAGER_SCOPE } },
    },
    async (req) => {
      const r = await visible(ctx, req, (req.params as Static<typeof Params>).id);
      return {
        request: r,
        preview: await previewer.preview({ groupId: r.groupId, variantId: r.variantId, ...(r.name ? { name: r.name } : {}) }),
      };
    },
  );

  api.post(
    `${PATH}/:id/approve`,
    {
      schema: {
        tags: ['installation-requests'],
        summary: 'Approve with the reviewed values: runs the normal creation path (validation, caps, placement)',
        params: Params,
        body: ApproveBody,
      },
      config: { auth: { scope: MANAGER_SCOPE }, audit: { action: 'installation-request.approve', targetKind: 'installation-request' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof Params>;
      const body = (req.body ?? {}) as Static<typeof ApproveBody>;
      const r = await visible(ctx, req, id);
      // The creation path takes no settings yet (InstanceCreator builds them from defaults): refuse rather than drop them silently.
      if (body.settings !== undefined && Object.keys(body.settings).length > 0) {
        throw new AppError(
          'VALIDATION_FAILED',
          'body/settings: settings cannot be applied at creation yet; approve without them and change them with PATCH /instances/:id/settings',
          { details: { field: 'settings' } },
        );
      }
      // One transaction: a refused creation (caps, capacity, name taken) leaves the request pending to retry.
      const {
        request: decided,
        instance,
        command,
      } = await ctx.installationRequests.approve(id, {
        decidedBy: actorOf(req),
        requestId: req.id,
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.note !== undefined ? { note: body.note } : {}),
      });
      auditTarget(req, id, {
        instanceId: instance.id,
        name: instance.name,
        groupId: r.groupId,
        variantId: r.variantId,
        requestedBy: r.requestedBy,
      });
      return {
        request: decided,
        instance: { id: instance.id, name: instance.name, state: instance.state, hostId: instance.hostId, commandId: command.id },
      };
    },
  );

  api.post(
    `${PATH}/:id/reject`,
    {
      schema: { tags: ['installation-requests'], summary: 'Reject with a note; nothing is created', params: Params, body: RejectBody },
      config: { auth: { scope: MANAGER_SCOPE }, audit: { action: 'installation-request.reject', targetKind: 'installation-request' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof Params>;
      const { note } = req.body as Static<typeof RejectBody>;
      await visible(ctx, req, id);
      return { request: await ctx.installationRequests.reject(id, { decidedBy: actorOf(req), note }) };
    },
  );
}
