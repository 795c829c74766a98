// `ectl templates ls|get|delete` and `ectl groups ls|get|delete`: the catalog
// read back. Deleting is refused in one line: the API has no delete endpoint.

import type { Command } from 'commander';
import { enc, listOf } from '../api-client.js';
import { printFields, printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge } from '../table.js';

interface TemplateView {
  name: string;
  version: string;
  specHash?: string;
  createdAt?: string;
  image?: string;
  resources?: { memoryMb?: number };
  layers?: unknown[];
}

interface GroupView {
  id: string;
  kind: string;
  placement?: string;
  caps?: { maxInstances?: number | null } | null;
  variants: { id: string; template: { name: string; version: string } }[];
  updatedAt?: string;
}

export function registerCatalog(program: Command, ctx: CommandContext): void {
  const templates = program.command('templates').description('template versions (immutable; created with ectl apply)');
  templates
    .command('ls')
    .description('list template versions')
    .option('--name <name>', 'only versions of this template')
    .option('--json', 'print JSON')
    .action(async (opts: { name?: string; json?: boolean }) => {
      const rows = listOf<TemplateView>(await (await ctx.client()).get('/templates', { query: { name: opts.name } }), 'templates');
      if (opts.json) return printJson(ctx.out, rows);
      printTable(ctx.out, rows, [
        { header: 'name', value: (t) => t.name },
        { header: 'version', value: (t) => t.version },
        { header: 'image', value: (t) => t.image },
        { header: 'memory', value: (t) => (t.resources?.memoryMb ? `${t.resources.memoryMb} MiB` : '-'), align: 'right' },
        { header: 'layers', value: (t) => t.layers?.length ?? 0, align: 'right' },
        { header: 'created', value: (t) => formatAge(t.createdAt, ctx.now()) },
      ], 'no templates yet: ectl apply -f FILE');
    });
  templates
    .command('get <name> <version>')
    .description('one template version (printed as JSON: it is a document)')
    .option('--json', 'print JSON (the default)')
    .action(async (name: string, version: string) => {
      printJson(ctx.out, await (await ctx.client()).get(`/templates/${enc(name)}/versions/${enc(version)}`));
    });
  templates
    .command('delete <name> <version>')
    .description('delete a template version (refused while a group variant uses it)')
    .option('--json', 'print the answer as JSON')
    .action(async (name: string, version: string, opts: { json?: boolean }) => {
      const res = await (await ctx.client()).request<unknown>('DELETE', `/templates/${enc(name)}/versions/${enc(version)}`);
      if (opts.json) return printJson(ctx.out, res);
      ctx.out.line(`deleted template ${name}@${version}`);
    });

  const groups = program.command('groups').description('groups and their variants (written with ectl apply)');
  groups
    .command('ls')
    .description('list groups')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const rows = listOf<GroupView>(await (await ctx.client()).get('/groups'), 'groups');
      if (opts.json) return printJson(ctx.out, rows);
      printTable(ctx.out, rows, [
        { header: 'id', value: (g) => g.id },
        { header: 'kind', value: (g) => g.kind },
        { header: 'placement', value: (g) => g.placement },
        { header: 'variants', value: (g) => g.variants.map((v) => `${v.id}=${v.template.name}@${v.template.version}`).join(' ') },
        { header: 'max', value: (g) => g.caps?.maxInstances ?? '-', align: 'right' },
      ], 'no groups yet: ectl apply -f FILE');
    });
  groups
    .command('get <id>')
    .description('one group')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const g = await (await ctx.client()).get<GroupView>(`/groups/${enc(id)}`);
      if (opts.json) return printJson(ctx.out, g);
      printFields(ctx.out, [
        ['id', g.id],
        ['kind', g.kind],
        ['placement', g.placement ?? '-'],
        ['max instances', String(g.caps?.maxInstances ?? '-')],
        ...g.variants.map((v): [string, string] => [`variant ${v.id}`, `${v.template.name}@${v.template.version}`]),
      ]);
    });
  groups
    .command('delete <id>')
    .description('delete a group and its variants (refused while it has instances)')
    .option('--json', 'print the answer as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const res = await (await ctx.client()).request<unknown>('DELETE', `/groups/${enc(id)}`);
      if (opts.json) return printJson(ctx.out, res);
      ctx.out.line(`deleted group ${id}`);
    });
}
