// `ectl commands get ID`: one durable command (status, attempts, last error).

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { printFields, printJson } from '../output.js';
import type { CommandContext } from '../program.js';

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
}
