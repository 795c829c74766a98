// HTTP edges shared by the agent's and the orchestrator's Fastify apps:
// request-id handling, constant-time bearer checks, and the one error handler
// that answers every failure as {"error":{"code","message"}}.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorBody, isAppError } from './errors.js';

/** What a propagated id header (x-request-id, x-command-id) may contain. */
export const SAFE_HEADER_VALUE = /^[A-Za-z0-9._:-]{1,128}$/;

/** A header's first value when it is a safe id, else undefined. */
export function headerValue(raw: IncomingMessage, name: string): string | undefined {
  const v = raw.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s !== undefined && SAFE_HEADER_VALUE.test(s) ? s : undefined;
}

/** Constant-time equality over digests, so neither length nor prefix leaks. */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export function bearerOf(header: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
}

/** Constant-time bearer check against one shared token. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = bearerOf(header);
  return secretsEqual(given ?? '', token) && given !== undefined;
}

/** One line naming the failing field, e.g. "body/resources/memoryMb must be >= 16". */
export function validationMessage(err: FastifyError): string {
  const first = err.validation?.[0];
  if (!first) return err.message;
  const params = first.params as { missingProperty?: string; additionalProperty?: string };
  let path = `${err.validationContext ?? 'request'}${first.instancePath}`;
  if (params.missingProperty) path += `/${params.missingProperty}`;
  if (params.additionalProperty) return `${path}/${params.additionalProperty} is not a known field`;
  // A union of literals fails one `const` per branch: name every allowed value, not just the first.
  const allowed =
    first.keyword === 'const'
      ? err
          .validation!.filter((e) => e.keyword === 'const' && e.instancePath === first.instancePath)
          .map((e) => (e.params as { allowedValue?: unknown }).allowedValue)
      : [];
  if (allowed.length > 1) return `${path} must be one of ${allowed.map((v) => String(v)).join(', ')}`;
  return `${path} ${first.message ?? 'is invalid'}`;
}

export function sendError(reply: FastifyReply, err: AppError): FastifyReply {
  return reply.status(err.httpStatus).send(errorBody(err));
}

/** The stable code an error is answered with (for audit records and metrics). */
export function errorCodeOf(err: FastifyError): string {
  return isAppError(err) ? err.code : err.validation ? 'VALIDATION_FAILED' : 'BAD_REQUEST';
}

/**
 * The error handler both APIs install: AppErrors keep their code and status,
 * schema failures name the field, other 4xx become BAD_REQUEST, and anything
 * else is logged and answered as INTERNAL without leaking details.
 */
export function errorHandler(service: string, bodyLimit: number) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    if (isAppError(err)) {
      if (err.httpStatus >= 500) request.log.error({ err }, 'request failed');
      else request.log.info({ code: err.code, message: err.message }, 'request refused');
      return sendError(reply, err);
    }
    if (err.validation) return sendError(reply, new AppError('VALIDATION_FAILED', validationMessage(err)));
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return sendError(reply, new AppError('BODY_TOO_LARGE', `request body is larger than the limit of ${bodyLimit} bytes`));
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.status(err.statusCode).send({ error: { code: 'BAD_REQUEST', message: err.message } });
    }
    request.log.error({ err }, 'unexpected error');
    return sendError(reply, new AppError('INTERNAL', `internal error; see the ${service} log`));
  };
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(reply, new AppError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`));
}

/**
 * True for an address of this machine only (127.0.0.0/8, ::1, IPv4-mapped
 * loopback, `localhost`): a listen address no other machine reaches, or a
 * request's peer on this machine.
 */
export function isLoopbackAddress(address: string): boolean {
  return address === '::1' || address === 'localhost' || address.startsWith('127.') || address.toLowerCase().startsWith('::ffff:127.');
}
