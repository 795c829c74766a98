// `ectl instances create|ls|get|logs`: servers placed by the orchestrator.

import type { Command } from 'commander';
import { enc, listOf, type ApiClient } from '../api-client.js';
import { ApiError, CliError } from '../errors.js';
import { printFields, printJson, printTable } from '../output.js';
import { startSpinner } from '../progress.js';
import type { CommandContext } from '../program.js';
import { formatAge } from '../table.js';

export interface InstanceView {
  id: string;
  name?: string;
  groupId: string;
  variantId: string;
  hostId: string | null;
  state: string;
  stateReason?: string | null;
  desiredState: string;
  endpoint?: { host: string; port: number } | null;
  createdAt?: number | string;
  updatedAt?: number | string;
}

interface CreatedAnswer {
  id: string;
  state: string;
  commandId: string;
}

interface CommandView {
  id: string;
  status: string;
  lastError?: string | null;
}

const endpoint = (i: InstanceView): string => (i.endpoint ? `${i.endpoint.host}:${i.endpoint.port}` : '-');

function positiveInt(name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || Number(v) <= 0) throw new CliError('usage', `${name} must be a positive integer (got "${v}")`);
    return Number(v);
  };
}

/** Polls the command until it succeeds or fails, bounded by `timeoutMs`. */
async function waitForCommand(client: ApiClient, ctx: CommandContext, commandId: string, timeoutMs: number): Promise<CommandView> {
  const spinner = startSpinner(ctx.out, `waiting for command ${commandId}`);
  const deadline = ctx.now() + timeoutMs;
  try {
    for (;;) {
      const cmd = await client.get<CommandView>(`/commands/${enc(commandId)}`);
      spinner.update(`command ${commandId}: ${cmd.status}`);
      if (cmd.status === 'succeeded') {
        spinner.stop(`command ${commandId} succeeded`);
        return cmd;
      }
      if (cmd.status === 'failed') {
        spinner.stop();
        throw new CliError('runtime', `command ${commandId} failed: ${cmd.lastError ?? 'no reason given'}`);
      }
      if (ctx.now() >= deadline) {
        spinner.stop();
        throw new CliError('runtime', `command ${commandId} still ${cmd.status} after ${timeoutMs / 1000}s (see ectl instances get)`);
      }
      await ctx.sleep(250);
    }
  } catch (err) {
    spinner.stop();
    throw err;
  }
}

function printInstance(ctx: CommandContext, i: InstanceView): void {
  printFields(ctx.out, [
    ['id', i.id],
    ['name', i.name ?? '-'],
    ['group', i.groupId],
    ['variant', i.variantId],
    ['host', i.hostId ?? '-'],
    ['state', i.stateReason ? `${i.state} (${i.stateReason})` : i.state],
    ['desired', i.desiredState],
    ['endpoint', endpoint(i)],
    ['created', formatAge(i.createdAt, ctx.now())],
    ['updated', formatAge(i.updatedAt, ctx.now())],
  ]);
}

export function registerInstances(program: Command, ctx: CommandContext): void {
  const instances = program.command('instances').description('create and inspect instances (one server each)');
  instances
    .command('create')
    .description('create an instance of a group variant (the orchestrator places it)')
    .requiredOption('--group <id>', 'group id')
    .requiredOption('--variant <id>', 'variant id of the group')
    .option('--name <name>', 'display name')
    .option('--wait', 'wait until the create command has finished')
    .option('--timeout <seconds>', 'bound on --wait', positiveInt('--timeout'), 300)
    .option('--json', 'print JSON')
    .action(async (opts: { group: string; variant: string; name?: string; wait?: boolean; timeout: number; json?: boolean }) => {
      const client = await ctx.client();
      const body: Record<string, string> = { groupId: opts.group, variantId: opts.variant };
      if (opts.name !== undefined) body.name = opts.name;
      const created = await client.post<CreatedAnswer>('/instances', body);
      if (!opts.wait) {
        if (opts.json) return printJson(ctx.out, created);
        ctx.out.line(`instance ${created.id} accepted (state ${created.state}, command ${created.commandId})`);
        return;
      }
      await waitForCommand(client, ctx, created.commandId, opts.timeout * 1000);
      const instance = await client.get<InstanceView>(`/instances/${enc(created.id)}`);
      if (opts.json) return printJson(ctx.out, instance);
      printInstance(ctx, instance);
    });
  instances
    .command('ls')
    .description('list instances')
    .option('--group <id>', 'only this group')
    .option('--host <id>', 'only this host')
    .option('--json', 'print JSON')
    .action(async (opts: { group?: string; host?: string; json?: boolean }) => {
      const query = { groupId: opts.group, hostId: opts.host };
      let rows = listOf<InstanceView>(await (await ctx.client()).get('/instances', { query }), 'instances');
      // Filter here too, in case the server ignores a query parameter.
      if (opts.group) rows = rows.filter((i) => i.groupId === opts.group);
      if (opts.host) rows = rows.filter((i) => i.hostId === opts.host);
      if (opts.json) return printJson(ctx.out, rows);
      printTable(ctx.out, rows, [
        { header: 'id', value: (i) => i.id },
        { header: 'group', value: (i) => i.groupId },
        { header: 'variant', value: (i) => i.variantId },
        { header: 'host', value: (i) => i.hostId },
        { header: 'state', value: (i) => i.state },
        { header: 'desired', value: (i) => i.desiredState },
        { header: 'endpoint', value: endpoint },
        { header: 'age', value: (i) => formatAge(i.createdAt, ctx.now()) },
      ], 'no instances');
    });
  instances
    .command('get <id>')
    .description('show one instance')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const i = await (await ctx.client()).get<InstanceView>(`/instances/${enc(id)}`);
      if (opts.json) return printJson(ctx.out, i);
      printInstance(ctx, i);
    });
  instances
    .command('logs <id>')
    .description('print the last lines of an instance\'s container log')
    .option('--tail <n>', 'number of lines', positiveInt('--tail'), 100)
    .option('--json', 'print {instanceId, tail, logs} as JSON')
    .action(async (id: string, opts: { tail: number; json?: boolean }) => {
      let text: string;
      try {
        text = await (await ctx.client()).get<string>(`/instances/${enc(id)}/logs`, { query: { tail: opts.tail }, text: true });
      } catch (err) {
        // A generic NOT_FOUND (not INSTANCE_NOT_FOUND) means the route itself is missing.
        if (err instanceof ApiError && err.code === 'NOT_FOUND') {
          throw new CliError('runtime', 'this orchestrator does not serve instance logs (GET /api/v1/instances/:id/logs); upgrade it, or read them on the host with docker logs');
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
}
