// `ectl hosts ls|get|maintenance`: the Docker hosts the orchestrator knows;
// `hosts unclaimed|adopt|unclaimed-delete`: managed containers the store does not know.
// `hosts remove [--forget]` deletes a host record (empty, or OFFLINE with --forget);
// `hosts join-token …` and `hosts revoke-credential` (host-credentials.ts): enrolment.

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { listCommand, showCommand } from '../command-shapes.js';
import { CliError } from '../errors.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { confirmYes } from '../confirm.js';
import { formatAge, formatBytes, keyColumns } from '../table.js';
import type { HostView } from '../../contracts/public-api/views.js';
import { registerHostCredentials } from './host-credentials.js';
import type { UnclaimedView } from '../../contracts/public-api/answers.js';

/** The number of instances placed on a host. */
function instanceCount(h: HostView): number {
  return h.instances.total;
}

function memory(h: HostView): string {
  return `${h.memoryReservedMb}/${h.resources.memoryMb} MiB`;
}

export function registerHosts(program: Command, ctx: CommandContext): void {
  const hosts = program.command('hosts').description('list and manage Docker hosts');
  registerHostCredentials(hosts, ctx);
  listCommand<HostView>(hosts, ctx, {
    description: 'list hosts',
    path: '/hosts',
    key: 'hosts',
    columns: [
      ...keyColumns<HostView>('id', 'status'),
      { header: 'game address', value: (h) => h.gameAddress },
      { header: 'memory', value: memory, align: 'right' },
      { header: 'instances', value: (h) => instanceCount(h), align: 'right' },
      { header: 'last heartbeat', value: (h) => formatAge(h.lastHeartbeatAt, ctx.now()) },
    ],
    empty: 'no hosts yet: start an agent pointed at this orchestrator',
  });
  showCommand<HostView>(hosts, ctx, {
    use: 'get <id>',
    description: 'show one host',
    path: (id) => `/hosts/${enc(id)}`,
    fields: (h) => [
      ['id', h.id],
      ['status', h.statusReason ? `${h.status} (${h.statusReason})` : h.status],
      ['control url', h.controlUrl ?? '-'],
      ['game address', h.gameAddress ?? '-'],
      ['version', h.version ?? '-'],
      ['memory', memory(h)],
      ['cpus', String(h.resources?.cpus ?? '-')],
      ['disk', formatBytes(h.resources?.diskBytes)],
      ['instances', String(instanceCount(h))],
      ['maintenance', h.maintenance?.enabled ? `on${h.maintenance.message ? ` — ${h.maintenance.message}` : ''}` : 'off'],
      ['last heartbeat', formatAge(h.lastHeartbeatAt, ctx.now())],
    ],
  });
  hosts
    .command('maintenance <id>')
    .description('turn maintenance on (no new placements) or off')
    .option('--on', 'enable maintenance')
    .option('--off', 'disable maintenance')
    .option('--message <text>', 'message shown while in maintenance', '')
    .option('--json', 'print the host as JSON')
    .action(async (id: string, opts: { on?: boolean; off?: boolean; message: string; json?: boolean }) => {
      if (Boolean(opts.on) === Boolean(opts.off)) throw new CliError('usage', 'give exactly one of --on or --off');
      const h = await (
        await ctx.client()
      ).post<HostView | undefined>(`/hosts/${enc(id)}/maintenance`, { enabled: Boolean(opts.on), message: opts.message });
      if (opts.json) return printJson(ctx.out, h ?? { id, maintenance: { enabled: Boolean(opts.on), message: opts.message } });
      ctx.out.line(`host ${id}: maintenance ${opts.on ? 'on' : 'off'}${h?.status ? ` (status ${h.status})` : ''}`);
    });
  hosts
    .command('remove <id>')
    .description('remove a host without instances; --forget removes an OFFLINE (dead) one anyway, handing its instances to an operator')
    .option('--forget', 'the host is gone for good: its instances become intervention_required')
    .option('--yes', 'confirm --forget without asking')
    .option('--json', 'print the answer as JSON')
    .action(async (id: string, opts: { forget?: boolean; yes?: boolean; json?: boolean }) => {
      if (opts.forget) await confirmYes(ctx.prompt, `forget host ${id} and mark its instances intervention_required?`, opts.yes);
      const res = await (
        await ctx.client()
      ).request<{ forgottenInstances?: string[] }>('DELETE', `/hosts/${enc(id)}`, { query: opts.forget ? { forget: 'true' } : {} });
      if (opts.json) return printJson(ctx.out, res);
      const forgotten = res.forgottenInstances ?? [];
      ctx.out.line(
        `removed host ${id}${forgotten.length > 0 ? `; ${forgotten.length} instance(s) now intervention_required: ${forgotten.join(', ')}` : ''}`,
      );
      ctx.out.line('a running agent registers the host again with its next heartbeat: stop it first');
    });
  registerUnclaimed(hosts, ctx);
}

function registerUnclaimed(hosts: Command, ctx: CommandContext): void {
  listCommand<UnclaimedView>(hosts, ctx, {
    use: 'unclaimed <id>',
    description: 'list managed containers on a host that no stored instance claims (adopt or delete them explicitly)',
    path: (id) => `/hosts/${enc(id)}/unclaimed`,
    key: 'unclaimed',
    columns: [
      { header: 'instance', value: (u) => u.instanceId },
      { header: 'group', value: (u) => u.groupId ?? '-' },
      { header: 'variant', value: (u) => u.variantId ?? '-' },
      { header: 'state', value: (u) => u.state },
      { header: 'port', value: (u) => (u.hostPort === null || u.hostPort === undefined ? '-' : String(u.hostPort)), align: 'right' },
      { header: 'reason', value: (u) => u.reason },
    ],
    empty: (id) => `host ${id} has no unclaimed containers`,
  });
  hosts
    .command('adopt <host> <instance>')
    .description('adopt an unclaimed container as an instance of its group variant (the container and its data stay as they are)')
    .requiredOption('--group <group>', 'the group the container was made for (its orchestrator.group label)')
    .requiredOption('--variant <variant>', 'the variant the container was made for (its orchestrator.variant label)')
    .option('--name <name>', 'instance name (default: <group>-<id>)')
    .option('--json', 'print the instance as JSON')
    .action(async (host: string, instance: string, opts: { group: string; variant: string; name?: string; json?: boolean }) => {
      const body = { groupId: opts.group, variantId: opts.variant, ...(opts.name !== undefined ? { name: opts.name } : {}) };
      const adopted = await (
        await ctx.client()
      ).post<{ id: string; name?: string; state?: string; endpoint?: { host: string; port: number } | null }>(
        `/hosts/${enc(host)}/unclaimed/${enc(instance)}/adopt`,
        body,
      );
      if (opts.json) return printJson(ctx.out, adopted);
      const endpoint = adopted.endpoint ? ` at ${adopted.endpoint.host}:${adopted.endpoint.port}` : '';
      ctx.out.line(`adopted ${adopted.id} as ${adopted.name ?? adopted.id} on host ${host}: ${adopted.state ?? 'unknown'}${endpoint}`);
    });
  hosts
    .command('unclaimed-delete <host> <instance>')
    .description('remove an unclaimed container through the agent (its data stays unless --delete-data)')
    .option('--delete-data', 'also delete its runtime directory (world data): cannot be undone')
    .option('--json', 'print the answer as JSON')
    .action(async (host: string, instance: string, opts: { deleteData?: boolean; json?: boolean }) => {
      const query = opts.deleteData ? { deleteData: 'true' } : {};
      const res = await (
        await ctx.client()
      ).request<{ commandId?: string; deleteData?: boolean }>('DELETE', `/hosts/${enc(host)}/unclaimed/${enc(instance)}`, { query });
      if (opts.json) return printJson(ctx.out, res);
      const data = opts.deleteData ? 'its data is deleted too' : 'its data is kept';
      ctx.out.line(
        `removal of the container of ${instance} on host ${host} queued${res.commandId ? ` (command ${res.commandId})` : ''}; ${data}`,
      );
    });
}
