// Fastify's per-request log lines (orchestrator and agent), quiet where they repeat: reads
// (GET/HEAD: the panel's and ectl --wait's polls, the router's registry stream, metrics scrapes,
// the supervisor's inventory polls) and routes whose config sets `quietLog` (agent heartbeats,
// router session reports: every few seconds per host or router) log their successful requests at
// debug. Refusals and errors (status >= 400), and every other mutating call, stay at info, so
// `npm start` shows what changed and what failed.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { headerValue } from './http.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Log successful requests of this route at debug instead of info (reads always are). */
    quietLog?: boolean;
  }
}

const READS = new Set(['GET', 'HEAD']);

/** Whether a successful request of this route is logged at debug. */
function isQuiet(request: Pick<FastifyRequest, 'method' | 'routeOptions'>): boolean {
  return READS.has(request.method) || request.routeOptions.config?.quietLog === true;
}

export class QuietRoutesLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (!isQuiet(request)) return super.incomingRequest(request, reply, metadata);
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
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
