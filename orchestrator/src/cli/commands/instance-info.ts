// Instance information: settings get|set, history, revisions, players,
// backups (the list kept on its host).

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { CliError } from '../errors.js';
import { jsonCommand } from '../command-shapes.js';
import { printFields, printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatAge, formatBytes, keyColumns } from '../table.js';
import { positiveInt } from './instances.js';
import type { BackupsAnswer } from '../../contracts/public-api/answers.js';
import type { HistoryEntryView, InstanceView, RevisionView } from '../../contracts/public-api/views.js';

type SettingsView = InstanceView;

/**
 * Pure: `KEY=VALUE` → [key, value]. VALUE is JSON when it is a number, true,
 * false, null or a "quoted string"; anything else is a plain string (the
 * server checks the value against the template variable's type).
 */
export function parseAssignment(text: string): [string, unknown] {
  const i = text.indexOf('=');
  if (i <= 0) throw new CliError('usage', `"${text}" is not KEY=VALUE`);
  const key = text.slice(0, i);
  const raw = text.slice(i + 1);
  if (/^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null|".*")$/s.test(raw)) {
    try {
      return [key, JSON.parse(raw)];
    } catch {
      // not valid JSON after all: a string
    }
  }
  return [key, raw];
}

const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

function registerSettings(instances: Command, ctx: CommandContext): void {
  const settings = instances.command('settings').description('read and change instance settings, image and labels');
  settings
    .command('get <name>')
    .description('settings (secrets by name only), image, labels and pending changes')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const i = await (await ctx.client()).get<SettingsView>(`/instances/${enc(name)}`);
      const view = {
        id: i.id,
        name: i.name,
        image: i.image,
        labels: i.labels ?? {},
        settings: i.settings ?? {},
        secretSettings: i.secretSettings ?? [],
        ...(i.hiddenSettings ? { hiddenSettings: i.hiddenSettings } : {}),
        pendingChanges: i.pendingChanges ?? [],
        containerConfigPending: i.containerConfigPending ?? false,
      };
      if (opts.json) return printJson(ctx.out, view);
      const fields: [string, string][] = [['image', view.image ?? '-']];
      for (const [k, v] of Object.entries(view.labels)) fields.push([`label ${k}`, v]);
      for (const [k, v] of Object.entries(view.settings)) fields.push([k, show(v)]);
      for (const k of view.secretSettings) fields.push([k, '(secret, set)']);
      for (const k of view.hiddenSettings ?? []) fields.push([k, '(hidden: operators only)']);
      printFields(ctx.out, fields);
      for (const c of view.pendingChanges)
        ctx.out.line(`pending: ${c.key} = ${c.secret ? '(secret)' : c.hidden ? '(hidden)' : show(c.value)} (${c.mode})`);
    });
  settings
    .command('set <name> [assignments...]')
    .description('change settings (KEY=VALUE; VALUE is JSON for numbers, true/false/null, "quoted strings"), image or labels')
    .option('--image <ref>', 'a new image (the container is replaced)')
    .option('--label <key=value>', 'set a label (repeatable)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--unlabel <key>', 'remove a label (repeatable)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--mode <mode>', 'immediate, or next_start (kept pending until the next start)')
    .option('--apply-now', 'apply every pending change now through one replacement')
    .option('--json', 'print JSON')
    .action(
      async (
        name: string,
        assignments: string[],
        opts: { image?: string; label: string[]; unlabel: string[]; mode?: string; applyNow?: boolean; json?: boolean },
      ) => {
        const body: Record<string, unknown> = {};
        if (assignments.length > 0) body.settings = Object.fromEntries(assignments.map(parseAssignment));
        if (opts.image !== undefined) body.image = opts.image;
        if (opts.label.length > 0 || opts.unlabel.length > 0) {
          body.labels = {
            ...Object.fromEntries(
              opts.label.map((l) => {
                const [k, v] = parseAssignment(l);
                return [k, String(v)];
              }),
            ),
            ...Object.fromEntries(opts.unlabel.map((k) => [k, null])),
          };
        }
        if (opts.mode !== undefined) body.mode = opts.mode;
        if (opts.applyNow) body.applyNow = true;
        if (Object.keys(body).length === 0)
          throw new CliError('usage', 'nothing to change: give KEY=VALUE, --image, --label, --unlabel or --apply-now');
        const r = await (
          await ctx.client()
        ).patch<{ id: string; applied: unknown; commandId: string | null; pendingChanges: { key: string; mode: string }[] }>(
          `/instances/${enc(name)}/settings`,
          body,
        );
        if (opts.json) return printJson(ctx.out, r);
        const pending = r.pendingChanges.map((c) => c.key);
        ctx.out.line(
          `instance ${name}: settings changed${r.commandId ? `; replacing the container (command ${r.commandId})` : ''}${pending.length ? `; pending until a restart: ${pending.join(', ')}` : ''}`,
        );
      },
    );
}

export function registerInstanceInfo(instances: Command, ctx: CommandContext): void {
  registerSettings(instances, ctx);
  type HistoryEntry = HistoryEntryView;
  jsonCommand<HistoryEntry[], { limit: number; json?: boolean }>(instances, ctx, {
    use: 'history <name>',
    description: 'state changes with their reasons, newest first',
    options: (c) => c.option('--limit <n>', 'entries', positiveInt('--limit'), 50),
    fetch: async (opts, name) =>
      (await (await ctx.client()).call('GET /instances/:id/history', { id: name }, { query: { limit: opts.limit } })).history,
    render: (history) => printTable(ctx.out, history, [...keyColumns<HistoryEntry>('at', 'from', 'to', 'actor', 'reason')], 'no history'),
  });
  type Revision = RevisionView;
  jsonCommand<Revision[]>(instances, ctx, {
    use: 'revisions <name>',
    description: 'immutable configuration revisions (newest 20, secrets redacted)',
    fetch: async (_opts, name) => (await (await ctx.client()).call('GET /instances/:id/revisions', { id: name })).revisions,
    render: (revisions) =>
      printTable(
        ctx.out,
        revisions,
        [
          { header: 'revision', value: (x) => x.revision, align: 'right' },
          { header: 'created', value: (x) => x.createdAt },
          ...keyColumns<Revision>('actor', 'reason'),
        ],
        'no revisions',
      ),
  });
  instances
    .command('players <name>')
    .description('players on an instance: router reports and the last status probe')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const r = await (await ctx.client()).call('GET /instances/:id/players', { id: name });
      if (opts.json) return printJson(ctx.out, r);
      ctx.out.line(
        `${r.online} online${r.probe ? ` (probe: ${r.probe.online}/${r.probe.max ?? '?'})` : ''}; ${r.routerReported} reported by routers`,
      );
      if (r.players.length > 0) {
        printTable(ctx.out, r.players, [
          { header: 'player', value: (p) => p.name },
          { header: 'uuid', value: (p) => p.uuid },
          { header: 'connected', value: (p) => formatAge(p.connectedAt, ctx.now()) },
        ]);
      }
    });
  jsonCommand<BackupsAnswer['backups']>(instances, ctx, {
    use: 'backups <name>',
    description: 'the backups of an instance kept on its host',
    fetch: async (_opts, name) => (await (await ctx.client()).call('GET /instances/:id/backups', { id: name })).backups,
    render: (backups) =>
      printTable(
        ctx.out,
        backups,
        [
          { header: 'backup', value: (b) => b.backupId },
          { header: 'size', value: (b) => formatBytes(b.sizeBytes), align: 'right' },
          { header: 'created', value: (b) => b.createdAt },
          { header: 'paths', value: (b) => (b.paths ? b.paths.join(',') : 'all') },
        ],
        'no backups',
      ),
  });
}
