// The audit log (admin): every mutating API call with its actor, target,
// redacted parameters and result, newest first.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ADMIN_SCOPE } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { auditView } from '../views.js';

const AuditQuery = Type.Object({
  targetKind: Type.Optional(Type.String({ maxLength: 64 })),
  targetId: Type.Optional(Type.String({ maxLength: 256 })),
  actor: Type.Optional(Type.String({ maxLength: 128 })),
  beforeId: Type.Optional(Type.Integer({ minimum: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
});

export async function auditRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.get(
    '/audit',
    {
      schema: { tags: ['audit'], summary: 'Audit entries, newest first (page with beforeId)', querystring: AuditQuery },
      config: { auth: { scope: ADMIN_SCOPE } },
    },
    async (req) => {
      const q = req.query as Static<typeof AuditQuery>;
      return { entries: (await ctx.queries.audit({ ...q, limit: q.limit ?? 100 })).map(auditView) };
    },
  );
}
