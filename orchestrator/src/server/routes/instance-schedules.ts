// Instance schedules (issue 24): list, create, read, replace, delete, run now.
// The schedule service checks the cron and the tasks; the leader runs them.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ScheduleInput } from '../../contracts/public-api/bodies.js';
import { readScope, writeScope } from '../auth/scopes.js';
import { auditTarget } from '../audit.js';
import type { ServerContext } from '../context.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const ScheduleParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128 }),
  scheduleId: Type.String({ minLength: 1, maxLength: 128 }),
});
type ScheduleParams = Static<typeof ScheduleParams>;

const summaryOf = (body: ScheduleInput) => ({
  name: body.name,
  cron: body.cron,
  enabled: body.enabled,
  tasks: body.tasks.map((t) => t.action),
});

export async function instanceScheduleRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.get(
    '/instances/:id/schedules',
    {
      schema: { tags: ['instances'], summary: "The instance's schedules with their next run", params: InstanceParams },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      return { schedules: await ctx.schedules.list(id) };
    },
  );

  api.post(
    '/instances/:id/schedules',
    {
      schema: {
        tags: ['instances'],
        summary: 'Create a schedule: a UTC cron and 1..10 tasks run in order',
        params: InstanceParams,
        body: ScheduleInput,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'schedule.create', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const body = req.body as ScheduleInput;
      auditTarget(req, id, summaryOf(body));
      const created = await ctx.schedules.create(id, body);
      auditTarget(req, created.instanceId, { ...summaryOf(body), scheduleId: created.id });
      return reply.status(201).send(created);
    },
  );

  api.get(
    '/instances/:id/schedules/:scheduleId',
    {
      schema: { tags: ['instances'], summary: 'One schedule', params: ScheduleParams },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const { id, scheduleId } = req.params as ScheduleParams;
      return ctx.schedules.get(id, scheduleId);
    },
  );

  api.put(
    '/instances/:id/schedules/:scheduleId',
    {
      schema: {
        tags: ['instances'],
        summary: "Replace a schedule's definition (its run history stays)",
        params: ScheduleParams,
        body: ScheduleInput,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'schedule.update', targetKind: 'instance' } },
    },
    async (req) => {
      const { id, scheduleId } = req.params as ScheduleParams;
      const body = req.body as ScheduleInput;
      auditTarget(req, id, { ...summaryOf(body), scheduleId });
      return ctx.schedules.update(id, scheduleId, body);
    },
  );

  api.delete(
    '/instances/:id/schedules/:scheduleId',
    {
      schema: { tags: ['instances'], summary: 'Delete a schedule (a run in progress finishes)', params: ScheduleParams },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'schedule.delete', targetKind: 'instance' } },
    },
    async (req) => {
      const { id, scheduleId } = req.params as ScheduleParams;
      auditTarget(req, id, { scheduleId });
      return { ...(await ctx.schedules.delete(id, scheduleId)), deleted: true as const };
    },
  );

  api.post(
    '/instances/:id/schedules/:scheduleId/run',
    {
      schema: {
        tags: ['instances'],
        summary: 'Run the schedule now (202; 409 INSTANCE_BUSY while a run of it is in progress)',
        params: ScheduleParams,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'schedule.run', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const { id, scheduleId } = req.params as ScheduleParams;
      auditTarget(req, id, { scheduleId });
      const started = await ctx.schedules.runNow(id, scheduleId);
      return reply.status(202).send({ ...started, accepted: true as const });
    },
  );
}
