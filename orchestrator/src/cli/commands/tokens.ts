// `ectl tokens create|ls|revoke`: API tokens (admin token). The secret is shown
// once, at creation, on stdout only.

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { jsonCommand, listCommand } from '../command-shapes.js';
import { CliError } from '../errors.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge, keyColumns } from '../table.js';
import type { TokenView } from '../../contracts/public-api/views.js';

export function registerTokens(program: Command, ctx: CommandContext): void {
  const tokens = program.command('tokens').description('API tokens (admin token)');
  tokens
    .command('create <name>')
    .description('create a token; its secret is printed once')
    .requiredOption(
      '--scope <scopes>',
      'comma-separated, e.g. read or instances:write,commands:read (repeatable)',
      (v: string, acc: string[] = []) => [
        ...acc,
        ...v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ],
    )
    .option('--json', 'print JSON (includes the secret)')
    .action(async (name: string, opts: { scope: string[]; json?: boolean }) => {
      if (opts.scope.length === 0) throw new CliError('usage', '--scope needs at least one scope');
      const t = await (await ctx.client()).post<TokenView & { secret: string }>('/tokens', { name, scopes: opts.scope });
      if (opts.json) return printJson(ctx.out, t);
      ctx.out.error(`token ${t.name} (${t.id}) created with scopes ${t.scopes.join(', ')}; its secret is shown only now:`);
      ctx.out.line(t.secret);
    });
  listCommand<TokenView>(tokens, ctx, {
    description: 'list tokens (never their secrets)',
    path: '/tokens',
    key: 'tokens',
    columns: [
      ...keyColumns<TokenView>('id', 'name'),
      { header: 'scopes', value: (t) => t.scopes.join(',') },
      { header: 'created', value: (t) => formatAge(t.createdAt, ctx.now()) },
      { header: 'last used', value: (t) => formatAge(t.lastUsedAt, ctx.now()) },
      { header: 'revoked', value: (t) => (t.revokedAt ? formatAge(t.revokedAt, ctx.now()) : '-') },
    ],
    empty: 'no tokens',
  });
  jsonCommand<TokenView>(tokens, ctx, {
    use: 'revoke <id>',
    description: 'revoke a token (by id, see ectl tokens ls)',
    fetch: async (_opts, id) => (await ctx.client()).delete<TokenView>(`/tokens/${enc(id)}`),
    render: (t) => ctx.out.line(`token ${t.name} (${t.id}) revoked`),
  });
}
