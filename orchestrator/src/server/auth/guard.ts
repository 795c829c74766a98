// The one authentication hook: every route declares `config.auth` (public, a
// scope requirement, any signed-in principal, or an agent endpoint); a route
// that forgets is admin-only. 401 without (valid) credentials, 403 naming the
// missing scope. Credentials: the bearer token, else the web panel's session
// cookie (server/web) — a cookie-authenticated mutation also needs the CSRF
// header and, when the browser sends one, a same-origin Origin.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../shared/errors.js';
import { ADMIN_SCOPE, hasScope, type ScopeRequirement } from './scopes.js';
import { bearerOf, isLoopbackAddress } from '../../shared/http.js';
import { HOST_CREDENTIAL_PREFIX, JOIN_TOKEN_PREFIX, type Principal, type TokenService } from './tokens.js';
import { CSRF_HEADER, CSRF_VALUE } from '../../contracts/public-api/panel-rules.js';

export type AuthSpec =
  | { public: true }
  | { scope: ScopeRequirement }
  /**
   * Any valid user token or panel session, whatever its scopes. `orAnonymous`:
   * a request that presents no credentials at all (no Authorization header, no
   * session cookie) goes on without a principal (the panel's GET /session asks
   * "am I signed in?" at every load); wrong credentials are still 401.
   */
  | { authenticated: true; orAnonymous?: boolean }
  /**
   * Agent endpoints: an enrolled host's own credential (principal kind `host`, bound to its agentId), the legacy
   * shared agent token, or (when `orScope`) a user token with that scope.
   */
  | { agent: true; orScope?: ScopeRequirement; anonymousWhenNoAgentToken?: boolean }
  /** Enrolment: a join token (ecj_…) as bearer; the handler consumes it in its own transaction. */
  | { joinToken: true };

/** Resolves a panel session cookie to its principal (server/web/web-sessions.ts). */
export interface SessionAuthenticator {
  cookieOf(request: FastifyRequest): string | undefined;
  authenticate(sessionId: string): Promise<Principal | undefined>;
  /** The origin users reach the API at (ENDERCLOUD_PUBLIC_URL), also accepted as `Origin` behind a proxy that rewrites Host. */
  readonly publicOrigin?: string | undefined;
}

const SAFE_METHODS: readonly string[] = ['GET', 'HEAD', 'OPTIONS'];

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /** How the principal was authenticated. */
    authVia?: 'bearer' | 'session';
  }
  interface FastifyContextConfig {
    auth?: AuthSpec;
  }
}

export function authHook(tokens: TokenService, sessions?: SessionAuthenticator) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const spec: AuthSpec = request.routeOptions.config?.auth ?? { scope: ADMIN_SCOPE };
    if ('public' in spec) return;
    const secret = bearerOf(request.headers.authorization);
    if ('joinToken' in spec) {
      if (secret === undefined || !secret.startsWith(JOIN_TOKEN_PREFIX))
        throw new AppError('UNAUTHORIZED', `enrolment needs a join token as bearer (${JOIN_TOKEN_PREFIX}…: ectl hosts join-token create)`);
      request.principal = { kind: 'join-token', name: 'join token', tokenId: null, scopes: [] };
      return;
    }
    if ('agent' in spec) {
      if (tokens.isAgentToken(secret)) {
        request.principal = { kind: 'agent', name: 'agent', tokenId: null, scopes: ['agent'] };
        return;
      }
      if (secret?.startsWith(HOST_CREDENTIAL_PREFIX)) {
        const host = await tokens.authenticateHost(secret);
        if (!host)
          throw new AppError(
            'UNAUTHORIZED',
            'unknown or revoked host credential: re-enrol the agent with a new join token (ectl hosts join-token create --agent-id <id>)',
          );
        request.principal = host;
        return;
      }
      // Only from this machine: a remote agent enrols (or carries the shared token).
      if (!tokens.agentTokenConfigured && spec.anonymousWhenNoAgentToken && secret === undefined && isLoopbackAddress(request.ip)) {
        request.principal = { kind: 'anonymous-agent', name: 'agent', tokenId: null, scopes: ['agent'] };
        return;
      }
      if (!spec.orScope)
        throw new AppError(
          'UNAUTHORIZED',
          tokens.agentTokenConfigured
            ? 'missing or wrong agent token'
            : 'this endpoint needs a host credential (enrol the agent with a join token: AGENT_JOIN_TOKEN) or the shared agent token; without ENDERCLOUD_AGENT_TOKEN only an agent on this machine (loopback) may beat unauthenticated',
        );
      requireScope(await authenticateUser(request, tokens, sessions, secret), spec.orScope);
      return;
    }
    if (
      'authenticated' in spec &&
      spec.orAnonymous === true &&
      request.headers.authorization === undefined &&
      sessions?.cookieOf(request) === undefined
    )
      return;
    const principal = await authenticateUser(request, tokens, sessions, secret);
    if ('authenticated' in spec) {
      if (principal.kind === 'agent' || principal.kind === 'host')
        throw new AppError('FORBIDDEN', 'the agent token cannot use this endpoint');
      return;
    }
    requireScope(principal, spec.scope);
  };
}

/** The bearer token's principal, else the session cookie's (with the CSRF checks); 401 without either. */
async function authenticateUser(
  request: FastifyRequest,
  tokens: TokenService,
  sessions: SessionAuthenticator | undefined,
  secret: string | undefined,
): Promise<Principal> {
  if (secret !== undefined) {
    const principal = await tokens.authenticate(secret);
    if (!principal) throw new AppError('UNAUTHORIZED', 'unknown or revoked token');
    request.principal = principal;
    request.authVia = 'bearer';
    return principal;
  }
  const sessionId = sessions?.cookieOf(request);
  if (sessions === undefined || sessionId === undefined)
    throw new AppError('UNAUTHORIZED', 'missing bearer token (Authorization: Bearer <token>)');
  const principal = await sessions.authenticate(sessionId);
  if (!principal) throw new AppError('UNAUTHORIZED', 'the panel session has expired or its token was revoked: sign in again');
  if (!SAFE_METHODS.includes(request.method)) assertSameSite(request, sessions.publicOrigin);
  request.principal = principal;
  request.authVia = 'session';
  return principal;
}

/** CSRF defence on top of SameSite=Strict: the custom header, and a matching Origin when one is sent. */
export function assertSameSite(request: FastifyRequest, publicOrigin?: string): void {
  if (request.headers[CSRF_HEADER] !== CSRF_VALUE) {
    throw new AppError(
      'FORBIDDEN',
      `a request authenticated by the panel session must send the header ${CSRF_HEADER}: ${CSRF_VALUE} (cross-site requests are refused)`,
    );
  }
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    if (publicOrigin !== undefined && origin === publicOrigin) return;
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host !== request.headers.host)
      throw new AppError('FORBIDDEN', `cross-origin request refused (Origin ${origin} is not ${request.headers.host ?? 'this host'})`);
  } else if (origin === 'null') {
    throw new AppError('FORBIDDEN', 'cross-origin request refused (Origin null)');
  }
}

function requireScope(principal: Principal, requirement: ScopeRequirement): void {
  if (!hasScope(principal.scopes, requirement)) {
    throw new AppError(
      'FORBIDDEN',
      `token ${principal.name} lacks scope ${requirement.scope} (accepted: ${requirement.anyOf.join(', ')})`,
      {
        details: { requiredScope: requirement.scope },
      },
    );
  }
}
