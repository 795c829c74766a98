// `ectl templates ls|get|delete` and `ectl groups ls|get|delete`: the catalog
// read back. Deleting is refused in one line: the API has no delete endpoint.

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { deleteCommand, listCommand, showCommand } from '../command-shapes.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge, keyColumns } from '../table.js';
import type { GroupView, TemplateView } from '../../contracts/public-api/views.js';

export function registerCatalog(program: Command, ctx: CommandContext): void {
  const templates = program.command('templates').description('template versions (immutable; created with ectl apply)');
  listCommand<TemplateView, { name?: string; json?: boolean }>(templates, ctx, {
    description: 'list template versions',
    options: (c) => c.option('--name <name>', 'only versions of this template'),
    path: '/templates',
    key: 'templates',
    query: (opts) => ({ name: opts.name }),
    columns: [
      ...keyColumns<TemplateView>('name', 'version', 'image'),
      { header: 'memory', value: (t) => (t.resources?.memoryMb ? `${t.resources.memoryMb} MiB` : '-'), align: 'right' },
      { header: 'layers', value: (t) => t.layers?.length ?? 0, align: 'right' },
      { header: 'created', value: (t) => formatAge(t.createdAt, ctx.now()) },
    ],
    empty: 'no templates yet: ectl apply -f FILE',
  });
  templates
    .command('get <name> <version>')
    .description('one template version (printed as JSON: it is a document)')
    .option('--json', 'print JSON (the default)')
    .action(async (name: string, version: string) => {
      printJson(ctx.out, await (await ctx.client()).get(`/templates/${enc(name)}/versions/${enc(version)}`));
    });
  deleteCommand(templates, ctx, {
    use: 'delete <name> <version>',
    description: 'delete a template version (refused while a group variant uses it)',
    path: (name, version) => `/templates/${enc(name)}/versions/${enc(version)}`,
    done: (name, version) => `deleted template ${name}@${version}`,
  });

  const groups = program.command('groups').description('groups and their variants (written with ectl apply)');
  listCommand<GroupView>(groups, ctx, {
    description: 'list groups',
    path: '/groups',
    key: 'groups',
    columns: [
      ...keyColumns<GroupView>('id', 'kind', 'placement'),
      { header: 'variants', value: (g) => g.variants.map((v) => `${v.id}=${v.template.name}@${v.template.version}`).join(' ') },
      { header: 'max', value: (g) => g.caps?.maxInstances ?? '-', align: 'right' },
    ],
    empty: 'no groups yet: ectl apply -f FILE',
  });
  showCommand<GroupView>(groups, ctx, {
    use: 'get <id>',
    description: 'one group',
    path: (id) => `/groups/${enc(id)}`,
    fields: (g) => [
      ['id', g.id],
      ['kind', g.kind],
      ['placement', g.placement ?? '-'],
      ['max instances', String(g.caps?.maxInstances ?? '-')],
      ...g.variants.map((v): [string, string] => [`variant ${v.id}`, `${v.template.name}@${v.template.version}`]),
    ],
  });
  deleteCommand(groups, ctx, {
    use: 'delete <id>',
    description: 'delete a group and its variants (refused while it has instances)',
    path: (id) => `/groups/${enc(id)}`,
    done: (id) => `deleted group ${id}`,
  });
}
