// Installation requests (ask with instances:request; an admin/manager previews,
// approves or rejects) and `ectl preview` (what a create would do, writing nothing).

import { Option, type Command } from 'commander';
import { INSTALLATION_REQUEST_STATUSES } from '../../domain/installation-request.js';
import { enc } from '../api-client.js';
import { listCommand } from '../command-shapes.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge, keyColumns } from '../table.js';
import type { InstallationRequestView } from '../../contracts/public-api/views.js';

type RequestView = InstallationRequestView;

export function registerRequests(program: Command, ctx: CommandContext): void {
  program
    .command('preview')
    .description('what ectl instances create would do now: resolved config (secrets redacted), placement, caps left; writes nothing')
    .requiredOption('--group <id>', 'group id')
    .requiredOption('--variant <id>', 'variant id')
    .option('--name <name>', 'instance name')
    .option('--json', 'print JSON (the default: the preview is a document)')
    .action(async (opts: { group: string; variant: string; name?: string }) => {
      const body = { groupId: opts.group, variantId: opts.variant, ...(opts.name ? { name: opts.name } : {}) };
      printJson(ctx.out, await (await ctx.client()).post('/instances/preview', body));
    });

  const requests = program.command('requests').description('installation requests: ask for an instance; an admin or manager decides');
  listCommand<RequestView, { status?: string; json?: boolean }>(requests, ctx, {
    description: 'requests (yours, or all with an admin/manager/operator token), oldest first',
    options: (c) => c.addOption(new Option('--status <status>', 'only requests with this status').choices(INSTALLATION_REQUEST_STATUSES)),
    path: '/installation-requests',
    key: 'requests',
    query: (opts) => ({ status: opts.status }),
    columns: [
      ...keyColumns<RequestView>('id', 'status'),
      { header: 'by', value: (r) => r.requestedBy },
      { header: 'group', value: (r) => r.groupId },
      { header: 'variant', value: (r) => r.variantId },
      { header: 'name', value: (r) => r.name },
      { header: 'instance', value: (r) => r.instanceId },
      { header: 'age', value: (r) => formatAge(r.createdAt, ctx.now()) },
    ],
    empty: 'no installation requests',
  });
  requests
    .command('get <id>')
    .description('one request')
    .option('--json', 'print JSON (the default)')
    .action(async (id: string) => printJson(ctx.out, await (await ctx.client()).get(`/installation-requests/${enc(id)}`)));
  requests
    .command('create')
    .description('ask for an instance of a group variant')
    .requiredOption('--group <id>', 'group id')
    .requiredOption('--variant <id>', 'variant id')
    .option('--name <name>', 'wanted instance name')
    .option('--note <text>', 'a note for the reviewer')
    .option('--json', 'print JSON')
    .action(async (opts: { group: string; variant: string; name?: string; note?: string; json?: boolean }) => {
      const body = {
        groupId: opts.group,
        variantId: opts.variant,
        ...(opts.name ? { name: opts.name } : {}),
        ...(opts.note ? { suggested: { note: opts.note } } : {}),
      };
      const r = await (await ctx.client()).post<RequestView>('/installation-requests', body);
      if (opts.json) return printJson(ctx.out, r);
      ctx.out.line(`installation request ${r.id} is ${r.status}`);
    });
  requests
    .command('preview <id>')
    .description('what approving would create now (admin/manager token)')
    .action(async (id: string) => printJson(ctx.out, await (await ctx.client()).get(`/installation-requests/${enc(id)}/preview`)));
  requests
    .command('approve <id>')
    .description('approve: the normal creation path runs (admin/manager token)')
    .option('--name <name>', 'instance name (default: the requested one)')
    .option('--note <text>', 'a note kept with the decision')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { name?: string; note?: string; json?: boolean }) => {
      const body = { ...(opts.name ? { name: opts.name } : {}), ...(opts.note ? { note: opts.note } : {}) };
      const r = await (
        await ctx.client()
      ).post<{ request: RequestView; instance: { id: string; name: string; state: string } }>(
        `/installation-requests/${enc(id)}/approve`,
        body,
      );
      if (opts.json) return printJson(ctx.out, r);
      ctx.out.line(`installation request ${id} approved: instance ${r.instance.name} (${r.instance.id}) is ${r.instance.state}`);
    });
  requests
    .command('reject <id>')
    .description('reject with a note; nothing is created (admin/manager token)')
    .requiredOption('--note <text>', 'why')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { note: string; json?: boolean }) => {
      const r = await (await ctx.client()).post<{ request: RequestView }>(`/installation-requests/${enc(id)}/reject`, { note: opts.note });
      if (opts.json) return printJson(ctx.out, r);
      ctx.out.line(`installation request ${id} rejected`);
    });
}
