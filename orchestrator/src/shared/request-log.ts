// Fastify's per-request log lines (orchestrator and agent), with quiet routes: a route whose config sets
// `quietLog` (agent heartbeats, the supervisor's inventory polls: every few seconds per host)
// logs its successful requests at debug; refusals and errors keep their usual level.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { headerValue } from './http.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Log successful requests of this route at debug instead of info. */
    quietLog?: boolean;
  }
}

function isQuiet(request: FastifyRequest): boolean {
  return request.routeOptions.config.quietLog === true;
}

export class QuietRoutesLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (!isQuiet(request)) return super.incomingRequest(request, reply, metadata);
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (!isQuiet(request) || error || reply.statusCode >= 400) return super.requestCompleted(error, request, reply, metadata);
    reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * The Fastify options every EnderCloud HTTP service shares: quiet polling
 * routes, a body limit, and the caller's x-request-id as the request id (a
 * fresh one otherwise) so the agent's and the orchestrator's logs line up.
 */
export function serviceHttpOptions(bodyLimit: number) {
  return {
    logController: new QuietRoutesLogController(),
    bodyLimit,
    requestIdHeader: false as const,
    genReqId: (req: IncomingMessage) => headerValue(req, 'x-request-id') ?? randomUUID(),
  };
}
