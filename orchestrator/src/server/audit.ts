// The audit trail of the HTTP API: a route declares `config.audit` (action and
// target kind) and one onSend hook appends the entry — actor (token name),
// target, redacted parameters, result and error code — for successes and
// refusals alike. Handlers may refine the target id and parameters.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditEvent, JsonObject, JsonValue } from '../domain/index.js';
import { REDACTED } from '../lifecycle/settings.js';
import type { Clock } from './clock.js';
import { actorOf } from './context.js';
import type { AuditLog } from './services/audit-log.js';

export interface AuditSpec {
  action: string;
  targetKind: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    audit?: AuditSpec;
  }
  interface FastifyRequest {
    /**
     * Set by handlers (target id, redacted params) and by the error handler
     * (error code). `recorded`: the handler's own store write already
     * committed the success entry with its action (auditEntry), so the hook
     * writes none. `byService`: the service the handler called writes this
     * request's entry itself, ok or error (the files service, shared with SFTP),
     * so the hook writes none either way.
     */
    auditInfo?: { targetId?: string; params?: JsonObject; errorCode?: string; recorded?: boolean; byService?: boolean };
  }
}

const SECRET_KEY = /pass(word)?|secret|token|credential|private/i;
const MAX_PARAM_CHARS = 8000;

/** Deep copy with every value under a secret-looking key replaced; long strings cut. */
export function redactParams(value: unknown, extraSecretKeys: readonly string[] = []): JsonValue {
  const extra = new Set(extraSecretKeys);
  const walk = (v: unknown, depth: number): JsonValue => {
    if (depth > 8) return '[…]';
    if (Array.isArray(v)) return v.slice(0, 100).map((x) => walk(x, depth + 1));
    if (typeof v === 'string') return v.length > 1000 ? `${v.slice(0, 1000)}…` : v;
    if (typeof v === 'number' || typeof v === 'boolean' || v === null) return v;
    if (typeof v === 'object' && v !== undefined) {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).map(([k, x]) => [
          k,
          SECRET_KEY.test(k) || extra.has(k) ? REDACTED : walk(x, depth + 1),
        ]),
      );
    }
    return null;
  };
  return walk(value, 0);
}

/** Notes the target id and parameters the entry should carry (already redacted by the caller when needed). */
export function auditTarget(request: FastifyRequest, targetId: string, params?: JsonObject): void {
  request.auditInfo = { ...request.auditInfo, targetId, ...(params ? { params } : {}) };
}

function defaultTarget(request: FastifyRequest): string | null {
  const p = request.params as Record<string, string> | undefined;
  if (!p) return null;
  if (p.name && p.version) return `${p.name}@${p.version}`;
  return p.id ?? p.agentId ?? p.name ?? null;
}

function defaultParams(request: FastifyRequest): JsonObject {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || typeof (body as { pipe?: unknown }).pipe === 'function')
    return {};
  const redacted = redactParams(body) as JsonObject;
  return JSON.stringify(redacted).length > MAX_PARAM_CHARS ? { truncated: true, fields: Object.keys(redacted) } : redacted;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any logger/server flavour of Fastify
export function registerAuditHook(app: FastifyInstance<any, any, any, any>, deps: { auditLog: AuditLog; clock: Clock }): void {
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload) => {
    const spec = request.routeOptions.config?.audit;
    if (!spec) return payload;
    const ok = reply.statusCode < 400;
    if ((ok && request.auditInfo?.recorded) || request.auditInfo?.byService) return payload;
    try {
      await deps.auditLog.append(auditEntry(request, deps.clock, { result: ok ? 'ok' : 'error', statusCode: reply.statusCode }));
    } catch (err) {
      request.log.error({ err }, 'could not write the audit entry');
    }
    return payload;
  });
}

/**
 * The request's audit entry, as the hook writes it. A handler whose store
 * write can carry the entry in the same statement (allocate, release:
 * one commit instead of two on the hot path) builds it here, passes it to the
 * store and sets `auditInfo.recorded` once that committed.
 */
export function auditEntry(
  request: FastifyRequest,
  clock: Clock,
  opts: { result?: 'ok' | 'error'; statusCode?: number; targetId?: string; params?: JsonObject } = {},
): Omit<AuditEvent, 'id'> {
  const spec = request.routeOptions.config?.audit;
  if (!spec) throw new Error(`route ${request.routeOptions.url ?? request.url} declares no audit`);
  const { result = 'ok', statusCode = 200 } = opts;
  const info = {
    ...request.auditInfo,
    ...(opts.targetId !== undefined ? { targetId: opts.targetId } : {}),
    ...(opts.params ? { params: opts.params } : {}),
  };
  return {
    at: clock.now(),
    actor: actorOf(request),
    action: spec.action,
    targetKind: spec.targetKind,
    targetId: info.targetId ?? defaultTarget(request),
    params: info.params ?? defaultParams(request),
    result,
    errorCode: result === 'ok' ? null : (info.errorCode ?? `HTTP_${statusCode}`),
    requestId: request.id,
  };
}
