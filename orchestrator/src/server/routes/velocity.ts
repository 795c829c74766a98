// GET /router/velocity.toml?groups=a,b: the registry rendered as a Velocity
// `[servers]` table + `try` (src/server/registry/velocity-fragment.ts), for a
// network that keeps Velocity in front of EnderCloud backends (docs/router.md
// "Velocity in the loop"). Read by the router token or any instances reader.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../shared/errors.js';
import { readScope, type ScopeRequirement } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { renderVelocityFragment } from '../registry/velocity-fragment.js';

export const VELOCITY_FRAGMENT_ACCESS: ScopeRequirement = { scope: 'instances:read', anyOf: [...readScope('instances').anyOf, 'router'] };
const MAX_GROUPS = 100;

const Query = Type.Object({
  groups: Type.String({ minLength: 1, maxLength: 4096, description: 'comma-separated group ids, in `try` order' }),
});

/** `a, b,,c` → `[a, b, c]`, duplicates dropped (first position kept). */
export function parseGroupList(text: string): string[] {
  return [
    ...new Set(
      text
        .split(',')
        .map((g) => g.trim())
        .filter((g) => g.length > 0),
    ),
  ];
}

export async function velocityRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.get<{ Querystring: Static<typeof Query> }>(
    '/router/velocity.toml',
    {
      schema: {
        tags: ['router'],
        summary: 'The registry as a Velocity [servers] + try fragment (text/plain TOML), Running instances of the given groups',
        querystring: Query,
      },
      config: { auth: { scope: VELOCITY_FRAGMENT_ACCESS } },
    },
    async (req, reply) => {
      const groups = parseGroupList(req.query.groups);
      if (groups.length === 0) throw new AppError('VALIDATION_FAILED', 'groups: name at least one group id (groups=lobby,survival)');
      if (groups.length > MAX_GROUPS) throw new AppError('VALIDATION_FAILED', `groups: at most ${MAX_GROUPS} groups, got ${groups.length}`);
      for (const id of groups) {
        if (!(await ctx.queries.group(id))) throw new AppError('GROUP_NOT_FOUND', `group ${id} does not exist`);
      }
      const snapshot = await ctx.registry.snapshot();
      return reply
        .type('text/plain; charset=utf-8')
        .send(renderVelocityFragment({ backends: snapshot.backends, groups, revision: snapshot.revision }));
    },
  );
}
