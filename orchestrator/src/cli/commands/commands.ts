// `ectl commands get ID|ls`: durable commands (status, attempts, last error).

import type { Command } from 'commander';
import { enc, listOf } from '../api-client.js';
import { printFields, printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge } from '../table.js';
import { positiveInt } from './instances.js';

interface CommandView {
  id: string;
  kind: string;
  instanceId: string | null;
  hostId: string | null;
  status: string;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  createdAt: string;
  completedAt: string | null;
}

export function registerCommands(program: Command, ctx: CommandContext): void {
  const commands = program.command('commands').description('inspect durable commands');
  commands
    .command('get <id>')
    .description('show one command')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const c = await (await ctx.client()).get<CommandView>(`/commands/${enc(id)}`);
      if (opts.json) return printJson(ctx.out, c);
      printFields(ctx.out, [
        ['id', c.id],
        ['kind', c.kind],
        ['status', c.status],
        ['instance', c.instanceId ?? '-'],
        ['host', c.hostId ?? '-'],
        ['attempts', `${c.attempts}/${c.maxAttempts}`],
        ['last error', c.lastError ?? '-'],
        ['created', c.createdAt],
        ['completed', c.completedAt ?? '-'],
      ]);
    });
  commands
    .command('ls')
    .description('recent commands, newest first')
    .option('--instance <id>', 'only this instance (id)')
    .option('--host <id>', 'only this host')
    .option('--limit <n>', 'entries', positiveInt('--limit'), 50)
    .option('--json', 'print JSON')
    .action(async (opts: { instance?: string; host?: string; limit: number; json?: boolean }) => {
      const rows = listOf<CommandView>(await (await ctx.client()).get('/commands', { query: { instanceId: opts.instance, hostId: opts.host, limit: opts.limit } }), 'commands');
      if (opts.json) return printJson(ctx.out, rows);
      printTable(ctx.out, rows, [
        { header: 'id', value: (c) => c.id },
        { header: 'kind', value: (c) => c.kind },
        { header: 'instance', value: (c) => c.instanceId },
        { header: 'status', value: (c) => c.status },
        { header: 'attempts', value: (c) => `${c.attempts}/${c.maxAttempts}`, align: 'right' },
        { header: 'created', value: (c) => formatAge(c.createdAt, ctx.now()) },
        { header: 'last error', value: (c) => c.lastError },
      ], 'no commands');
    });
}
