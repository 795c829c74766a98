// `ectl system`: what this orchestrator is and who leads — version, database
// dialect, this replica's node, the leader's node and fencing epoch (GET
// /health, no database read), and whether the database answers (GET /ready).
// Exits 1 when the database does not answer, so scripts can use it as a check.

import type { Command } from 'commander';
import { ApiError, CliError } from '../errors.js';
import { printFields, printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import type { HealthAnswer } from '../../contracts/public-api/answers.js';

type HealthView = HealthAnswer;

interface ReadyView {
  ready: boolean;
  latencyMs?: number;
  reason?: string;
}

export function registerSystem(program: Command, ctx: CommandContext): void {
  program
    .command('system')
    .description('the orchestrator answering: version, database, this node, the leader and its epoch, and whether the database answers')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const client = await ctx.client();
      const health = await client.get<HealthView>('/health');
      let ready: ReadyView;
      try {
        const r = await client.get<{ latencyMs: number }>('/ready');
        ready = { ready: true, latencyMs: r.latencyMs };
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        ready = { ready: false, reason: `${err.code}: ${err.apiMessage}` };
      }
      if (opts.json) printJson(ctx.out, { ...health, ready });
      else {
        const leader = health.leader;
        printFields(ctx.out, [
          ['version', health.version],
          [
            'database',
            ready.ready ? `${health.database} (answers, ${ready.latencyMs} ms)` : `${health.database} (NOT READY — ${ready.reason})`,
          ],
          ['node', health.node ?? '-'],
          [
            'leader',
            leader ? `${leader.node}${leader.self ? ' (this node)' : ''}` : 'unknown (no lease seen: the database does not answer)',
          ],
          ['epoch', leader ? String(leader.epoch) : '-'],
        ]);
      }
      if (!ready.ready) throw new CliError('runtime', `the orchestrator's database does not answer (${ready.reason})`);
    });
}
