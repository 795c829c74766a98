// `ectl kept-data ls|purge`: worlds and backups of deleted instances that a
// scoped delete kept on their hosts (GET /kept-data, DELETE /kept-data/…).
// `attach` gives a new, stopped instance on the same host a kept world.

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { jsonCommand } from '../command-shapes.js';
import { confirmYes } from '../confirm.js';
import { printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatBytes } from '../table.js';
import type { KeptDataAnswer } from '../../contracts/public-api/answers.js';

export function registerKeptData(program: Command, ctx: CommandContext): void {
  const kept = program.command('kept-data').description('worlds and backups of deleted instances kept on their hosts');
  type KeptAnswer = KeptDataAnswer;
  jsonCommand<KeptAnswer>(kept, ctx, {
    use: 'ls',
    description: 'list kept data per host (hosts that did not answer are named)',
    fetch: async () => (await ctx.client()).get<KeptAnswer>('/kept-data'),
    render: (res) => {
      printTable(
        ctx.out,
        res.keptData,
        [
          { header: 'host', value: (k) => k.hostId },
          { header: 'instance', value: (k) => k.instanceId },
          { header: 'world', value: (k) => (k.data ? 'yes' : 'no') },
          { header: 'backups', value: (k) => k.backups.length, align: 'right' },
          { header: 'backup size', value: (k) => formatBytes(k.backups.reduce((n, b) => n + b.sizeBytes, 0)), align: 'right' },
        ],
        'no kept data',
      );
      for (const u of res.unreachable) ctx.out.error(`host ${u.hostId} did not answer: ${u.error}`);
    },
  });
  kept
    .command('attach <host> <instance>')
    .description("give a new, stopped instance on the same host the kept world (create it with --no-start and the world's user first)")
    .requiredOption('--to <name>', 'the new instance (id or name)')
    .option('--json', 'print the answer as JSON')
    .action(async (host: string, instance: string, opts: { to: string; json?: boolean }) => {
      const res = await (
        await ctx.client()
      ).post<{ instanceId: string }>(`/kept-data/${enc(host)}/${enc(instance)}/attach`, { instance: opts.to });
      if (opts.json) return printJson(ctx.out, res);
      ctx.out.line(`attached the kept world of ${instance} to ${opts.to} on host ${host}; start it with: ectl instances start ${opts.to}`);
    });
  kept
    .command('purge <host> <instance>')
    .description('delete the kept world and backups of one deleted instance: cannot be undone')
    .option('--yes', 'confirm without asking')
    .option('--json', 'print the answer as JSON')
    .action(async (host: string, instance: string, opts: { yes?: boolean; json?: boolean }) => {
      await confirmYes(ctx.prompt, `delete the kept world and backups of ${instance} on host ${host}?`, opts.yes);
      const res = await (
        await ctx.client()
      ).request<{ dataRemoved: boolean; backupsRemoved: number }>('DELETE', `/kept-data/${enc(host)}/${enc(instance)}`);
      if (opts.json) return printJson(ctx.out, res);
      ctx.out.line(
        `purged kept data of ${instance} on host ${host}: world ${res.dataRemoved ? 'deleted' : 'was not there'}, ${res.backupsRemoved} backup(s) deleted`,
      );
    });
}
