// `ectl templates import-egg FILE --name N --version V [--image KEY|REF] [--dry-run]`
// (`--template-version` is the same flag; ectl's own `--version` is read only
// before the command): a Pterodactyl/Pelican egg (JSON, or YAML as Pelican exports it) becomes a template version. The preview (what was
// mapped, what has no equivalent, unknown fields) is printed first, like apply;
// a refused egg or a version that exists with another spec stops before a write.

import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { CliError } from '../errors.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import type { EggImportAnswer } from '../../contracts/public-api/answers.js';

type EggPreview = EggImportAnswer['preview'];
type ImportAnswer = EggImportAnswer;

interface ImportOptions {
  name: string;
  version?: string;
  templateVersion?: string;
  image?: string;
  memory?: string;
  dryRun?: boolean;
  json?: boolean;
}

function printPreview(ctx: CommandContext, p: EggPreview, outcome: string, target: string): void {
  ctx.out.line(`egg ${JSON.stringify(p.eggName ?? '?')} (${p.format ?? 'unknown format'}) → template ${target}: ${outcome}`);
  for (const m of p.mapped) ctx.out.line(`  mapped        ${m.from} → ${m.to}`);
  for (const u of p.untranslated) ctx.out.line(`  untranslated  ${u.field}: ${u.reason}`);
  for (const f of p.unknownFields) ctx.out.line(`  unknown field ${f}`);
  if (p.refused !== undefined) ctx.out.line(`  REFUSED       ${p.refused}`);
}

export function registerEggs(program: Command, ctx: CommandContext): void {
  const templates = program.commands.find((c) => c.name() === 'templates') ?? program.command('templates');
  templates
    .command('import-egg <file>')
    .description(
      'import a Pterodactyl/Pelican egg (PTDL_v1/v2, PLCN_v1/v2/v3; JSON or YAML) as a template version; prints the preview first',
    )
    .requiredOption('--name <name>', 'template name')
    .option('--version <version>', 'template version (immutable)')
    .option('--template-version <version>', 'the same as --version')
    .option(
      '--image <key|ref>',
      "one of the egg's docker_images (its label or the image), or any image reference; default the first of docker_images",
    )
    .option('--memory <mb>', 'memory in MiB (eggs carry none; default 1024)')
    .option('--dry-run', 'only show the preview')
    .option('--json', 'print the answer as JSON')
    .action(async (file: string, opts: ImportOptions) => {
      if (opts.version !== undefined && opts.templateVersion !== undefined && opts.version !== opts.templateVersion) {
        throw new CliError('usage', `--version ${opts.version} and --template-version ${opts.templateVersion} disagree: give one`);
      }
      const version = opts.version ?? opts.templateVersion;
      if (version === undefined) throw new CliError('usage', 'import-egg needs the template version: --version V');
      let egg: unknown;
      try {
        const text = await readFile(ctx.resolvePath(file), 'utf8');
        // Pelican exports eggs as YAML too (PLCN_v2 and later); a .yaml/.yml file is read as YAML.
        egg = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
      } catch (err) {
        throw new CliError('usage', `${file}: not a readable ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'} egg (${(err as Error).message})`);
      }
      const memoryMb = opts.memory === undefined ? undefined : Number(opts.memory);
      if (memoryMb !== undefined && !Number.isInteger(memoryMb))
        throw new CliError('usage', `--memory ${opts.memory}: a whole number of MiB`);
      const body = {
        egg,
        name: opts.name,
        version,
        ...(opts.image ? { image: opts.image } : {}),
        ...(memoryMb !== undefined ? { memoryMb } : {}),
      };
      const client = await ctx.client();
      const target = `${opts.name}@${version}`;
      const preview = await client.post<ImportAnswer>('/templates/import-egg', { ...body, dryRun: true });
      if (opts.json && opts.dryRun) return printJson(ctx.out, preview);
      if (!opts.json) printPreview(ctx, preview.preview, preview.outcome, target);
      if (preview.outcome === 'refused')
        throw new CliError('runtime', `egg refused: ${preview.preview.refused ?? 'see the preview'}; nothing was written`);
      if (preview.outcome === 'conflict')
        throw new CliError(
          'runtime',
          `template ${target} already exists with a different spec: choose a new --version; nothing was written`,
        );
      if (opts.dryRun) return;
      const stored = await client.post<ImportAnswer>('/templates/import-egg', body);
      if (opts.json) return printJson(ctx.out, stored);
      ctx.out.line(
        `template ${target} ${stored.outcome === 'create' ? 'created' : 'unchanged'} (spec ${stored.template?.specHash.slice(0, 12) ?? '?'})`,
      );
    });
}
