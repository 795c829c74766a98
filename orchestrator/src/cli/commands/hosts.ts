// `ectl hosts ls|get|maintenance`: the Docker hosts the orchestrator knows.

import type { Command } from 'commander';
import { enc, listOf } from '../api-client.js';
import { CliError } from '../errors.js';
import { printFields, printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge, formatBytes } from '../table.js';

/** The fields ectl shows of GET /hosts answers (others are passed through with --json). */
export interface HostView {
  id: string;
  status: string;
  statusReason?: string | null;
  controlUrl?: string;
  gameAddress?: string;
  version?: string;
  resources?: { memoryMb?: number; cpus?: number; diskBytes?: number };
  memoryReservedMb?: number;
  lastHeartbeatAt?: number | string | null;
  maintenance?: { enabled?: boolean; message?: string } | null;
  instances?: number | Record<string, number>;
  instanceCount?: number;
  instanceCounts?: Record<string, number>;
}

/** Instance count of a host however the server shapes it (number, or counts by state). */
export function instanceCount(h: HostView): number | undefined {
  const v = h.instanceCount ?? h.instanceCounts ?? h.instances;
  if (typeof v === 'number') return v;
  if (v && typeof v === 'object') return typeof v.total === 'number' ? v.total : Object.values(v).reduce((a, b) => a + (typeof b === 'number' ? b : 0), 0);
  return undefined;
}

function memory(h: HostView): string {
  const total = h.resources?.memoryMb;
  if (total === undefined) return '-';
  return h.memoryReservedMb === undefined ? `${total} MiB` : `${h.memoryReservedMb}/${total} MiB`;
}

export function registerHosts(program: Command, ctx: CommandContext): void {
  const hosts = program.command('hosts').description('list and manage Docker hosts');
  hosts
    .command('ls')
    .description('list hosts')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const rows = listOf<HostView>(await (await ctx.client()).get('/hosts'), 'hosts');
      if (opts.json) return printJson(ctx.out, rows);
      const now = ctx.now();
      printTable(ctx.out, rows, [
        { header: 'id', value: (h) => h.id },
        { header: 'status', value: (h) => h.status },
        { header: 'game address', value: (h) => h.gameAddress },
        { header: 'memory', value: memory, align: 'right' },
        { header: 'instances', value: (h) => instanceCount(h), align: 'right' },
        { header: 'last heartbeat', value: (h) => formatAge(h.lastHeartbeatAt, now) },
      ], 'no hosts yet: start an agent pointed at this orchestrator');
    });
  hosts
    .command('get <id>')
    .description('show one host')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const h = await (await ctx.client()).get<HostView>(`/hosts/${enc(id)}`);
      if (opts.json) return printJson(ctx.out, h);
      printFields(ctx.out, [
        ['id', h.id],
        ['status', h.statusReason ? `${h.status} (${h.statusReason})` : h.status],
        ['control url', h.controlUrl ?? '-'],
        ['game address', h.gameAddress ?? '-'],
        ['version', h.version ?? '-'],
        ['memory', memory(h)],
        ['cpus', String(h.resources?.cpus ?? '-')],
        ['disk', formatBytes(h.resources?.diskBytes)],
        ['instances', String(instanceCount(h) ?? '-')],
        ['maintenance', h.maintenance?.enabled ? `on${h.maintenance.message ? ` — ${h.maintenance.message}` : ''}` : 'off'],
        ['last heartbeat', formatAge(h.lastHeartbeatAt, ctx.now())],
      ]);
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
      const h = await (await ctx.client()).post<HostView | undefined>(`/hosts/${enc(id)}/maintenance`, { enabled: Boolean(opts.on), message: opts.message });
      if (opts.json) return printJson(ctx.out, h ?? { id, maintenance: { enabled: Boolean(opts.on), message: opts.message } });
      ctx.out.line(`host ${id}: maintenance ${opts.on ? 'on' : 'off'}${h?.status ? ` (status ${h.status})` : ''}`);
    });
}
