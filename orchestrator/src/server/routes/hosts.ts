// Hosts: agent heartbeats, host views, maintenance and unclaimed containers.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../shared/errors.js';
import { auditTarget } from '../audit.js';
import { readScope, writeScope } from '../auth/scopes.js';
import { actorOf, type ServerContext } from '../context.js';
import { HeartbeatBody } from '../services/heartbeat-input.js';
import { AgentIdString, IdString } from '../schemas/common.js';
import { MaintenanceBody } from '../../contracts/public-api/bodies.js';
import { hostView, instanceView } from '../views.js';
import { getOneRoute, hostAnswer } from './route-helpers.js';

const AgentParams = Type.Object({ agentId: AgentIdString });
const HostParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const UnclaimedParams = Type.Object({ id: HostParams.properties.id, instanceId: Type.String({ minLength: 1, maxLength: 256 }) });
const DeleteHostQuery = Type.Object({ forget: Type.Optional(Type.Boolean({ default: false })) });
const DeleteUnclaimedQuery = Type.Object({ deleteData: Type.Optional(Type.Boolean({ default: false })) });
const AdoptBody = Type.Object({ groupId: IdString, variantId: IdString, name: Type.Optional(IdString) }, { additionalProperties: false });
const HostsQuery = Type.Object({
  status: Type.Optional(Type.Union(['ONLINE', 'RECOVERING', 'OFFLINE', 'MAINTENANCE'].map((s) => Type.Literal(s)))),
});

export async function hostRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const adoption = ctx.adoption;

  api.post(
    '/agents/:agentId/heartbeat',
    {
      schema: {
        tags: ['hosts'],
        summary: "Agent heartbeat (the host's own credential, or the legacy shared agent token); never moves a known host's controlUrl",
        params: AgentParams,
        body: HeartbeatBody,
      },
      config: { auth: { agent: true, anonymousWhenNoAgentToken: true }, quietLog: true },
    },
    async (req) => {
      const { agentId } = req.params as Static<typeof AgentParams>;
      const principal = req.principal;
      // A host credential is bound to its own agent id: it never beats (or moves) another host.
      if (principal?.kind === 'host' && principal.agentId !== agentId)
        throw new AppError('FORBIDDEN', `the host credential of ${principal.agentId ?? '?'} cannot heartbeat as agent ${agentId}`);
      try {
        return await ctx.hosts.heartbeat(agentId, req.body as Static<typeof HeartbeatBody>, { hostCredential: principal?.kind === 'host' });
      } catch (err) {
        // A beat that tries to move a known host is refused and leaves an audit entry (possible takeover).
        if (err instanceof AppError && err.details?.reason === 'control-url-pinned') {
          await ctx.auditLog
            .append({
              at: ctx.clock.now(),
              actor: actorOf(req),
              action: 'host.heartbeat.move-refused',
              targetKind: 'host',
              targetId: agentId,
              params: {
                enrolledControlUrl: (err.details.enrolledControlUrl as string | null) ?? null,
                reportedControlUrl: (err.details.reportedControlUrl as string | null) ?? null,
              },
              result: 'error',
              errorCode: err.code,
              requestId: req.id,
            })
            .catch((auditErr: unknown) => req.log.error({ err: auditErr }, 'could not write the audit entry'));
        }
        throw err;
      }
    },
  );

  api.get(
    '/hosts',
    {
      schema: { tags: ['hosts'], summary: 'List hosts', querystring: HostsQuery },
      config: { auth: { scope: readScope('hosts') } },
    },
    async (req) => {
      const { status } = req.query as Static<typeof HostsQuery>;
      const hosts = await ctx.queries.hosts(status ? { statuses: [status as 'ONLINE'] } : {});
      const counts = await ctx.queries.instanceCountsByHost();
      return { hosts: hosts.map((h) => hostView(h, counts[h.id] ?? 0)) };
    },
  );

  getOneRoute(api, {
    url: '/hosts/:id',
    tags: ['hosts'],
    summary: 'One host',
    params: HostParams,
    scope: readScope('hosts'),
    load: ({ id }) => ctx.queries.host(id),
    code: 'HOST_NOT_FOUND',
    missing: ({ id }) => `host ${id} is not registered`,
    view: (host) => hostAnswer(ctx, host),
  });

  api.post(
    '/hosts/:id/maintenance',
    {
      schema: { tags: ['hosts'], summary: 'Enable or end maintenance (no new placements)', params: HostParams, body: MaintenanceBody },
      config: { auth: { scope: writeScope('hosts') }, audit: { action: 'host.maintenance', targetKind: 'host' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof HostParams>;
      const body = req.body as Static<typeof MaintenanceBody>;
      return hostAnswer(ctx, await ctx.hosts.setMaintenance(id, body.enabled, body.message ?? '', actorOf(req)));
    },
  );

  api.delete(
    '/hosts/:id',
    {
      schema: {
        tags: ['hosts'],
        summary:
          'Remove a host record: only without instances, or forget=true for an OFFLINE host (its instances become intervention_required)',
        params: HostParams,
        querystring: DeleteHostQuery,
      },
      config: { auth: { scope: writeScope('hosts') }, audit: { action: 'host.delete', targetKind: 'host' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof HostParams>;
      const { forget } = req.query as Static<typeof DeleteHostQuery>;
      auditTarget(req, id, { forget: forget === true });
      return { ...(await ctx.hostRemoval.removeHost(id, forget === true, actorOf(req))), deleted: true };
    },
  );

  api.get(
    '/hosts/:id/unclaimed',
    {
      schema: {
        tags: ['hosts'],
        summary:
          "Unclaimed containers: the host's persisted set (kept by every recovery until adopted or deleted), joined with its agent's live inventory",
        params: HostParams,
      },
      config: { auth: { scope: readScope('hosts') } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof HostParams>;
      const unclaimed = await ctx.hosts.unclaimed(id, req.id);
      const last = ctx.hosts.lastRecovery.get(id);
      return { hostId: id, unclaimed, lastRecoveryAt: last ? new Date(last.at).toISOString() : null };
    },
  );

  api.delete(
    '/hosts/:id/unclaimed/:instanceId',
    {
      schema: {
        tags: ['hosts'],
        summary: "Remove one unclaimed container through the agent's cleanup (its data stays unless deleteData=true)",
        params: UnclaimedParams,
        querystring: DeleteUnclaimedQuery,
      },
      config: { auth: { scope: writeScope('hosts') }, audit: { action: 'host.unclaimed.delete', targetKind: 'host' } },
    },
    async (req, reply) => {
      const { id, instanceId } = req.params as Static<typeof UnclaimedParams>;
      const { deleteData } = req.query as Static<typeof DeleteUnclaimedQuery>;
      auditTarget(req, id, { instanceId, deleteData: deleteData === true });
      const out = await ctx.hosts.deleteUnclaimed(id, instanceId, deleteData === true, actorOf(req), req.id);
      return reply.status(202).send({ hostId: id, instanceId, ...out });
    },
  );

  api.post(
    '/hosts/:id/unclaimed/:instanceId/adopt',
    {
      schema: {
        tags: ['hosts'],
        summary: 'Adopt one unclaimed container into its group variant as an instance (the container and its data are not changed)',
        params: UnclaimedParams,
        body: AdoptBody,
      },
      config: { auth: { scope: writeScope('hosts') }, audit: { action: 'host.unclaimed.adopt', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const { id, instanceId } = req.params as Static<typeof UnclaimedParams>;
      const body = req.body as Static<typeof AdoptBody>;
      auditTarget(req, instanceId, {
        hostId: id,
        groupId: body.groupId,
        variantId: body.variantId,
        ...(body.name ? { name: body.name } : {}),
      });
      const { instance } = await adoption.adopt(id, instanceId, body, actorOf(req), req.id);
      return reply.status(201).send(instanceView(instance));
    },
  );
}
