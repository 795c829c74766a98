// Lifecycle actions: start, stop, restart, pause, resume (202 with the durable
// command id), kill (services/instance-kill.ts: never queued behind the stop it
// ends), the crash-loop reset, and the bridge's SERVER_READY event.

import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../shared/errors.js';
import { auditTarget } from '../audit.js';
import { bearerOf } from '../../shared/http.js';
import { MANAGER_SCOPE, powerActionScope, writeScope } from '../auth/scopes.js';
import { actorOf, type ServerContext } from '../context.js';
import { POWER_ACTIONS } from '../../lifecycle/actions.js';
import { stopBackupPayload } from '../../lifecycle/backup.js';
import { userActor } from '../services/lifecycle-service.js';
import { StopBody } from '../../contracts/public-api/bodies.js';
import { instanceView } from '../views.js';
import { killInstance } from '../services/instance-kill.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const EventBody = Type.Object(
  {
    type: Type.Literal('SERVER_READY'),
    /** The container's ENDERCLOUD_REPORTED_ENDPOINT, when it sets one: "host:port" players should use. */
    endpoint: Type.Optional(Type.String({ minLength: 3, maxLength: 300, pattern: '^[A-Za-z0-9._:\\[\\]-]+:[0-9]{1,5}$' })),
  },
  { additionalProperties: false },
);

/** The stop body is optional, so it is checked here rather than by the route schema. */
function stopBodyOf(body: unknown): StopBody {
  if (body === undefined || body === null) return {};
  if (!Value.Check(StopBody, body)) {
    const first = Value.Errors(StopBody, body).First();
    throw new AppError('VALIDATION_FAILED', `body${first?.path ?? ''} ${first?.message ?? 'is invalid'}`);
  }
  return body;
}

export async function instanceActionRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  for (const action of POWER_ACTIONS) {
    api.post(
      `/instances/:id/${action}`,
      {
        schema: {
          tags: ['instances'],
          summary: `${action} (202: the action is persisted and queued; 409 INSTANCE_BUSY while another runs)`,
          params: InstanceParams,
        },
        // The edge router wakes sleeping servers (start/resume) with its own `router` token.
        config: { auth: { scope: powerActionScope(action) }, audit: { action: `instance.${action}`, targetKind: 'instance' } },
      },
      async (req, reply) => {
        const { id } = req.params as Static<typeof InstanceParams>;
        const instance = await ctx.lifecycle.find(id);
        auditTarget(req, instance.id, {});
        const stop = action === 'stop' ? stopBodyOf(req.body) : undefined;
        const result = await ctx.lifecycle.request(instance.id, action, userActor(req.principal), {
          requestId: req.id,
          ...(stop?.backup ? { payload: stopBackupPayload(stop) } : {}),
        });
        return reply.status(result.noop && result.commandId === null ? 200 : 202).send({
          id: instance.id,
          commandId: result.commandId,
          state: result.state,
          ...(result.noop ? { noop: result.noop } : {}),
        });
      },
    );
  }

  // SIGKILL: ends a stop that hangs at once (200, `ended`), or is a stop whose method is SIGKILL (202).
  api.post(
    '/instances/:id/kill',
    {
      schema: {
        tags: ['instances'],
        summary:
          'Kill the container at once, without saving (200 ended: the stop, delete, archive or update in progress sees it gone and finishes; 202: a stop command that kills; 200 noop when stopped)',
        params: InstanceParams,
      },
      config: { auth: { scope: powerActionScope('kill') }, audit: { action: 'instance.kill', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const instance = await ctx.lifecycle.find(id);
      auditTarget(req, instance.id, {});
      const result = await killInstance(
        { host: (hostId) => ctx.queries.host(hostId), driver: ctx.driver, lifecycle: ctx.lifecycle, logger: ctx.logger },
        instance.id,
        userActor(req.principal),
        { requestId: req.id },
      );
      return reply.status(result.ended === true || result.noop !== undefined ? 200 : 202).send(result);
    },
  );

  // Egg templates: the install script again over the kept files (a running server is stopped first and started again).
  api.post(
    '/instances/:id/reinstall',
    {
      schema: {
        tags: ['instances'],
        params: InstanceParams,
        summary:
          "Run the template's install script again (202; from stopped, error, online or degraded; a running server is stopped first and started again afterwards)",
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.reinstall', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const instance = await ctx.lifecycle.find(id);
      auditTarget(req, instance.id, {});
      const template = await ctx.lifecycle.templateOf(instance);
      if (!template?.install) {
        throw new AppError(
          'VALIDATION_FAILED',
          `instance ${instance.name}'s template has no install script; there is nothing to reinstall`,
        );
      }
      const result = await ctx.lifecycle.request(instance.id, 'reinstall', userActor(req.principal), { requestId: req.id });
      return reply.status(202).send({ id: instance.id, commandId: result.commandId, state: result.state });
    },
  );

  api.post(
    '/instances/:id/reset-crash-loop',
    {
      schema: {
        tags: ['instances'],
        summary: 'Reset the crash-loop breaker after diagnosis (admin/manager); an instance in error becomes stopped',
        params: InstanceParams,
      },
      config: { auth: { scope: MANAGER_SCOPE }, audit: { action: 'instance.reset-crash-loop', targetKind: 'instance' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const instance = await ctx.lifecycle.resetCrashLoop(id, actorOf(req));
      auditTarget(req, instance.id, {});
      return instanceView(instance, { policy: ctx.lifecycle.crashPolicy(await ctx.lifecycle.templateOf(instance)), now: ctx.clock.now() });
    },
  );

  // The bridge: the container itself says it is ready, with its own per-instance secret.
  api.post(
    '/instances/:id/events',
    {
      schema: {
        tags: ['instances'],
        summary: 'Container events (bridge readiness): Authorization: Bearer $ENDERCLOUD_INSTANCE_TOKEN',
        params: InstanceParams,
        body: EventBody,
      },
      config: { auth: { public: true }, audit: { action: 'instance.event', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const body = req.body as Static<typeof EventBody>;
      await ctx.bridgeEvents.serverReady(id, bearerOf(req.headers.authorization), body.endpoint);
      return reply.status(202).send({ accepted: true });
    },
  );
}
