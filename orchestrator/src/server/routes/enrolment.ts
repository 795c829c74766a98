// Host enrolment (issue 26, docs/agent.md "Enrolment"): an admin's one-time
// join tokens, the agent's POST /agents/enrol that trades one for the host's
// own credentials, and the admin's revocation of a host credential.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { EnrolBody } from '../../contracts/agent-api.js';
import { JoinTokenBody } from '../../contracts/public-api/bodies.js';
import { parseDuration } from '../../shared/config.js';
import { AppError } from '../../shared/errors.js';
import { bearerOf } from '../../shared/http.js';
import { auditTarget } from '../audit.js';
import { ADMIN_SCOPE } from '../auth/scopes.js';
import { actorOf, type ServerContext } from '../context.js';
import { joinTokenState, type JoinTokenRecord } from '../services/host-enrolment.js';
import { hostAnswer } from './route-helpers.js';

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function joinTokenView(t: JoinTokenRecord, now: number) {
  return {
    id: t.id,
    agentId: t.agentId,
    state: joinTokenState(t, now),
    createdBy: t.createdBy,
    createdAt: iso(t.createdAt)!,
    expiresAt: iso(t.expiresAt)!,
    usedAt: iso(t.usedAt),
    usedBy: t.usedBy,
    revokedAt: iso(t.revokedAt),
  };
}

/** `ttl` as seconds or a duration such as 1h, in ms. */
function ttlMs(ttl: JoinTokenBody['ttl']): number | undefined {
  if (ttl === undefined) return undefined;
  if (typeof ttl === 'number') return ttl * 1000;
  try {
    return parseDuration(ttl);
  } catch (err) {
    throw new AppError('VALIDATION_FAILED', `body/ttl ${(err as Error).message}`, { details: { field: 'ttl' } });
  }
}

export async function enrolmentRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const admin = { auth: { scope: ADMIN_SCOPE } };

  api.post(
    '/hosts/join-tokens',
    {
      schema: {
        tags: ['hosts'],
        summary: 'Create a one-time join token for enrolling an agent (the secret is shown once)',
        body: JoinTokenBody,
      },
      config: { ...admin, audit: { action: 'host.join-token.create', targetKind: 'join-token' } },
    },
    async (req, reply) => {
      const body = req.body as JoinTokenBody;
      const { token, secret } = await ctx.enrolment.createJoinToken({ agentId: body.agentId, ttlMs: ttlMs(body.ttl) }, actorOf(req));
      auditTarget(req, token.id, { agentId: token.agentId, expiresAt: iso(token.expiresAt) });
      return reply.status(201).send({ ...joinTokenView(token, ctx.clock.now()), secret });
    },
  );

  api.get(
    '/hosts/join-tokens',
    { schema: { tags: ['hosts'], summary: 'List join tokens (never their secrets), with used/expired/revoked state' }, config: admin },
    async () => {
      const now = ctx.clock.now();
      return { joinTokens: (await ctx.enrolment.list()).map((t) => joinTokenView(t, now)) };
    },
  );

  api.delete(
    '/hosts/join-tokens/:id',
    {
      schema: { tags: ['hosts'], summary: 'Revoke an unused join token', params: IdParams },
      config: { ...admin, audit: { action: 'host.join-token.revoke', targetKind: 'join-token' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof IdParams>;
      return joinTokenView(await ctx.enrolment.revokeJoinToken(id), ctx.clock.now());
    },
  );

  api.post(
    '/agents/enrol',
    {
      schema: {
        tags: ['hosts'],
        summary:
          "Enrol an agent (the join token as bearer): consumes the token and answers the host's own credentials; re-enrolment rotates them and may move the host's controlUrl",
        body: EnrolBody,
      },
      config: { auth: { joinToken: true }, audit: { action: 'host.enrol', targetKind: 'host' } },
    },
    async (req) => {
      const body = req.body as EnrolBody;
      auditTarget(req, body.agentId, { controlUrl: body.controlUrl });
      const out = await ctx.enrolment.enrol(bearerOf(req.headers.authorization)!, body);
      req.principal = { kind: 'join-token', name: `join token ${out.joinTokenId}`, tokenId: null, scopes: [] };
      auditTarget(req, out.host.id, {
        kind: out.reenrolled ? 're-enrol' : 'enrol',
        joinTokenId: out.joinTokenId,
        controlUrl: out.host.controlUrl,
        previousControlUrl: out.previousControlUrl,
        generation: out.generation,
      });
      ctx.logger.info(
        { hostId: out.host.id, controlUrl: out.host.controlUrl, previousControlUrl: out.previousControlUrl, generation: out.generation },
        out.reenrolled ? 'host re-enrolled: both credentials rotated' : 'host enrolled',
      );
      return {
        hostId: out.host.id,
        hostCredential: out.hostCredential,
        callCredential: out.callCredential,
        credentialGeneration: out.generation,
        controlUrl: out.host.controlUrl,
      };
    },
  );

  api.post(
    '/hosts/:id/revoke-credential',
    {
      schema: {
        tags: ['hosts'],
        summary: "Revoke a host's own credential at once (its heartbeats answer 401; it comes back only by re-enrolment)",
        params: IdParams,
      },
      config: { ...admin, audit: { action: 'host.credential.revoke', targetKind: 'host' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof IdParams>;
      return hostAnswer(ctx, await ctx.enrolment.revokeCredential(id));
    },
  );
}
