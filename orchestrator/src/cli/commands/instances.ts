// `ectl instances create|ls|get|logs`: servers placed by the orchestrator.
// Actions, admin and info commands live in instance-actions.ts,
// instance-info.ts and instance-streams.ts.

import { EULA_VARIABLE } from '../../eggs/features.js';
import { Option, type Command } from 'commander';
import { INSTANCE_STATES } from '../../domain/instance.js';
import { enc } from '../api-client.js';
import { jsonCommand, listCommand } from '../command-shapes.js';
import { ApiError, CliError } from '../errors.js';
import { printFields, printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge, keyColumns } from '../table.js';
import { waitForInstance } from '../wait.js';
import { followLog } from './instance-streams.js';
import type { InstanceView } from '../../contracts/public-api/views.js';
import type { InstanceCreated } from '../../contracts/public-api/answers.js';

export type { InstanceView };

type CreatedAnswer = InstanceCreated;

const endpoint = (i: InstanceView): string => (i.endpoint ? `${i.endpoint.host}:${i.endpoint.port}` : '-');
export const playersOf = (i: InstanceView): string => (i.players ? `${i.players.online}/${i.players.max ?? '?'}` : '-');

export function positiveInt(name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || Number(v) <= 0) throw new CliError('usage', `${name} must be a positive integer (got "${v}")`);
    return Number(v);
  };
}

export function printInstance(ctx: CommandContext, i: InstanceView): void {
  printFields(ctx.out, [
    ['id', i.id],
    ['name', i.name ?? '-'],
    ['group', i.groupId],
    ['variant', i.variantId],
    ['host', i.hostId ?? '-'],
    ['state', i.stateReason ? `${i.state} (${i.stateReason})` : i.state],
    ['desired', i.desiredState],
    ['endpoint', endpoint(i)],
    ['players', playersOf(i)],
    ['image', i.image ?? '-'],
    ['action', i.activeAction ? `${i.activeAction.kind} (command ${i.activeAction.commandId})` : '-'],
    ['created', formatAge(i.createdAt, ctx.now())],
    ['updated', formatAge(i.updatedAt, ctx.now())],
  ]);
}

export function registerInstances(program: Command, ctx: CommandContext): Command {
  const instances = program.command('instances').alias('i').description('create, inspect and run instances (one server each)');
  instances
    .command('create')
    .description('create an instance of a group variant (the orchestrator places it)')
    .requiredOption('--group <id>', 'group id')
    .requiredOption('--variant <id>', 'variant id of the group')
    .option('--name <name>', 'instance name')
    .option('--import <uploadId>', 'start from data uploaded with ectl imports push')
    .option('--import-destination <dir>', 'directory inside the instance for the imported data (default: its root)')
    .option('--no-start', 'create the container but do not start it')
    .option('--user <uid:gid>', 'run as this numeric user (default: the endercloud user 1000:1000); immutable')
    .option(
      '--image <choice>',
      "one of the template's image choices, by label (e.g. 'Java 17') or image (default: the template's image; change it later with instances update)",
    )
    .option(
      '--accept-eula',
      `accept the Minecraft EULA (https://aka.ms/MinecraftEULA) for an egg with the eula feature: sets ${EULA_VARIABLE}=true, without which it never starts`,
    )
    .option('--wait', 'wait until the instance is online (readiness passed), or stopped with --no-start')
    .option('--timeout <seconds>', 'bound on --wait', positiveInt('--timeout'), 300)
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        group: string;
        variant: string;
        name?: string;
        import?: string;
        importDestination?: string;
        user?: string;
        image?: string;
        acceptEula?: boolean;
        start: boolean;
        wait?: boolean;
        timeout: number;
        json?: boolean;
      }) => {
        const client = await ctx.client();
        const body: Record<string, unknown> = { groupId: opts.group, variantId: opts.variant };
        if (opts.name !== undefined) body.name = opts.name;
        if (opts.image !== undefined) body.image = opts.image;
        if (!opts.start) body.start = false;
        if (opts.acceptEula) body.settings = { [EULA_VARIABLE]: true };
        if (opts.user !== undefined) {
          const m = /^(\d+):(\d+)$/.exec(opts.user);
          if (!m) throw new CliError('usage', `--user must be UID:GID in numbers (got ${JSON.stringify(opts.user)})`);
          body.user = { mode: 'custom', uid: Number(m[1]), gid: Number(m[2]) };
        }
        if (opts.importDestination !== undefined && opts.import === undefined)
          throw new CliError('usage', '--import-destination needs --import UPLOAD_ID');
        if (opts.import !== undefined)
          body.import = { uploadId: opts.import, ...(opts.importDestination !== undefined ? { destination: opts.importDestination } : {}) };
        const created = await client.post<CreatedAnswer>('/instances', body);
        if (!opts.wait) {
          if (opts.json) return printJson(ctx.out, created);
          ctx.out.line(
            `instance ${created.name ?? created.id} (${created.id}) accepted (state ${created.state}, command ${created.commandId})`,
          );
          return;
        }
        await waitForInstance(
          { client, out: ctx.out, now: ctx.now, sleep: ctx.sleep },
          created.id,
          opts.start ? 'online' : 'stopped',
          opts.timeout * 1000,
          created.commandId,
        );
        const instance = await client.get<InstanceView>(`/instances/${enc(created.id)}`);
        if (opts.json) return printJson(ctx.out, instance);
        printInstance(ctx, instance);
      },
    );
  type LsOpts = { group?: string; host?: string; state?: string; json?: boolean };
  listCommand<InstanceView, LsOpts>(instances, ctx, {
    description: 'list instances',
    options: (c) =>
      c
        .option('--group <id>', 'only this group')
        .option('--host <id>', 'only this host')
        .addOption(new Option('--state <state>', 'only instances in this state').choices(INSTANCE_STATES)),
    path: '/instances',
    key: 'instances',
    query: (opts) => ({ groupId: opts.group, hostId: opts.host, state: opts.state }),
    // Filter here too, in case the server ignores a query parameter.
    filter: (rows, opts) =>
      rows.filter(
        (i) =>
          (!opts.group || i.groupId === opts.group) && (!opts.host || i.hostId === opts.host) && (!opts.state || i.state === opts.state),
      ),
    columns: [
      ...keyColumns<InstanceView>('name', 'id'),
      { header: 'group', value: (i) => i.groupId },
      { header: 'variant', value: (i) => i.variantId },
      { header: 'host', value: (i) => i.hostId },
      { header: 'state', value: (i) => i.state },
      { header: 'desired', value: (i) => i.desiredState },
      { header: 'players', value: playersOf, align: 'right' },
      { header: 'endpoint', value: endpoint },
      { header: 'age', value: (i) => formatAge(i.createdAt, ctx.now()) },
    ],
    empty: 'no instances',
  });
  jsonCommand<InstanceView>(instances, ctx, {
    use: 'get <name>',
    description: 'show one instance (by name or id)',
    fetch: async (_opts, id) => (await ctx.client()).get<InstanceView>(`/instances/${enc(id)}`),
    render: (i) => printInstance(ctx, i),
  });
  instances
    .command('logs <name>')
    .description("print the last lines of an instance's container log")
    .option('--tail <n>', 'number of lines', positiveInt('--tail'), 100)
    .option('-f, --follow', 'then stream new lines as the server writes them, until Ctrl-C or the container stops')
    .option('--json', 'print {instanceId, tail, logs} as JSON')
    .action(async (id: string, opts: { tail: number; follow?: boolean; json?: boolean }) => {
      if (opts.follow) {
        if (opts.json) throw new CliError('usage', '--json and --follow do not go together: a followed log is plain text');
        return followLog(ctx, id, opts.tail);
      }
      let text: string;
      try {
        text = await (await ctx.client()).get<string>(`/instances/${enc(id)}/logs`, { query: { tail: opts.tail }, text: true });
      } catch (err) {
        // A generic NOT_FOUND (not INSTANCE_NOT_FOUND) means the route itself is missing.
        if (err instanceof ApiError && err.code === 'NOT_FOUND') {
          throw new CliError(
            'runtime',
            'this orchestrator does not serve instance logs (GET /api/v1/instances/:id/logs); upgrade it, or read them on the host with docker logs',
          );
        }
        throw err;
      }
      let logs = text;
      // Accept a JSON wrapper too ({"logs": "..."}).
      if (text.startsWith('{')) {
        try {
          const parsed = JSON.parse(text) as { logs?: unknown };
          if (typeof parsed.logs === 'string') logs = parsed.logs;
        } catch {
          // plain text that happens to start with '{'
        }
      }
      if (opts.json) return printJson(ctx.out, { instanceId: id, tail: opts.tail, logs });
      ctx.out.write(logs.endsWith('\n') || logs === '' ? logs : `${logs}\n`);
    });
  return instances;
}
