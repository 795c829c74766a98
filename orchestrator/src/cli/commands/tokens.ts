// `ectl tokens create|ls|revoke`: API tokens (admin token). The secret is shown
// once, at creation, on stdout only.

import type { Command } from 'commander';
import { enc, listOf } from '../api-client.js';
import { CliError } from '../errors.js';
import { printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge } from '../table.js';

interface TokenView {
  id: string;
  name: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export function registerTokens(program: Command, ctx: CommandContext): void {
  const tokens = program.command('tokens').description('API tokens (admin token)');
  tokens
    .command('create <name>')
    .description('create a token; its secret is printed once')
    .requiredOption('--scope <scopes>', 'comma-separated, e.g. read or instances:write,commands:read (repeatable)', (v: string, acc: string[] = []) => [...acc, ...v.split(',').map((s) => s.trim()).filter(Boolean)])
    .option('--json', 'print JSON (includes the secret)')
    .action(async (name: string, opts: { scope: string[]; json?: boolean }) => {
      if (opts.scope.length === 0) throw new CliError('usage', '--scope needs at least one scope');
      const t = await (await ctx.client()).post<TokenView & { secret: string }>('/tokens', { name, scopes: opts.scope });
      if (opts.json) return printJson(ctx.out, t);
      ctx.out.error(`token ${t.name} (${t.id}) created with scopes ${t.scopes.join(', ')}; its secret is shown only now:`);
      ctx.out.line(t.secret);
    });
  tokens
    .command('ls')
    .description('list tokens (never their secrets)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const rows = listOf<TokenView>(await (await ctx.client()).get('/tokens'), 'tokens');
      if (opts.json) return printJson(ctx.out, rows);
      printTable(ctx.out, rows, [
        { header: 'id', value: (t) => t.id },
        { header: 'name', value: (t) => t.name },
        { header: 'scopes', value: (t) => t.scopes.join(',') },
        { header: 'created', value: (t) => formatAge(t.createdAt, ctx.now()) },
        { header: 'last used', value: (t) => formatAge(t.lastUsedAt, ctx.now()) },
        { header: 'revoked', value: (t) => (t.revokedAt ? formatAge(t.revokedAt, ctx.now()) : '-') },
      ], 'no tokens');
    });
  tokens
    .command('revoke <id>')
    .description('revoke a token (by id, see ectl tokens ls)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const t = await (await ctx.client()).delete<TokenView>(`/tokens/${enc(id)}`);
      if (opts.json) return printJson(ctx.out, t);
      ctx.out.line(`token ${t.name} (${t.id}) revoked`);
    });
}
