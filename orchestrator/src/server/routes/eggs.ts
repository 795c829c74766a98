// POST /templates/import-egg: a Pterodactyl/Pelican egg becomes an immutable
// template version. `dryRun` answers the preview only; otherwise a refused
// egg stores nothing and the answer names the reason.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { TemplateSpec } from '../../domain/index.js';
import { parseEgg } from '../../eggs/parse-egg.js';
import { AppError } from '../../shared/errors.js';
import { writeScope } from '../auth/scopes.js';
import { auditTarget } from '../audit.js';
import type { ServerContext } from '../context.js';
import { EnvName, IdString, VersionString } from '../schemas/common.js';
import { templateView } from '../views.js';

const ImportEggBody = Type.Object(
  {
    egg: Type.Unknown({ description: 'the egg JSON (PTDL_v1 or PTDL_v2), as exported by the panel' }),
    name: IdString,
    version: VersionString,
    image: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'key (label) of docker_images, or the image; default the first' })),
    dryRun: Type.Optional(Type.Boolean()),
    memoryMb: Type.Optional(Type.Integer({ minimum: 16, maximum: 1024 * 1024 })),
    installTimeoutMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 7_200_000 })),
    rcon: Type.Optional(Type.Object({ port: Type.Integer({ minimum: 1, maximum: 65535 }), passwordVariable: EnvName }, { additionalProperties: false, description: 'the server\'s RCON: the stop command goes over RCON instead of stdin' })),
  },
  { additionalProperties: false },
);
type ImportEggBody = Static<typeof ImportEggBody>;

export async function eggRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.post('/templates/import-egg', {
    schema: { tags: ['templates'], summary: 'Import a Pterodactyl/Pelican egg as a template version (dryRun: the preview only)', body: ImportEggBody },
    config: { auth: { scope: writeScope('templates') }, audit: { action: 'template.import-egg', targetKind: 'template' } },
  }, async (req, reply) => {
    const body = req.body as ImportEggBody;
    const { template, preview } = parseEgg(body.egg, {
      ...(body.image !== undefined ? { image: body.image } : {}), ...(body.memoryMb !== undefined ? { memoryMb: body.memoryMb } : {}),
      ...(body.rcon ? { rcon: body.rcon } : {}), ...(body.installTimeoutMs !== undefined ? { installTimeoutMs: body.installTimeoutMs } : {}),
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
    return reply.status(created ? 201 : 200).send({ dryRun: false, outcome: created ? 'create' : 'unchanged', created, preview, template: templateView(stored) });
  });
}
