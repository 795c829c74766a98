// The orchestrator's public HTTP API: Fastify under /api/v1 with TypeBox
// schemas, one authentication hook (behind a per-address limit on failed
// authentication), one error handler mapping AppError to
// {"error":{"code","message"}}, OpenAPI at /api/v1/openapi.json and /metrics.
// Testable without a socket through inject().

import swagger from '@fastify/swagger';
import Fastify, { type FastifyError, type FastifyRequest } from 'fastify';
import { AppError } from '../shared/errors.js';
import { errorCodeOf, errorHandler, notFoundHandler } from '../shared/http.js';
import { registerAuditHook } from './audit.js';
import { authHook } from './auth/guard.js';
import { clientKey, FailureLimiter } from './auth/failure-limiter.js';
import { METRICS_SCOPE } from './auth/scopes.js';
import type { ServerContext } from './context.js';
import { catalogRoutes } from './routes/catalog.js';
import { systemRoutes } from './routes/system.js';
import { commandRoutes, tokenRoutes } from './routes/commands.js';
import { hostRoutes } from './routes/hosts.js';
import { enrolmentRoutes } from './routes/enrolment.js';
import { instanceRoutes } from './routes/instances.js';
import { layerRoutes } from './routes/layers.js';
import { importRoutes } from './routes/imports.js';
import { serviceHttpOptions } from '../shared/request-log.js';
import { requestValidatorCompiler, responseSerializerCompiler } from '../shared/validation.js';
import { routerIntegrationRoutes } from './registry/router-integration.js';
import { fleetRoutes } from './routes/fleet.js';
import { velocityRoutes } from './routes/velocity.js';
import { auditRoutes } from './routes/audit.js';
import { instanceActionRoutes } from './routes/instance-actions.js';
import { instanceAdminRoutes } from './routes/instance-admin.js';
import { instanceBackupRoutes } from './routes/instance-backups.js';
import { instanceScheduleRoutes } from './routes/instance-schedules.js';
import { instanceFileRoutes } from './routes/instance-files.js';
import { instanceUpdateRoutes } from './routes/instance-update.js';
import { instancePreviewRoutes } from './routes/instance-preview.js';
import { instanceStatsRoutes } from './routes/instance-stats.js';
import { installationRequestRoutes } from './routes/installation-requests.js';
import { keptDataRoutes } from './routes/kept-data.js';
import { eggRoutes } from './routes/eggs.js';
import { webRoutes } from './web/web-routes.js';
import { contractOf, responseSchemaOf, routeKeyOf } from './response-schemas.js';

const JSON_BODY_LIMIT = 1024 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    /** The client key an authentication attempt was counted under (given back unless it ends 401). */
    authAttemptKey?: string;
  }
  interface FastifyContextConfig {
    /** The route checks a credential of its own (the panel login): its failures count towards the limit. */
    authAttempt?: boolean;
  }
}

/** Whether the request's credentials will be checked: a bearer token on a non-public route, or a login. */
function presentsCredentials(request: FastifyRequest): boolean {
  const config = request.routeOptions.config;
  if (config?.authAttempt === true) return true;
  return request.headers.authorization !== undefined && !(config?.auth !== undefined && 'public' in config.auth);
}

export type OrchestratorApp = Awaited<ReturnType<typeof buildApp>>;

export interface AppOptions {
  /** Every JSON answer before it is serialised, with the route that gives it (test/server/public-contract.test.ts). */
  onAnswer?: (route: { method: string; url: string }, status: number, payload: unknown) => void;
}

export async function buildApp(ctx: ServerContext, options: AppOptions = {}) {
  const app = Fastify({
    loggerInstance: ctx.logger,
    ...serviceHttpOptions(JSON_BODY_LIMIT),
    childLoggerFactory: (logger, bindings, opts) => logger.child({ requestId: bindings.reqId }, opts),
  });
  // Bodies are validated as sent, query strings and params coerced (shared/validation.ts says why).
  app.setValidatorCompiler(requestValidatorCompiler());
  // Compiled once per process (shared/validation.ts): a second build in the process reuses them.
  app.setSerializerCompiler(responseSerializerCompiler());

  // Each public route answers as its contract says (contracts/public-api/routes.ts): the schema
  // documents it in OpenAPI and serialises it (fields outside the schema are not sent).
  // A route whose contract entry names the body clients send and that declares a body schema declares
  // exactly that one (one definition; the stop route checks the same StopBody in its handler).
  app.addHook('onRoute', (route) => {
    if (route.schema?.hide) return;
    const response = responseSchemaOf(route.method, route.url);
    if (response && !route.schema?.response) route.schema = { ...route.schema, response };
    const body = contractOf(route.method, route.url)?.body;
    if (body && route.schema?.body !== undefined && route.schema.body !== body)
      throw new Error(
        `${routeKeyOf(route.method, route.url)}: the route validates another body than its contract entry's (contracts/public-api/bodies.ts)`,
      );
  });
  if (options.onAnswer) {
    const onAnswer = options.onAnswer;
    app.addHook('preSerialization', async (request, reply, payload) => {
      onAnswer({ method: request.method, url: request.routeOptions.url ?? request.url }, reply.statusCode, payload);
      return payload;
    });
  }

  await app.register(swagger, {
    openapi: {
      info: { title: 'EnderCloud orchestrator API', version: ctx.version },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  // The web panel's session cookie authenticates like a bearer token (server/web).
  const sessions = ctx.webSessions;
  const authenticate = authHook(ctx.tokens, sessions);
  // ENDERCLOUD_AUTH_FAILURE_LIMIT: a request with credentials passes while its address has budget left, and
  // one that ends 401 spends from it. The address is the socket's (Fastify's trustProxy is off).
  const limiter = ctx.config.authFailureLimit ? new FailureLimiter(ctx.config.authFailureLimit) : undefined;
  // Authenticate before the body is read: an anonymous upload is refused unread.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (limiter && presentsCredentials(request)) {
      const key = clientKey(request.ip);
      const answer = limiter.attempt(key, ctx.clock.now());
      if (!answer.allowed) {
        const seconds = Math.ceil(answer.retryAfterMs / 1000);
        reply.header('retry-after', String(seconds));
        throw new AppError(
          'RATE_LIMITED',
          `too many failed authentications from ${key} (limit ${ctx.config.authFailureLimit!.limit} per ${ctx.config.authFailureLimit!.windowMs / 1000} s): retry in ${seconds} s`,
          { details: { retryAfterSeconds: seconds } },
        );
      }
      request.authAttemptKey = key;
    }
    await authenticate(request, reply);
  });
  app.addHook('onResponse', async (request, reply) => {
    if (limiter && request.authAttemptKey !== undefined && reply.statusCode === 401)
      limiter.failed(request.authAttemptKey, ctx.clock.now());
  });

  registerAuditHook(app, ctx);

  const handleError = errorHandler('orchestrator', JSON_BODY_LIMIT);
  app.setErrorHandler((err: FastifyError, request, reply) => {
    request.auditInfo = { ...request.auditInfo, errorCode: errorCodeOf(err) };
    return handleError(err, request, reply);
  });
  app.setNotFoundHandler(notFoundHandler);

  app.get('/metrics', { schema: { hide: true }, config: { auth: { scope: METRICS_SCOPE } } }, async (_req, reply) => {
    const text = await ctx.metrics.registry.metrics();
    return reply.type(ctx.metrics.registry.contentType).send(text);
  });

  await app.register(
    async (api) => {
      await systemRoutes(api, ctx);
      api.get('/openapi.json', { schema: { hide: true }, config: { auth: { public: true } } }, async () => app.swagger());
      await enrolmentRoutes(api, ctx);
      await hostRoutes(api, ctx);
      await api.register(async (scoped) => layerRoutes(scoped, ctx));
      await api.register(async (scoped) => importRoutes(scoped, ctx));
      await catalogRoutes(api, ctx);
      await eggRoutes(api, ctx);
      await instanceRoutes(api, ctx);
      await instanceActionRoutes(api, ctx);
      await instanceAdminRoutes(api, ctx);
      await instanceBackupRoutes(api, ctx);
      await instanceFileRoutes(api, ctx);
      await instanceScheduleRoutes(api, ctx);
      await instanceUpdateRoutes(api, ctx);
      await instancePreviewRoutes(api, ctx);
      await instanceStatsRoutes(api, ctx);
      await installationRequestRoutes(api, ctx);
      await keptDataRoutes(api, ctx);
      await auditRoutes(api, ctx);
      await commandRoutes(api, ctx);
      await tokenRoutes(api, ctx);
      await routerIntegrationRoutes(api, ctx);
      await fleetRoutes(api, ctx);
      await velocityRoutes(api, ctx);
    },
    { prefix: '/api/v1' },
  );
  await app.register(async (scoped) => webRoutes(scoped, ctx, sessions));

  return app;
}
