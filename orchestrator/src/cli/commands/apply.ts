// `ectl apply -f FILE [--dry-run]`: reads the declarative file, checks every
// body with the server's own schemas and rules (apply-check.ts), GETs the
// current state, prints the preview, then writes templates before groups.
// Refusals and conflicts stop it before anything is written, also in a dry run.

import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { enc, listOf, type ApiClient } from '../api-client.js';
import { parseApplyFile, resolveLayers, unresolvedLayers, type ApplyDocument, type JsonMap } from '../apply-file.js';
import { formatPlan, planApply, planCounts, writesOf, type CurrentState, type Normalizers, type PlanItem } from '../apply-plan.js';
import { normalizeGroup, normalizeTemplate } from '../../contracts/catalog-rules.js';
import type { GroupBody, TemplateBody } from '../../contracts/catalog.js';
import { checkApplyDocument, describeConflict, serverRefusalLine } from '../apply-check.js';
import { isAppError } from '../../shared/errors.js';
import { ApiError, CliError } from '../errors.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import type { LayerView } from './layers.js';

/** Newest checksum per layer id (by createdAt; later entries win ties). */
async function newestLayers(client: ApiClient): Promise<Map<string, string>> {
  const layers = listOf<LayerView>(await client.get('/template-layers'), 'layers');
  const time = (l: LayerView): number => (typeof l.createdAt === 'string' ? Date.parse(l.createdAt) : (l.createdAt ?? 0));
  const newest = new Map<string, LayerView>();
  for (const l of layers) {
    const cur = newest.get(l.id);
    if (!cur || time(l) >= time(cur)) newest.set(l.id, l);
  }
  return new Map([...newest].map(([id, l]) => [id, l.checksum]));
}

/** A template version answer is `{name, version, specHash, createdAt, ...spec}`; keep the spec. */
function specOf(answer: JsonMap | undefined): JsonMap | undefined {
  if (!answer) return undefined;
  if (answer.spec && typeof answer.spec === 'object' && !Array.isArray(answer.spec)) return answer.spec as JsonMap;
  const { name: _n, version: _v, specHash: _h, createdAt: _c, ...spec } = answer;
  return spec;
}

/**
 * The server's own pure normalizers: the preview then agrees exactly with the
 * server's immutability check. A body they reject is a usage error shown
 * before anything is written.
 */
function serverNormalizers(): Normalizers {
  const wrap = (what: string, fn: () => unknown, fallback: JsonMap): JsonMap => {
    try {
      return JSON.parse(JSON.stringify(fn())) as JsonMap;
    } catch (err) {
      if (isAppError(err)) throw new CliError('usage', `${what}: ${err.message}`);
      return fallback; // structurally odd: let the server name the problem
    }
  };
  return {
    template: (spec) => wrap('template', () => normalizeTemplate(spec as unknown as TemplateBody), spec),
    group: (body) => wrap('group', () => normalizeGroup(body as unknown as GroupBody), body),
  };
}

const templatePath = (name: string, version: string): string => `/templates/${enc(name)}/versions/${enc(version)}`;

async function currentState(client: ApiClient, doc: ApplyDocument): Promise<CurrentState> {
  const templates = new Map<string, JsonMap | undefined>();
  const groups = new Map<string, JsonMap | undefined>();
  await Promise.all([
    ...doc.templates.map(async (t) => templates.set(`${t.name}@${t.version}`, specOf(await client.getOptional<JsonMap>(templatePath(t.name, t.version))))),
    ...doc.groups.map(async (g) => groups.set(g.id, await client.getOptional<JsonMap>(`/groups/${enc(g.id)}`))),
  ]);
  return { templates, groups };
}

/** Variants may use template versions defined outside the file; they must exist already. */
async function checkExternalTemplates(client: ApiClient, doc: ApplyDocument): Promise<void> {
  const inFile = new Set(doc.templates.map((t) => `${t.name}@${t.version}`));
  const wanted = new Map<string, { name: string; version: string; group: string }>();
  for (const g of doc.groups) {
    for (const v of g.body.variants as JsonMap[]) {
      const t = v.template as { name: string; version: string };
      const key = `${t.name}@${t.version}`;
      if (!inFile.has(key)) wanted.set(key, { ...t, group: g.id });
    }
  }
  for (const [key, t] of wanted) {
    if (!(await client.getOptional(templatePath(t.name, t.version)))) {
      throw new CliError('usage', `group ${t.group} uses template ${key}, which is neither in the file nor on the orchestrator`);
    }
  }
}

async function write(client: ApiClient, item: PlanItem, dryRun = false): Promise<void> {
  const query = dryRun ? { query: { dryRun: 'true' } } : {};
  if (item.kind === 'template') {
    const at = item.key.lastIndexOf('@');
    await client.put(templatePath(item.key.slice(0, at), item.key.slice(at + 1)), item.body, query);
  } else {
    await client.put(`/groups/${enc(item.key)}`, item.body, query);
  }
}

/**
 * Every write asked of the server in validate-only mode (?dryRun=true) first:
 * what needs the store (layers uploaded, template versions present) is checked
 * by the server itself. A group whose template is created by this same file is
 * not refused for that template.
 */
async function serverRefusals(client: ApiClient, writes: readonly PlanItem[], file: string): Promise<string[]> {
  const created = new Set(writes.filter((w) => w.kind === 'template').map((w) => w.key));
  const out: string[] = [];
  for (const item of writes) {
    try {
      await write(client, item, true);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500 || err.status === 401 || err.status === 403) throw err;
      const missing = /template (\S+) version (\S+) does not exist/.exec(err.apiMessage);
      if (err.code === 'TEMPLATE_NOT_FOUND' && missing && created.has(`${missing[1]}@${missing[2]}`)) continue;
      out.push(serverRefusalLine(file, item.kind, item.key, err.code, err.apiMessage));
    }
  }
  return out;
}

export function registerApply(program: Command, ctx: CommandContext): void {
  program
    .command('apply')
    .description('create or update templates and groups from a declarative YAML file (idempotent)')
    .requiredOption('-f, --file <file>', 'the YAML file (see docs/cli.md for the format)')
    .option('--dry-run', 'only show the preview')
    .option('--json', 'print the preview (and result) as JSON')
    .action(async (opts: { file: string; dryRun?: boolean; json?: boolean }) => {
      let text: string;
      try {
        text = await readFile(opts.file, 'utf8');
      } catch (err) {
        throw new CliError('usage', `cannot read ${opts.file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
      }
      let doc = parseApplyFile(text, opts.file);
      const client = await ctx.client();
      if (unresolvedLayers(doc).length > 0) doc = resolveLayers(doc, await newestLayers(client));
      const problems = checkApplyDocument(doc, opts.file);
      if (problems.length > 0) throw new CliError('usage', `${problems.join('\n')}\nnothing written: the orchestrator would refuse ${problems.length === 1 ? 'this field' : `these ${problems.length} fields`}`);
      await checkExternalTemplates(client, doc);
      const current = await currentState(client, doc);
      const normalizers = serverNormalizers();
      const plan = planApply(doc, current, normalizers);
      const counts = planCounts(plan);
      const planJson = plan.map(({ kind, key, action, changes }) => ({ kind, key, action, changes }));
      if (!opts.json) ctx.out.write(formatPlan(plan));
      if (counts.conflict > 0) {
        if (opts.json) printJson(ctx.out, { plan: planJson, applied: false });
        const diffs = plan.filter((i) => i.action === 'conflict').flatMap((i) => {
          const t = doc.templates.find((d) => `${d.name}@${d.version}` === i.key)!;
          return describeConflict(i.key, current.templates.get(i.key) ?? {}, normalizers.template(t.spec), i.changes);
        });
        throw new CliError(
          'runtime',
          `${diffs.join('\n')}\nnothing written: ${counts.conflict} template version(s) already exist with a different body; templates are immutable, give the changed template a new version`,
        );
      }
      const writes = writesOf(plan);
      const refused = await serverRefusals(client, writes, opts.file);
      if (refused.length > 0) {
        if (opts.json) printJson(ctx.out, { plan: planJson, applied: false });
        throw new CliError('runtime', `${refused.join('\n')}\nnothing written: the orchestrator refused ${refused.length} object(s) in a validate-only check`);
      }
      if (opts.dryRun || writes.length === 0) {
        if (opts.json) printJson(ctx.out, { plan: planJson, applied: false });
        else if (opts.dryRun) ctx.out.line('dry run: nothing written');
        else ctx.out.line('nothing to do');
        return;
      }
      for (const item of writes) {
        try {
          await write(client, item);
        } catch (err) {
          const done = writes.indexOf(item);
          if (done > 0 && !opts.json) ctx.out.error(`applied ${done} of ${writes.length} before the failure; run apply again after fixing it`);
          if (err instanceof ApiError) throw new CliError('api', serverRefusalLine(opts.file, item.kind, item.key, err.code, err.apiMessage));
          throw err;
        }
        if (!opts.json) ctx.out.line(`${item.action === 'create' ? 'created' : 'updated'} ${item.kind} ${item.key}`);
      }
      if (opts.json) printJson(ctx.out, { plan: planJson, applied: true });
      else ctx.out.line(`applied: ${counts.create} created, ${counts.update} updated, ${counts.unchanged} unchanged`);
    });
}
