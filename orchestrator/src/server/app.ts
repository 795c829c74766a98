// The orchestrator's public HTTP API: Fastify under /api/v1 with TypeBox
// schemas, one authentication hook, one error handler mapping AppError to
// {"error":{"code","message"}}, OpenAPI at /api/v1/openapi.json and /metrics.
// Testable without a socket through inject().

import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyError, type FastifyReply } from 'fastify';
import { AppError, errorBody, isAppError } from '../shared/errors.js';
import { registerAuditHook } from './audit.js';
import { authHook } from './auth/guard.js';
import { METRICS_SCOPE } from './auth/scopes.js';
import type { ServerContext } from './context.js';
import { catalogRoutes } from './routes/catalog.js';
import { commandRoutes, tokenRoutes } from './routes/commands.js';
import { hostRoutes } from './routes/hosts.js';
import { instanceRoutes } from './routes/instances.js';
import { layerRoutes } from './routes/layers.js';
import { QuietRoutesLogController } from './request-log.js';
import { routerIntegrationRoutes } from './registry/router-integration.js';
import { auditRoutes } from './routes/audit.js';
import { instanceActionRoutes } from './routes/instance-actions.js';
import { instanceAdminRoutes } from './routes/instance-admin.js';

const SAFE_HEADER_VALUE = /^[A-Za-z0-9._:-]{1,128}$/;
const JSON_BODY_LIMIT = 1024 * 1024;

function requestIdOf(req: IncomingMessage): string | undefined {
  const v = req.headers['x-request-id'];
  const s = Array.isArray(v) ? v[0] : v;
  return s !== undefined && SAFE_HEADER_VALUE.test(s) ? s : undefined;
}

/** One line naming the failing field, e.g. "body/resources/memoryMb must be >= 16". */
function validationMessage(err: FastifyError): string {
  const first = err.validation?.[0];
  if (!first) return err.message;
  const params = first.params as { missingProperty?: string; additionalProperty?: string };
  let path = `${err.validationContext ?? 'request'}${first.instancePath}`;
  if (params.missingProperty) path += `/${params.missingProperty}`;
  if (params.additionalProperty) return `${path}/${params.additionalProperty} is not a known field`;
  return `${path} ${first.message ?? 'is invalid'}`;
}

function sendError(reply: FastifyReply, err: AppError): FastifyReply {
  return reply.status(err.httpStatus).send(errorBody(err));
}

export type OrchestratorApp = Awaited<ReturnType<typeof buildApp>>;

export async function buildApp(ctx: ServerContext) {
  const app = Fastify({
    loggerInstance: ctx.logger,
    logController: new QuietRoutesLogController(),
    bodyLimit: JSON_BODY_LIMIT,
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req) ?? randomUUID(),
    childLoggerFactory: (logger, bindings, opts) => logger.child({ requestId: bindings.reqId }, opts),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } },
  });

  await app.register(swagger, {
    openapi: {
      info: { title: 'EnderCloud orchestrator API', version: ctx.version },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  const authenticate = authHook(ctx.tokens);
  // Authenticate before the body is read: an anonymous upload is refused unread.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    await authenticate(request, reply);
  });

  registerAuditHook(app, ctx);

  app.setErrorHandler((err: FastifyError, request, reply) => {
    request.auditInfo = { ...request.auditInfo, errorCode: isAppError(err) ? err.code : err.validation ? 'VALIDATION_FAILED' : 'BAD_REQUEST' };
    if (isAppError(err)) {
      if (err.httpStatus >= 500) request.log.error({ err }, 'request failed');
      else request.log.info({ code: err.code, message: err.message }, 'request refused');
      return sendError(reply, err);
    }
    if (err.validation) return sendError(reply, new AppError('VALIDATION_FAILED', validationMessage(err)));
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendError(reply, new AppError('BAD_REQUEST', `request body is larger than ${JSON_BODY_LIMIT} bytes`));
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.status(err.statusCode).send({ error: { code: 'BAD_REQUEST', message: err.message } });
    }
    request.log.error({ err }, 'unexpected error');
    return sendError(reply, new AppError('INTERNAL', 'internal error; see the orchestrator log'));
  });

  app.setNotFoundHandler((request, reply) => sendError(reply, new AppError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`)));

  app.get('/metrics', { schema: { hide: true }, config: { auth: { scope: METRICS_SCOPE } } }, async (_req, reply) => {
    const text = await ctx.metrics.registry.metrics();
    return reply.type(ctx.metrics.registry.contentType).send(text);
  });

  await app.register(async (api) => {
    api.get('/health', { schema: { tags: ['meta'], summary: 'Liveness' }, config: { auth: { public: true } } }, async () => ({
      status: 'ok', version: ctx.version, database: ctx.store.dialect,
    }));
    api.get('/openapi.json', { schema: { hide: true }, config: { auth: { public: true } } }, async () => app.swagger());
    await hostRoutes(api, ctx);
    await api.register(async (scoped) => layerRoutes(scoped, ctx));
    await catalogRoutes(api, ctx);
    await instanceRoutes(api, ctx);
    await instanceActionRoutes(api, ctx);
    await instanceAdminRoutes(api, ctx);
    await auditRoutes(api, ctx);
    await commandRoutes(api, ctx);
    await tokenRoutes(api, ctx);
    await routerIntegrationRoutes(api, ctx);
  }, { prefix: '/api/v1' });

  return app;
}
