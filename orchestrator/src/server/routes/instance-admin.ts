// Instance administration: settings and image/label changes (immediate or
// pending), scoped deletion with typed-name confirmation, and maintenance mode
// per instance and global.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { assertVariablesSettable, hiddenFrom } from '../../eggs/variable-access.js';
import type { JsonObject } from '../../domain/index.js';
import { planDeletion } from '../../lifecycle/deletion.js';
import { unwrap } from '../../lifecycle/result.js';
import { auditTarget, redactParams } from '../audit.js';
import { MANAGER_SCOPE, readScope, writeScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { secretNames } from '../services/instance-config.js';
import { userActor } from '../services/lifecycle-service.js';
import type { SettingsPatchBody } from '../services/pending-changes.js';
import { DeleteInstanceBody, MaintenanceBody, SettingsBody } from '../../contracts/public-api/bodies.js';
import { instanceView } from '../views.js';
import { paramInstance } from './route-helpers.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });

export async function instanceAdminRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.patch(
    '/instances/:id/settings',
    {
      schema: {
        tags: ['instances'],
        summary: 'Change settings, image or labels: immediate, or pending until one controlled replacement',
        params: InstanceParams,
        body: SettingsBody,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.settings', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const body = req.body as SettingsPatchBody;
      const instance = await paramInstance(ctx, req);
      const template = await ctx.lifecycle.templateOf(instance);
      auditTarget(req, instance.id, redactParams(body, secretNames(instance, template)) as JsonObject);
      assertVariablesSettable(req.principal, template, { settings: body.settings });
      const {
        instance: updated,
        applied,
        commandId,
      } = await ctx.lifecycle.changeSettings(instance.id, body, userActor(req.principal), { requestId: req.id });
      return reply.status(commandId ? 202 : 200).send({
        id: updated.id,
        applied,
        commandId,
        pendingChanges: instanceView(updated, undefined, hiddenFrom(req.principal, template)).pendingChanges,
        containerConfigPending: updated.containerConfigPending,
      });
    },
  );

  api.delete(
    '/instances/:id',
    {
      schema: {
        tags: ['instances'],
        params: InstanceParams,
        body: DeleteInstanceBody,
        summary: 'Delete with scopes container, technical (default) and player_data, backups (need "confirm": the instance name)',
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.delete', targetKind: 'instance' } },
      preValidation: async (req) => {
        if (req.body === undefined || req.body === null) req.body = {};
      },
    },
    async (req, reply) => {
      const body = req.body as DeleteInstanceBody;
      const instance = await paramInstance(ctx, req);
      const template = await ctx.lifecycle.templateOf(instance);
      auditTarget(req, instance.id, { scopes: body.scopes ?? null, confirmed: body.confirm === instance.name, name: instance.name });
      const plan = unwrap(
        planDeletion(instance, body, { playerData: template?.dataPaths ?? [], technical: template?.technicalPaths ?? [] }),
      );
      const has = (s: string) => plan.scopes.includes(s as never);
      const wholeRoot = has('technical') && has('player_data');
      const paths = [
        ...(has('technical') && !wholeRoot ? (template?.technicalPaths ?? []) : []),
        ...(has('player_data') && !wholeRoot ? (template?.dataPaths ?? []) : []),
      ];
      auditTarget(req, instance.id, { scopes: plan.scopes, retained: plan.retained, confirmed: plan.audited, name: instance.name });
      const result = await ctx.lifecycle.request(instance.id, 'delete', userActor(req.principal), {
        requestId: req.id,
        payload: { scopes: plan.scopes, keepData: !wholeRoot, paths },
        patch: { deletion: { scopes: plan.scopes, completed: [], requestedAt: ctx.clock.now(), lastError: null } },
      });
      return reply
        .status(202)
        .send({ id: instance.id, commandId: result.commandId, scopes: plan.scopes, retained: plan.retained, state: result.state });
    },
  );

  api.post(
    '/instances/:id/maintenance',
    {
      schema: {
        tags: ['instances'],
        summary: 'Per-instance maintenance: ordinary starts refused with the message (admin/manager)',
        params: InstanceParams,
        body: MaintenanceBody,
      },
      config: { auth: { scope: MANAGER_SCOPE }, audit: { action: 'instance.maintenance', targetKind: 'instance' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const body = req.body as Static<typeof MaintenanceBody>;
      const instance = await ctx.lifecycle.setInstanceMaintenance(id, body.enabled, body.message ?? '');
      auditTarget(req, instance.id, { enabled: body.enabled, message: body.message ?? '' });
      return instanceView(instance);
    },
  );

  api.post(
    '/maintenance',
    {
      schema: {
        tags: ['instances'],
        summary: 'Global maintenance: ordinary starts of every instance refused with the message (admin/manager)',
        body: MaintenanceBody,
      },
      config: { auth: { scope: MANAGER_SCOPE }, audit: { action: 'maintenance', targetKind: 'system' } },
    },
    async (req) => {
      const body = req.body as Static<typeof MaintenanceBody>;
      auditTarget(req, 'global', { enabled: body.enabled, message: body.message ?? '' });
      return maintenanceView(await ctx.lifecycle.setGlobalMaintenance(body.enabled, body.message ?? ''));
    },
  );

  api.get(
    '/maintenance',
    {
      schema: { tags: ['instances'], summary: 'Global maintenance state' },
      config: { auth: { scope: readScope('instances') } },
    },
    async () => maintenanceView(await ctx.lifecycle.globalMaintenance()),
  );
}

function maintenanceView(m: { enabled: boolean; message: string; since: number } | null) {
  return m ? { enabled: true, message: m.message, since: new Date(m.since).toISOString() } : { enabled: false, message: '', since: null };
}
