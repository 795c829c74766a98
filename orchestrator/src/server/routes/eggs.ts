// POST /templates/import-egg: a Pterodactyl/Pelican egg becomes an immutable
// template version. `dryRun` answers the preview only; otherwise a refused
// egg stores nothing and the answer names the reason. POST /instances/:id/console:
// one command over RCON, or the stdin of egg servers.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { TemplateSpec } from '../../domain/index.js';
import { parseEgg } from '../../eggs/parse-egg.js';
import { AppError } from '../../shared/errors.js';
import { writeScope } from '../auth/scopes.js';
import { auditTarget } from '../audit.js';
import type { ServerContext } from '../context.js';
import { ConsoleBody, ImportEggBody } from '../../contracts/public-api/bodies.js';
import { sendConsoleCommand } from '../services/instance-console.js';
import { templateView } from '../views.js';

const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });

export async function eggRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  // One console command: over RCON when the template declares it (the answer is the server's reply), else written to stdin (no reply).
  api.post(
    '/instances/:id/console',
    {
      schema: {
        tags: ['instances'],
        summary: "Run one console command: RCON when the template has it, else the server's stdin",
        params: InstanceParams,
        body: ConsoleBody,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.console', targetKind: 'instance' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const { command } = req.body as ConsoleBody;
      const instance = await ctx.lifecycle.find(id);
      auditTarget(req, instance.id, { verb: command.trim().split(/\s+/)[0] ?? '' });
      return sendConsoleCommand(
        { host: (hostId) => ctx.queries.host(hostId), templateOf: (i) => ctx.lifecycle.templateOf(i), driver: ctx.driver },
        instance,
        command,
        { requestId: req.id },
      );
    },
  );

  api.post(
    '/templates/import-egg',
    {
      schema: {
        tags: ['templates'],
        summary: 'Import a Pterodactyl/Pelican egg as a template version (dryRun: the preview only)',
        body: ImportEggBody,
      },
      config: { auth: { scope: writeScope('templates') }, audit: { action: 'template.import-egg', targetKind: 'template' } },
    },
    async (req, reply) => {
      const body = req.body as ImportEggBody;
      const { template, preview } = parseEgg(body.egg, {
        ...(body.image !== undefined ? { image: body.image } : {}),
        ...(body.memoryMb !== undefined ? { memoryMb: body.memoryMb } : {}),
        ...(body.rcon ? { rcon: body.rcon } : {}),
        ...(body.installTimeoutMs !== undefined ? { installTimeoutMs: body.installTimeoutMs } : {}),
      });
      let checked: { spec: TemplateSpec; outcome: 'create' | 'unchanged' | 'conflict' } | undefined;
      if (template) {
        try {
          checked = await ctx.catalog.previewTemplate(body.name, body.version, template);
        } catch (err) {
          // The catalog's own rules on the imported body: what they refuse, the egg cannot be stored as.
          if (!(err instanceof AppError)) throw err;
          preview.refused = `the template it becomes is not valid: ${err.message}`;
        }
      }
      const outcome = preview.refused !== undefined || !checked ? 'refused' : checked.outcome;
      auditTarget(req, `${body.name}@${body.version}`, { dryRun: body.dryRun === true, outcome, format: preview.format });
      if (body.dryRun) return reply.status(200).send({ dryRun: true, outcome, preview, ...(checked ? { spec: checked.spec } : {}) });
      if (preview.refused !== undefined || !template) {
        throw new AppError('VALIDATION_FAILED', `egg refused: ${preview.refused ?? 'nothing to import'}`, { details: { preview } });
      }
      const { template: stored, created } = await ctx.catalog.putTemplate(body.name, body.version, template);
      return reply
        .status(created ? 201 : 200)
        .send({ dryRun: false, outcome: created ? 'create' : 'unchanged', created, preview, template: templateView(stored) });
    },
  );
}
