// The agent's HTTP API (private, under /api/v1): routes call the instance
// service; one error handler maps AppError and schema failures to
// {"error":{"code","message"}}. Testable without a socket via inject().

import { dirname } from 'node:path';
import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { AppError } from '../shared/errors.js';
import { bearerMatches, errorHandler, headerValue, notFoundHandler, sendError } from '../shared/http.js';
import type { Logger } from '../shared/logger.js';
import { serviceHttpOptions } from '../shared/request-log.js';
import type { BackupService } from './backups.js';
import { defaultBackupService, registerBackupRoutes } from './backup-routes.js';
import { KeptData, registerKeptDataRoutes } from './kept-data.js';
import type { InstanceService } from './instance-service.js';
import { imageRoutes } from './images.js';
import { registerStatsRoutes } from './stats-routes.js';
import { DataImporter, registerDataImportRoutes } from './data-import.js';
import { InstanceFiles, registerFileRoutes } from './instance-files.js';
import { EpochFence, parseEpochHeader } from './epoch-fence.js';
import {
  CleanupBody,
  CreateInstanceBody,
  DeleteBody,
  DeleteQuery,
  InstanceParams,
  LogsQuery,
  RconBody,
  StdinBody,
  InstallBody,
  ReplaceBody,
  StopBody,
  LEADER_ANNOUNCE_PATH,
  LEADER_EPOCH_HEADER,
  type HealthAnswer,
  type LeaderAnswer,
  type InventoryAnswer,
} from '../contracts/agent-api.js';

export interface AgentAppDeps {
  agentId: string;
  version: string;
  /** When set, every call needs `Authorization: Bearer <token>`. */
  token: string | undefined;
  service: InstanceService;
  /** Instance backups (built with `service.instanceLocks`); defaults to `<runtime>/backups` beside the instance directories. */
  backups?: BackupService;
  /** Whether the container engine answers (for /health). */
  engineReachable: () => Promise<boolean>;
  logger: Logger;
  /** Leader fencing (x-leader-epoch); default in memory. The agent command persists it in its runtime directory. */
  fence?: EpochFence;
}

const BODY_LIMIT = 1024 * 1024;

export function buildAgentApp(deps: AgentAppDeps) {
  const app = Fastify({
    loggerInstance: deps.logger,
    // The supervisor polls GET /instances every few seconds: those lines are debug (quietLog).
    ...serviceHttpOptions(BODY_LIMIT),
    // Every log line of a request carries its request id and command id.
    childLoggerFactory: (logger, bindings, opts, rawReq) =>
      logger.child({ requestId: bindings.reqId, commandId: headerValue(rawReq as IncomingMessage, 'x-command-id') }, opts),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } },
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (deps.token !== undefined && !bearerMatches(request.headers.authorization, deps.token)) {
      return sendError(reply, new AppError('UNAUTHORIZED', 'missing or wrong bearer token'));
    }
  });

  // Fencing runs after authentication and validation, right before the handler acts (epoch-fence.ts):
  // reads pass untouched; a mutating call needs the header, is refused when older, and raises within a bound.
  const fence = deps.fence ?? EpochFence.inMemory();
  app.addHook('preHandler', async (request) => {
    if (request.routeOptions.url === undefined) return; // no such route: a 404, nothing to fence
    const epoch = parseEpochHeader(request.headers[LEADER_EPOCH_HEADER]);
    await fence.check(epoch, request.method !== 'GET' && request.method !== 'HEAD');
  });

  app.setErrorHandler(errorHandler('agent', BODY_LIMIT));
  app.setNotFoundHandler(notFoundHandler);

  app.register(async (api) => routes(api, deps, fence), { prefix: '/api/v1' });
  return app;
}

type WithParams = FastifyRequest<{ Params: InstanceParams }>;

async function routes(api: FastifyInstance, deps: AgentAppDeps, fence: EpochFence): Promise<void> {
  const { service } = deps;
  const params = { params: InstanceParams };

  // The leader's announcement: the fence (preHandler) already recorded its epoch.
  api.post(LEADER_ANNOUNCE_PATH, async (): Promise<LeaderAnswer> => ({ epoch: fence.highest }));

  api.get('/health', async (): Promise<HealthAnswer> => ({
    status: 'ok',
    agentId: deps.agentId,
    version: deps.version,
    engine: (await deps.engineReachable()) ? 'reachable' : 'unreachable',
  }));

  api.get('/instances', { config: { quietLog: true } }, async (): Promise<InventoryAnswer> => ({ instances: await service.inventory() }));
  registerStatsRoutes(api, { runtime: service.deps.runtime, agentId: deps.agentId });

  await imageRoutes(api, service.deps.runtime);

  api.get('/instances/:id', { schema: params }, async (req: WithParams) => service.inspect(req.params.id));

  api.get('/instances/:id/logs', { schema: { ...params, querystring: LogsQuery } }, async (req, reply) => {
    const { id } = req.params as InstanceParams;
    const { tail = 100, since, follow } = req.query as LogsQuery;
    if (follow) {
      // Fastify pipes the stream and destroys it when the client goes away (that closes the engine's stream).
      const stream = await service.followLogs(id, tail);
      return reply.type('text/plain; charset=utf-8').header('cache-control', 'no-store').send(stream);
    }
    const text = await service.logs(id, tail, since ? { since } : {});
    return reply.type('text/plain; charset=utf-8').send(text);
  });

  api.put('/instances/:id', { schema: { ...params, body: CreateInstanceBody } }, async (req) => {
    const { id } = req.params as InstanceParams;
    return service.create(id, req.body as CreateInstanceBody, req.log);
  });

  // An empty POST/DELETE means "all defaults".
  const emptyBodyIsObject = async (req: FastifyRequest) => {
    if (req.body === undefined || req.body === null) req.body = {};
  };

  api.post('/instances/:id/start', { schema: params }, async (req: WithParams) => service.start(req.params.id, req.log));
  api.post('/instances/:id/stop', { schema: { ...params, body: StopBody }, preValidation: emptyBodyIsObject }, async (req) =>
    service.stop((req.params as InstanceParams).id, req.body as StopBody, req.log),
  );
  // Not queued behind the instance's other actions: it is what ends a stop that hangs.
  api.post('/instances/:id/kill', { schema: params }, async (req: WithParams) => service.kill(req.params.id, req.log));
  api.post('/instances/:id/rcon', { schema: { ...params, body: RconBody } }, async (req) => {
    const { port, password, command } = req.body as RconBody;
    return service.rcon((req.params as InstanceParams).id, { port, password }, command, req.log);
  });
  api.post('/instances/:id/stdin', { schema: { ...params, body: StdinBody } }, async (req) =>
    service.writeStdin((req.params as InstanceParams).id, (req.body as StdinBody).line, req.log),
  );
  api.post('/instances/:id/install', { schema: { ...params, body: InstallBody } }, async (req) =>
    service.install((req.params as InstanceParams).id, req.body as InstallBody, req.log),
  );
  api.post('/instances/:id/replace', { schema: { ...params, body: ReplaceBody } }, async (req) =>
    service.replace((req.params as InstanceParams).id, req.body as ReplaceBody, req.log),
  );
  api.post('/instances/:id/pause', { schema: params }, async (req: WithParams) => service.pause(req.params.id, req.log));
  api.post('/instances/:id/unpause', { schema: params }, async (req: WithParams) => service.unpause(req.params.id, req.log));
  api.delete(
    '/instances/:id',
    { schema: { ...params, body: DeleteBody, querystring: DeleteQuery }, preValidation: emptyBodyIsObject },
    async (req) => {
      // The scope may come as a JSON body or as a query (?keepData=true, ?paths=a&paths=b).
      const scope = { ...(req.query as DeleteQuery), ...(req.body as DeleteBody) };
      return service.delete((req.params as InstanceParams).id, scope, req.log);
    },
  );

  const backups = deps.backups ?? defaultBackupService(service);
  await registerBackupRoutes(api, backups);
  registerKeptDataRoutes(
    api,
    new KeptData({
      instancesDirectory: dirname(service.deps.directories.localPath('x')),
      directories: service.deps.directories,
      backups,
      findContainer: (id) => service.findOwned(id),
    }),
  );
  await registerDataImportRoutes(
    api,
    new DataImporter({
      directories: service.deps.directories,
      findOwned: (id) => service.findOwned(id),
      instanceLocks: service.instanceLocks,
    }),
  );
  // The data directory's files, running or not (docs/agent.md "Files").
  await registerFileRoutes(api, new InstanceFiles({ directories: service.deps.directories }));

  api.post('/cleanup', { schema: { body: CleanupBody } }, async (req) => {
    const { instanceIds, keepDataFor } = req.body as CleanupBody;
    return service.cleanup(instanceIds, keepDataFor ?? [], req.log);
  });
}
