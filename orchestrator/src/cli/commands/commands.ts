// `ectl commands get ID|ls`: durable commands (status, attempts, last error).

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { listCommand, showCommand } from '../command-shapes.js';
import type { CommandContext } from '../program.js';
import { formatAge, keyColumns } from '../table.js';
import { positiveInt } from './instances.js';
import type { CommandView } from '../../contracts/public-api/views.js';

export function registerCommands(program: Command, ctx: CommandContext): void {
  const commands = program.command('commands').description('inspect durable commands');
  showCommand<CommandView>(commands, ctx, {
    use: 'get <id>',
    description: 'show one command',
    path: (id) => `/commands/${enc(id)}`,
    fields: (c) => [
      ['id', c.id],
      ['kind', c.kind],
      ['status', c.status],
      ['instance', c.instanceId ?? '-'],
      ['host', c.hostId ?? '-'],
      ['attempts', `${c.attempts}/${c.maxAttempts}`],
      ['last error', c.lastError ?? '-'],
      ['created', c.createdAt],
      ['completed', c.completedAt ?? '-'],
    ],
  });
  listCommand<CommandView, { instance?: string; host?: string; limit: number; json?: boolean }>(commands, ctx, {
    description: 'recent commands, newest first',
    options: (c) =>
      c
        .option('--instance <id>', 'only this instance (id)')
        .option('--host <id>', 'only this host')
        .option('--limit <n>', 'entries', positiveInt('--limit'), 50),
    path: '/commands',
    key: 'commands',
    query: (opts) => ({ instanceId: opts.instance, hostId: opts.host, limit: opts.limit }),
    columns: [
      ...keyColumns<CommandView>('id', 'kind'),
      { header: 'instance', value: (c) => c.instanceId },
      { header: 'status', value: (c) => c.status },
      { header: 'attempts', value: (c) => `${c.attempts}/${c.maxAttempts}`, align: 'right' },
      { header: 'created', value: (c) => formatAge(c.createdAt, ctx.now()) },
      { header: 'last error', value: (c) => c.lastError },
    ],
    empty: 'no commands',
  });
}
