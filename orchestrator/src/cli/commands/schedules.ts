// `ectl schedules list|create|delete|run INSTANCE …`: an instance's cron
// schedules of tasks (GET/POST/DELETE /instances/:id/schedules, …/run).

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { jsonCommand } from '../command-shapes.js';
import { CliError } from '../errors.js';
import { printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';
import type { ScheduleList, ScheduleRunAccepted, ScheduleView } from '../../contracts/public-api/answers.js';
import type { ScheduleInput, ScheduleTaskBody } from '../../contracts/public-api/bodies.js';

const TASK = /^(command|power|backup)(?::(.*?))?(?:@(\d+))?(,continue)?$/;

/** `ACTION[:PAYLOAD][@OFFSET_SECONDS][,continue]`, e.g. `command:say restarting`, `power:restart@60`, `backup:nightly,continue`. */
function parseTaskSpec(spec: string): ScheduleTaskBody {
  const m = TASK.exec(spec);
  if (!m)
    throw new CliError(
      'usage',
      `--task ${JSON.stringify(spec)}: expected ACTION[:PAYLOAD][@SECONDS][,continue] with ACTION command, power or backup`,
    );
  return {
    action: m[1] as ScheduleTaskBody['action'],
    payload: m[2] ?? '',
    offsetSeconds: m[3] === undefined ? 0 : Number(m[3]),
    continueOnFailure: m[4] !== undefined,
  };
}

const when = (ms: number | null): string => (ms === null ? '-' : new Date(ms).toISOString().replace('.000Z', 'Z'));

export function registerSchedules(program: Command, ctx: CommandContext): void {
  const schedules = program
    .command('schedules')
    .description('cron schedules of tasks (console command, power action, backup) per instance');
  jsonCommand<ScheduleList>(schedules, ctx, {
    use: 'list <instance>',
    description: "list the instance's schedules with their next and last run",
    fetch: async (_opts, instance) => (await ctx.client()).get<ScheduleList>(`/instances/${enc(instance)}/schedules`),
    render: (res) =>
      printTable(
        ctx.out,
        res.schedules,
        [
          { header: 'id', value: (s) => s.id },
          { header: 'name', value: (s) => s.name },
          { header: 'cron (UTC)', value: (s) => s.cron },
          { header: 'enabled', value: (s) => (s.enabled ? 'yes' : 'no') },
          {
            header: 'tasks',
            value: (s) =>
              s.tasks
                .map((t) => `${t.action}${t.payload ? `:${t.payload}` : ''}${t.offsetSeconds ? `@${t.offsetSeconds}s` : ''}`)
                .join(' → '),
          },
          { header: 'next run', value: (s) => when(s.nextRunAt) },
          { header: 'last', value: (s) => (s.running ? 'running' : s.lastResult ? `${s.lastResult} ${when(s.lastRunAt)}` : '-') },
        ],
        'no schedules',
      ),
  });
  schedules
    .command('create <instance>')
    .description('create a schedule: --task ACTION[:PAYLOAD][@SECONDS][,continue], 1 to 10, run in order')
    .requiredOption('--name <name>', "the schedule's name")
    .requiredOption('--cron <expr>', 'five cron fields, UTC (e.g. "0 4 * * *")')
    .requiredOption(
      '--task <spec...>',
      'a task: command:LINE, power:start|stop|restart, backup[:NOTE]; @SECONDS waits after the previous task; ,continue goes on after a failure',
    )
    .option('--disabled', 'create it disabled')
    .option('--only-when-online', 'skip runs while the instance is not online')
    .option('--json', 'print the answer as JSON')
    .action(
      async (
        instance: string,
        opts: { name: string; cron: string; task: string[]; disabled?: boolean; onlyWhenOnline?: boolean; json?: boolean },
      ) => {
        const body: ScheduleInput = {
          name: opts.name,
          cron: opts.cron,
          enabled: !opts.disabled,
          onlyWhenOnline: opts.onlyWhenOnline === true,
          tasks: opts.task.map(parseTaskSpec),
        };
        const res = await (await ctx.client()).post<ScheduleView>(`/instances/${enc(instance)}/schedules`, body);
        if (opts.json) return printJson(ctx.out, res);
        ctx.out.line(`schedule ${res.id} (${res.name}) created on ${instance}; next run ${when(res.nextRunAt)}`);
      },
    );
  schedules
    .command('delete <instance> <schedule>')
    .description('delete a schedule (a run in progress finishes)')
    .option('--json', 'print the answer as JSON')
    .action(async (instance: string, schedule: string, opts: { json?: boolean }) => {
      const res = await (await ctx.client()).delete<{ id: string }>(`/instances/${enc(instance)}/schedules/${enc(schedule)}`);
      if (opts.json) return printJson(ctx.out, res);
      ctx.out.line(`schedule ${res.id} deleted`);
    });
  schedules
    .command('run <instance> <schedule>')
    .description('run a schedule now (its tasks start at once; see `ectl schedules list` for the result)')
    .option('--json', 'print the answer as JSON')
    .action(async (instance: string, schedule: string, opts: { json?: boolean }) => {
      const res = await (await ctx.client()).post<ScheduleRunAccepted>(`/instances/${enc(instance)}/schedules/${enc(schedule)}/run`, {});
      if (opts.json) return printJson(ctx.out, res);
      ctx.out.line(`schedule ${res.id} started on ${instance}`);
    });
}
