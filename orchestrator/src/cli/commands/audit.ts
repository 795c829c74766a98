// `ectl audit`: who did what, when, with what result (admin token), newest first.

import type { Command } from 'commander';
import { listOf } from '../api-client.js';
import { printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';
import { positiveInt } from './instances.js';
import type { AuditEntryView } from '../../contracts/public-api/views.js';

type AuditEntry = AuditEntryView;

export function registerAudit(program: Command, ctx: CommandContext): void {
  program
    .command('audit')
    .description('the audit log, newest first (admin token); page with --before-id')
    .option('--target-kind <kind>', 'e.g. instance, template, group, host, token')
    .option('--target-id <id>', 'one target')
    .option('--actor <name>', 'one token name')
    .option('--before-id <id>', 'entries older than this id', positiveInt('--before-id'))
    .option('--limit <n>', 'entries', positiveInt('--limit'), 50)
    .option('--json', 'print JSON')
    .action(async (opts: { targetKind?: string; targetId?: string; actor?: string; beforeId?: number; limit: number; json?: boolean }) => {
      const query = { targetKind: opts.targetKind, targetId: opts.targetId, actor: opts.actor, beforeId: opts.beforeId, limit: opts.limit };
      const rows = listOf<AuditEntry>(await (await ctx.client()).get('/audit', { query }), 'entries');
      if (opts.json) return printJson(ctx.out, rows);
      printTable(
        ctx.out,
        rows,
        [
          { header: 'id', value: (a) => a.id, align: 'right' },
          { header: 'at', value: (a) => a.at },
          { header: 'actor', value: (a) => a.actor },
          { header: 'action', value: (a) => a.action },
          { header: 'target', value: (a) => (a.targetId ? `${a.targetKind}/${a.targetId}` : a.targetKind) },
          { header: 'result', value: (a) => (a.errorCode ? `${a.result} ${a.errorCode}` : a.result) },
        ],
        'no audit entries',
      );
    });
}
