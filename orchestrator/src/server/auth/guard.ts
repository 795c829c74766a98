// The one authentication hook: every route declares `config.auth` (public, a
// scope requirement, or an agent endpoint); a route that forgets is admin-only.
// 401 without (valid) credentials, 403 naming the missing scope.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../shared/errors.js';
import { ADMIN_SCOPE, hasScope, type ScopeRequirement } from './scopes.js';
import { bearerOf } from '../../shared/http.js';
import type { Principal, TokenService } from './tokens.js';

export type AuthSpec =
  | { public: true }
  | { scope: ScopeRequirement }
  /** Agent endpoints: the shared agent token, or (when `orScope`) a user token with that scope. */
  | { agent: true; orScope?: ScopeRequirement; anonymousWhenNoAgentToken?: boolean };

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
  interface FastifyContextConfig {
    auth?: AuthSpec;
  }
}

export function authHook(tokens: TokenService) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const spec: AuthSpec = request.routeOptions.config?.auth ?? { scope: ADMIN_SCOPE };
    if ('public' in spec) return;
    const secret = bearerOf(request.headers.authorization);
    if ('agent' in spec) {
      if (tokens.isAgentToken(secret)) {
        request.principal = { kind: 'agent', name: 'agent', tokenId: null, scopes: ['agent'] };
        return;
      }
      // Documented risk: without ENDERCLOUD_AGENT_TOKEN anyone who reaches the API can heartbeat as any agent id.
      if (!tokens.agentTokenConfigured && spec.anonymousWhenNoAgentToken && secret === undefined) {
        request.principal = { kind: 'anonymous-agent', name: 'agent', tokenId: null, scopes: ['agent'] };
        return;
      }
      if (!spec.orScope) throw new AppError('UNAUTHORIZED', tokens.agentTokenConfigured ? 'missing or wrong agent token' : 'this endpoint needs the agent token (ENDERCLOUD_AGENT_TOKEN is not configured)');
      await requireScope(request, tokens, secret, spec.orScope);
      return;
    }
    await requireScope(request, tokens, secret, spec.scope);
  };
}

async function requireScope(request: FastifyRequest, tokens: TokenService, secret: string | undefined, requirement: ScopeRequirement): Promise<void> {
  if (secret === undefined) throw new AppError('UNAUTHORIZED', 'missing bearer token (Authorization: Bearer <token>)');
  const principal = await tokens.authenticate(secret);
  if (!principal) throw new AppError('UNAUTHORIZED', 'unknown or revoked token');
  request.principal = principal;
  if (!hasScope(principal.scopes, requirement)) {
    throw new AppError('FORBIDDEN', `token ${principal.name} lacks scope ${requirement.scope} (accepted: ${requirement.anyOf.join(', ')})`, {
      details: { requiredScope: requirement.scope },
    });
  }
}
