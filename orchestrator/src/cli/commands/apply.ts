// `ectl apply -f FILE [--dry-run]`: reads the declarative file, checksums the
// layer directories it names, checks every body with the server's own schemas
// and rules (apply-check.ts), reads the current state with list calls, prints
// the preview, then pushes layers, writes templates, then groups. Refusals and
// conflicts stop it before anything is written, also in a dry run.

import { readFile, stat } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { enc, listOf, type ApiClient } from '../api-client.js';
import { parseApplyFile, resolveLayers, type ApplyDocument, type JsonMap } from '../apply-file.js';
import {
  formatPlan,
  planApply,
  planCounts,
  writesOf,
  type CurrentState,
  type LocalLayer,
  type Normalizers,
  type PlanItem,
} from '../apply-plan.js';
import { normalizeGroup, normalizeTemplate } from '../../contracts/catalog-rules.js';
import type { GroupBody, TemplateBody } from '../../contracts/catalog.js';
import { checkApplyDocument, checkDependencies, describeConflict, serverRefusalLine } from '../apply-check.js';
import { isAppError } from '../../shared/errors.js';
import { layerChecksum } from '../../shared/layer-checksum.js';
import { ApiError, CliError } from '../errors.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { prepareArchive, uploadArchive, type LayerView } from './layers.js';

/** Newest checksum per layer id (by createdAt; later entries win ties). */
function newestLayers(layers: readonly LayerView[]): Map<string, string> {
  const time = (l: LayerView): number => (typeof l.createdAt === 'string' ? Date.parse(l.createdAt) : (l.createdAt ?? 0));
  const newest = new Map<string, LayerView>();
  for (const l of layers) {
    const cur = newest.get(l.id);
    if (!cur || time(l) >= time(cur)) newest.set(l.id, l);
  }
  return new Map([...newest].map(([id, l]) => [id, l.checksum]));
}

/** The file's `layers:` directories (relative to the file) with their canonical checksums. */
async function localLayers(doc: ApplyDocument, file: string, cwd: string): Promise<LocalLayer[]> {
  return Promise.all(
    (doc.layers ?? []).map(async (l) => {
      const dir = resolve(dirname(file), l.dir);
      const shown = relative(cwd, dir) || '.';
      const info = await stat(dir).catch(() => undefined);
      if (!info?.isDirectory())
        throw new CliError('usage', `${file}: layers.${l.id}: ${shown} is not a directory (paths are relative to the file)`);
      try {
        return { id: l.id, dir: shown, checksum: await layerChecksum(dir) };
      } catch (err) {
        if (isAppError(err)) throw new CliError('usage', `${file}: layers.${l.id}: ${err.message}`);
        throw err;
      }
    }),
  );
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

/** Everything apply compares against, from three list calls (a missing object is no error entry anywhere). */
async function currentState(client: ApiClient): Promise<CurrentState & { layerList: LayerView[] }> {
  const [templates, groups, layers] = await Promise.all([
    client.get('/templates').then((r) => listOf<JsonMap>(r, 'templates')),
    client.get('/groups').then((r) => listOf<JsonMap>(r, 'groups')),
    client.get('/template-layers').then((r) => listOf<LayerView>(r, 'layers')),
  ]);
  return {
    templates: new Map(templates.map((t) => [`${String(t.name)}@${String(t.version)}`, specOf(t)])),
    groups: new Map(groups.map((g) => [String(g.id), g])),
    layers: new Set(layers.map((l) => `${l.id}@${l.checksum}`)),
    layerList: layers,
  };
}

async function push(ctx: CommandContext, client: ApiClient, item: PlanItem): Promise<void> {
  const archive = await prepareArchive(ctx.resolvePath(String(item.body.dir)));
  try {
    const result = await uploadArchive<LayerView>(ctx, client, archive, `uploading ${item.key}`, `/template-layers/${enc(item.key)}`);
    if (result.checksum !== item.body.checksum) {
      throw new CliError(
        'runtime',
        `layer ${item.key}: the orchestrator computed checksum ${result.checksum} but the directory's is ${String(item.body.checksum)} (did it change during the push?)`,
      );
    }
  } finally {
    await archive.cleanup();
  }
}

async function write(client: ApiClient, item: PlanItem, dryRun = false): Promise<void> {
  if (item.kind === 'layer') throw new Error('layers are pushed, not written');
  const query = dryRun ? { query: { dryRun: 'true' } } : {};
  if (item.kind === 'template') {
    const at = item.key.lastIndexOf('@');
    await client.put(templatePath(item.key.slice(0, at), item.key.slice(at + 1)), item.body, query);
  } else {
    await client.put(`/groups/${enc(item.key)}`, item.body, query);
  }
}

/**
 * Every template and group write asked of the server in validate-only mode
 * (?dryRun=true) first, except those that refer to a template or layer only
 * this file brings (checkDependencies checked those references against the
 * lists): so the server never answers, nor audits, a "not found".
 */
async function serverRefusals(
  client: ApiClient,
  writes: readonly PlanItem[],
  file: string,
  needsFile: ReadonlySet<string>,
): Promise<string[]> {
  const out: string[] = [];
  for (const item of writes) {
    if (item.kind === 'layer' || needsFile.has(`${item.kind}:${item.key}`)) continue;
    try {
      await write(client, item, true);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500 || err.status === 401 || err.status === 403) throw err;
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
      const file = ctx.resolvePath(opts.file);
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (err) {
        throw new CliError('usage', `cannot read ${opts.file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
      }
      const parsed = parseApplyFile(text, opts.file);
      const layers = await localLayers(parsed, file, ctx.resolvePath('.'));
      const client = await ctx.client();
      const current = await currentState(client);
      // A ref without checksum takes the file's own directory checksum, else the newest pushed one.
      const doc = resolveLayers(parsed, new Map([...newestLayers(current.layerList), ...layers.map((l) => [l.id, l.checksum] as const)]));
      const problems = checkApplyDocument(doc, opts.file);
      if (problems.length > 0)
        throw new CliError(
          'usage',
          `${problems.join('\n')}\nnothing written: the orchestrator would refuse ${problems.length === 1 ? 'this field' : `these ${problems.length} fields`}`,
        );
      const deps = checkDependencies(
        doc,
        opts.file,
        { templates: new Set(current.templates.keys()), layers: current.layers! },
        {
          templates: new Set(doc.templates.map((t) => `${t.name}@${t.version}`)),
          layers: new Set(layers.map((l) => `${l.id}@${l.checksum}`)),
        },
      );
      if (deps.missingTemplates.length > 0) throw new CliError('usage', deps.missingTemplates.join('\n'));
      const normalizers = serverNormalizers();
      const plan = planApply(doc, current, normalizers, layers);
      const counts = planCounts(plan);
      const planJson = plan.map(({ kind, key, action, changes }) => ({ kind, key, action, changes }));
      if (!opts.json) ctx.out.write(formatPlan(plan));
      if (deps.missingLayers.length > 0) {
        if (opts.json) printJson(ctx.out, { plan: planJson, applied: false });
        throw new CliError(
          'runtime',
          `${deps.missingLayers.join('\n')}\nnothing written: push the layer or name its directory in the file's layers: section`,
        );
      }
      if (counts.conflict > 0) {
        if (opts.json) printJson(ctx.out, { plan: planJson, applied: false });
        const diffs = plan
          .filter((i) => i.action === 'conflict')
          .flatMap((i) => {
            const t = doc.templates.find((d) => `${d.name}@${d.version}` === i.key)!;
            return describeConflict(i.key, current.templates.get(i.key) ?? {}, normalizers.template(t.spec), i.changes);
          });
        throw new CliError(
          'runtime',
          `${diffs.join('\n')}\nnothing written: ${counts.conflict} template version(s) already exist with a different body; templates are immutable, give the changed template a new version`,
        );
      }
      const writes = writesOf(plan);
      const refused = await serverRefusals(client, writes, opts.file, deps.needsFile);
      if (refused.length > 0) {
        if (opts.json) printJson(ctx.out, { plan: planJson, applied: false });
        throw new CliError(
          'runtime',
          `${refused.join('\n')}\nnothing written: the orchestrator refused ${refused.length} object(s) in a validate-only check`,
        );
      }
      if (opts.dryRun || writes.length === 0) {
        if (opts.json) printJson(ctx.out, { plan: planJson, applied: false });
        else if (opts.dryRun) ctx.out.line('dry run: nothing written');
        else ctx.out.line('nothing to do');
        return;
      }
      for (const item of writes) {
        try {
          if (item.kind === 'layer') await push(ctx, client, item);
          else await write(client, item);
        } catch (err) {
          const done = writes.indexOf(item);
          if (done > 0 && !opts.json)
            ctx.out.error(`applied ${done} of ${writes.length} before the failure; run apply again after fixing it`);
          if (err instanceof ApiError && item.kind !== 'layer')
            throw new CliError('api', serverRefusalLine(opts.file, item.kind, item.key, err.code, err.apiMessage));
          throw err;
        }
        if (!opts.json)
          ctx.out.line(`${item.action === 'push' ? 'pushed' : item.action === 'create' ? 'created' : 'updated'} ${item.kind} ${item.key}`);
      }
      if (opts.json) printJson(ctx.out, { plan: planJson, applied: true });
      else
        ctx.out.line(
          `applied: ${counts.push > 0 ? `${counts.push} layer(s) pushed, ` : ''}${counts.create} created, ${counts.update} updated, ${counts.unchanged} unchanged`,
        );
    });
}
