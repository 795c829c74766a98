// `ectl transfer PLAYER --to-…` (record where a player goes next, moved now over
// RCON when connected) and `ectl transfers ls`.

import { Option, type Command } from 'commander';
import { TRANSFER_STATUSES } from '../../domain/session.js';
import { listCommand } from '../command-shapes.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge, keyColumns } from '../table.js';
import { transferTarget, type TargetOpts } from './instance-actions.js';
import { positiveInt } from './instances.js';
import type { TransferView } from '../../contracts/public-api/views.js';

const targetText = (t: Record<string, string>): string =>
  Object.entries(t)
    .map(([k, v]) => `${k}:${v}`)
    .join(',');

export function registerTransfers(program: Command, ctx: CommandContext): void {
  program
    .command('transfer <player>')
    .description('send a player to an instance, group or session (moved now with RCON when connected, else on their next login)')
    .option('--to-instance <name>', 'target instance')
    .option('--to-group <id>', 'any instance of this group')
    .option('--to-session <id>', 'target session')
    .option('--uuid <uuid>', 'the player UUID (stricter match at login)')
    .option('--ttl <seconds>', 'how long the transfer waits for the login (default 60)', positiveInt('--ttl'))
    .option('--no-move', 'only record it; do not move a connected player now')
    .option('--json', 'print JSON')
    .action(async (player: string, opts: TargetOpts & { uuid?: string; ttl?: number; move: boolean; json?: boolean }) => {
      const body = {
        player,
        target: transferTarget(opts, true),
        ...(opts.uuid ? { uuid: opts.uuid } : {}),
        ...(opts.ttl ? { ttlSeconds: opts.ttl } : {}),
        ...(opts.move ? {} : { move: false }),
      };
      const r = await (await ctx.client()).post<{ transfer: TransferView; move: { moved: boolean; reason?: string } }>('/transfers', body);
      if (opts.json) return printJson(ctx.out, r);
      ctx.out.line(
        `transfer ${r.transfer.id}: ${player} → ${targetText(r.transfer.target)} (${r.transfer.status}); ${r.move.moved ? 'moved now' : `not moved now: ${r.move.reason ?? 'no reason given'}`}`,
      );
    });
  const transfers = program.command('transfers').description('recorded player transfers');
  listCommand<TransferView, { player?: string; status?: string; limit: number; json?: boolean }>(transfers, ctx, {
    description: 'recent transfers, newest first',
    options: (c) =>
      c
        .option('--player <name>', 'only this player')
        .addOption(new Option('--status <status>', 'only transfers with this status').choices(TRANSFER_STATUSES))
        .option('--limit <n>', 'entries', positiveInt('--limit'), 100),
    path: '/transfers',
    key: 'transfers',
    query: (opts) => ({ player: opts.player, status: opts.status, limit: opts.limit }),
    columns: [
      ...keyColumns<TransferView>('id', 'player'),
      { header: 'target', value: (t) => targetText(t.target) },
      { header: 'status', value: (t) => t.status },
      { header: 'instance', value: (t) => t.resolvedInstanceId },
      { header: 'created', value: (t) => formatAge(t.createdAt, ctx.now()) },
    ],
    empty: 'no transfers',
  });
}
