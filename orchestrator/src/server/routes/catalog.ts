// Templates (immutable versions) and groups with their variants.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { readScope, writeScope } from '../auth/scopes.js';
import { auditTarget } from '../audit.js';
import type { ServerContext } from '../context.js';
import { GroupBody, TemplateBody, TemplateParams } from '../../contracts/catalog.js';
import { IdParams, IdString } from '../schemas/common.js';
import { groupView, templateView } from '../views.js';
import { getOneRoute, listRoute } from './route-helpers.js';

const TemplatesQuery = Type.Object({ name: Type.Optional(IdString) });
const DryRunQuery = Type.Object({
  dryRun: Type.Optional(Type.Boolean({ default: false, description: 'validate only: every check the write makes, nothing written (200)' })),
});

export async function catalogRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.put(
    '/templates/:name/versions/:version',
    {
      schema: {
        tags: ['templates'],
        summary: 'Create an immutable template version (same body again: 200; different: 409; dryRun=true: validate only)',
        params: TemplateParams,
        body: TemplateBody,
        querystring: DryRunQuery,
      },
      config: { auth: { scope: writeScope('templates') }, audit: { action: 'template.put', targetKind: 'template' } },
    },
    async (req, reply) => {
      const { name, version } = req.params as TemplateParams;
      const { dryRun } = req.query as Static<typeof DryRunQuery>;
      const { template, created } = await ctx.catalog.putTemplate(name, version, req.body as TemplateBody, { dryRun: dryRun === true });
      auditTarget(req, `${name}@${version}`, { specHash: template.specHash, created, ...(dryRun ? { dryRun: true } : {}) });
      if (dryRun) return reply.status(200).send({ ...templateView(template), dryRun: true, created });
      return reply.status(created ? 201 : 200).send(templateView(template));
    },
  );

  listRoute(api, {
    url: '/templates',
    tags: ['templates'],
    summary: 'List template versions',
    querystring: TemplatesQuery,
    scope: readScope('templates'),
    key: 'templates',
    load: ({ name }) => ctx.queries.templates(name ? { name } : {}),
    view: templateView,
  });

  getOneRoute(api, {
    url: '/templates/:name/versions/:version',
    tags: ['templates'],
    summary: 'One template version',
    params: TemplateParams,
    scope: readScope('templates'),
    load: ({ name, version }) => ctx.queries.template(name, version),
    code: 'TEMPLATE_NOT_FOUND',
    missing: ({ name, version }) => `template ${name} version ${version} does not exist`,
    view: templateView,
  });

  api.delete(
    '/templates/:name/versions/:version',
    {
      schema: { tags: ['templates'], summary: 'Delete a template version (409 while a variant uses it)', params: TemplateParams },
      config: { auth: { scope: writeScope('templates') }, audit: { action: 'template.delete', targetKind: 'template' } },
    },
    async (req) => {
      const { name, version } = req.params as TemplateParams;
      auditTarget(req, `${name}@${version}`);
      await ctx.catalog.deleteTemplate(name, version);
      return { name, version, deleted: true };
    },
  );

  api.put(
    '/groups/:id',
    {
      schema: {
        tags: ['groups'],
        summary: 'Create or replace a group and its variants (dryRun=true: validate only)',
        params: IdParams,
        body: GroupBody,
        querystring: DryRunQuery,
      },
      config: { auth: { scope: writeScope('groups') }, audit: { action: 'group.put', targetKind: 'group' } },
    },
    async (req, reply) => {
      const { id } = req.params as Static<typeof IdParams>;
      const { dryRun } = req.query as Static<typeof DryRunQuery>;
      const { group, created, changed } = await ctx.catalog.putGroup(id, req.body as GroupBody, {
        dryRun: dryRun === true,
        principal: req.principal,
      });
      auditTarget(req, id, { variants: group.variants.map((v) => v.id), created, changed, ...(dryRun ? { dryRun: true } : {}) });
      if (dryRun) return reply.status(200).send({ ...groupView(group), created, changed, dryRun: true });
      return reply.status(created ? 201 : 200).send({ ...groupView(group), created, changed });
    },
  );

  api.get(
    '/groups',
    {
      schema: { tags: ['groups'], summary: 'List groups' },
      config: { auth: { scope: readScope('groups') } },
    },
    async () => ({ groups: (await ctx.queries.groups()).map(groupView) }),
  );

  getOneRoute(api, {
    url: '/groups/:id',
    tags: ['groups'],
    summary: 'One group',
    params: IdParams,
    scope: readScope('groups'),
    load: ({ id }) => ctx.queries.group(id),
    code: 'GROUP_NOT_FOUND',
    missing: ({ id }) => `group ${id} does not exist`,
    view: groupView,
  });

  api.delete(
    '/groups/:id',
    {
      schema: { tags: ['groups'], summary: 'Delete a group and its variants (409 while instances exist)', params: IdParams },
      config: { auth: { scope: writeScope('groups') }, audit: { action: 'group.delete', targetKind: 'group' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof IdParams>;
      auditTarget(req, id);
      await ctx.catalog.deleteGroup(id);
      return { id, deleted: true };
    },
  );
}
