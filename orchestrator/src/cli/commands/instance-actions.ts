// Instance actions: start|stop|restart|pause|resume, kill (asks first), backup, restore, reinstall, delete
// (scoped, typed-name confirmation), update (plan, ask, apply), maintenance,
// reset-crash-loop, evacuate; and the global `ectl maintenance`. Every queued
// action can `--wait` for the state it aims for (start → online).

import { Option, type Command } from 'commander';
import { FAILURE_POLICIES } from '../../lifecycle/backup.js';
import { enc, type ApiClient } from '../api-client.js';
import { jsonCommand } from '../command-shapes.js';
import { confirmTypedName, confirmYes } from '../confirm.js';
import { CliError } from '../errors.js';
import { printFields, printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { GOAL_OF_ACTION, waitForInstance } from '../wait.js';
import { positiveInt, type InstanceView } from './instances.js';
import { printUpdatePlan, type UpdatePlanView } from './update-plan.js';
import { uploadForRestore } from './backups.js';
import type { ActionAccepted, DeleteAccepted, KillAccepted, MaintenanceAnswer } from '../../contracts/public-api/answers.js';

type Accepted = ActionAccepted & Partial<Pick<DeleteAccepted, 'scopes' | 'retained'>>;

interface WaitOpts {
  wait?: boolean;
  timeout: number;
  json?: boolean;
}

const withWait = (cmd: Command): Command =>
  cmd
    .option('--wait', 'wait until the instance reaches the state the action aims for')
    .option('--timeout <seconds>', 'bound on --wait', positiveInt('--timeout'), 300)
    .option('--json', 'print JSON');

/** Prints the acceptance, or waits and prints the instance. */
async function finish(
  ctx: CommandContext,
  client: ApiClient,
  action: string,
  accepted: Accepted,
  opts: WaitOpts,
  label: string,
): Promise<void> {
  if (opts.wait && !accepted.noop) {
    const goal = GOAL_OF_ACTION[action] ?? 'idle';
    const last = await waitForInstance(
      { client, out: ctx.out, now: ctx.now, sleep: ctx.sleep },
      accepted.id,
      goal,
      opts.timeout * 1000,
      accepted.commandId,
      action,
    );
    if (opts.json) return printJson(ctx.out, last ?? { id: accepted.id, deleted: true });
    if (goal === 'gone') return ctx.out.line(`instance ${label} deleted`);
    ctx.out.line(
      goal === 'idle'
        ? `${action} of ${label} done (instance ${last?.state ?? 'unknown'})`
        : `instance ${label}: ${last?.state ?? 'unknown'}`,
    );
    return;
  }
  if (opts.json) return printJson(ctx.out, accepted);
  if (accepted.noop) return ctx.out.line(`instance ${label}: nothing to do (${accepted.noop}); state ${accepted.state}`);
  ctx.out.line(
    `instance ${label}: ${action} accepted (state ${accepted.state}${accepted.commandId ? `, command ${accepted.commandId}` : ''})`,
  );
}

function registerPower(instances: Command, ctx: CommandContext): void {
  const about: Record<string, string> = {
    start: 'start a stopped instance (--wait: until online, i.e. its readiness check passed)',
    stop: 'stop an instance gracefully',
    restart: 'stop and start again (--wait: until online)',
    pause: 'freeze the container (warm sleep)',
    resume: 'unfreeze a paused instance (--wait: until online)',
  };
  for (const action of ['start', 'stop', 'restart', 'pause', 'resume'] as const) {
    const cmd = instances.command(`${action} <name>`).description(about[action]!);
    if (action === 'stop') {
      cmd
        .option('--backup', 'archive player data as part of the stop (needs --on-backup-failure)')
        .addOption(new Option('--on-backup-failure <policy>', 'what the stop does when the backup fails').choices(FAILURE_POLICIES));
    }
    withWait(cmd).action(async (name: string, opts: WaitOpts & { backup?: boolean; onBackupFailure?: string }) => {
      if (opts.onBackupFailure !== undefined && !opts.backup) throw new CliError('usage', '--on-backup-failure only goes with --backup');
      const body = opts.backup ? { backup: true, ...(opts.onBackupFailure ? { failurePolicy: opts.onBackupFailure } : {}) } : undefined;
      const client = await ctx.client();
      const accepted = await client.post<Accepted>(`/instances/${enc(name)}/${action}`, body);
      await finish(ctx, client, action, accepted, opts, name);
    });
  }
}

/** SIGKILL now: ends a stop that hangs (the action in progress then finishes), or stops a running server without saving. */
function registerKill(instances: Command, ctx: CommandContext): void {
  withWait(
    instances
      .command('kill <name>')
      .description('kill the container at once, without saving: ends a stop that hangs (--wait: until that action, or the kill, is done)'),
  )
    .option('--yes', 'confirm without asking (scripts)')
    .action(async (name: string, opts: WaitOpts & { yes?: boolean }) => {
      await confirmYes(ctx.prompt, `kill ${name} now? The server does not save`, opts.yes);
      const client = await ctx.client();
      const accepted = await client.post<KillAccepted>(`/instances/${enc(name)}/kill`, undefined);
      if (accepted.ended === true && !opts.wait && !opts.json) {
        ctx.out.line(
          `instance ${name}: ${accepted.killed === false ? 'its container had already exited' : 'killed'}; the ${accepted.state} in progress${accepted.commandId ? ` (command ${accepted.commandId})` : ''} finishes on its own`,
        );
        return;
      }
      // Ended: wait for the action it ended, whatever state that aims for; else the kill's own stop.
      await finish(ctx, client, accepted.ended === true ? 'kill-ended' : 'kill', accepted, opts, name);
    });
}

function registerData(instances: Command, ctx: CommandContext): void {
  withWait(
    instances.command('backup <name>').description('back up the instance data (queued; online save over RCON when the template allows it)'),
  )
    .option('--reason <text>', 'why (kept with the backup)')
    .option('--stop', 'allow stopping a running server whose backup cannot be taken online (it is started again)')
    .action(async (name: string, opts: WaitOpts & { reason?: string; stop?: boolean }) => {
      const client = await ctx.client();
      const accepted = await client.call(
        'POST /instances/:id/backup',
        { id: name },
        { body: { ...(opts.reason ? { reason: opts.reason } : {}), ...(opts.stop ? { stop: true } : {}) } },
      );
      await finish(ctx, client, 'backup', accepted, opts, name);
    });
  withWait(
    instances
      .command('restore <name> [backupId]')
      .description('restore a backup, or an archive with --upload (stopped instances only; a safety backup is written first)'),
  )
    .option('--confirm <name>', 'the instance name, for scripts (on a terminal ectl asks)')
    .option('--upload <file>', 'restore this .tar.gz (or directory) instead of a kept backup; it goes through the import checks')
    .action(async (name: string, backupId: string | undefined, opts: WaitOpts & { confirm?: string; upload?: string }) => {
      if ((backupId === undefined) === (opts.upload === undefined)) throw new CliError('usage', 'name either a backup id or --upload FILE');
      const client = await ctx.client();
      const instance = await client.get<InstanceView>(`/instances/${enc(name)}`);
      const what = backupId ?? opts.upload;
      const confirm = await confirmTypedName(
        ctx.prompt,
        instance.name ?? instance.id,
        `restoring ${what} replaces the current data of ${instance.name ?? instance.id}`,
        opts.confirm,
      );
      const source = backupId ? { backupId } : { uploadId: await uploadForRestore(ctx, client, opts.upload as string) };
      const accepted = await client.call('POST /instances/:id/restore', { id: instance.id }, { body: { ...source, confirm } });
      await finish(ctx, client, 'restore', accepted, opts, confirm);
    });
  withWait(
    instances
      .command('delete <name>')
      .description('delete an instance: container and technical files by default; --scope player_data/backups delete irreplaceable data'),
  )
    .option('--scope <scopes>', 'comma-separated: container, technical, player_data, backups (default: container,technical)')
    .option('--confirm <name>', 'the instance name, for scripts (on a terminal ectl asks)')
    .action(async (name: string, opts: WaitOpts & { scope?: string; confirm?: string }) => {
      const scopes = opts.scope
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (opts.scope !== undefined && (!scopes || scopes.length === 0))
        throw new CliError('usage', '--scope needs at least one of container, technical, player_data, backups');
      const client = await ctx.client();
      const instance = await client.get<InstanceView>(`/instances/${enc(name)}`);
      const label = instance.name ?? instance.id;
      const what = `deleting ${label} (${(scopes ?? ['container', 'technical']).join(', ')})`;
      const confirm = await confirmTypedName(ctx.prompt, label, what, opts.confirm);
      const accepted = await client.delete<Accepted>(`/instances/${enc(instance.id)}`, { ...(scopes ? { scopes } : {}), confirm });
      if (!opts.wait && !opts.json) {
        ctx.out.line(
          `instance ${label}: delete accepted (scopes ${accepted.scopes?.join(', ') ?? '-'}; kept: ${accepted.retained?.length ? accepted.retained.join(', ') : 'nothing'})`,
        );
        return;
      }
      await finish(ctx, client, 'delete', accepted, opts, label);
    });
  withWait(
    instances
      .command('reinstall <name>')
      .description(
        "run the egg template's install script again over the kept files (a running server is stopped first and started again; --wait: until the script is done)",
      ),
  ).action(async (name: string, opts: WaitOpts) => {
    const client = await ctx.client();
    const accepted = await client.post<Accepted>(`/instances/${enc(name)}/reinstall`, undefined);
    await finish(ctx, client, 'reinstall', accepted, opts, name);
  });
  withWait(
    instances
      .command('update <name>')
      .description(
        'update the image: shows the plan (checks, changes, warnings), asks, then applies (rolls back when the new image is not ready)',
      ),
  )
    .requiredOption('--image <ref>', "the candidate image: a reference, or the label of one of the template's image choices ('Java 17')")
    .option('--backup', 'take a safety backup before the stop')
    .option('--yes', 'apply without asking (scripts)')
    .option('--plan-only', 'show the plan and stop')
    .action(async (name: string, opts: WaitOpts & { image: string; backup?: boolean; yes?: boolean; planOnly?: boolean }) => {
      const client = await ctx.client();
      const plan = await client.get<UpdatePlanView>(`/instances/${enc(name)}/update-plan`, { query: { image: opts.image } });
      if (opts.planOnly) return opts.json ? printJson(ctx.out, plan) : printUpdatePlan(ctx.out, plan);
      if (!opts.json) printUpdatePlan(ctx.out, plan);
      if (!plan.compatible)
        throw new CliError('runtime', `image ${opts.image} is not compatible with instance ${plan.name}: nothing was done`);
      await confirmYes(ctx.prompt, `update ${plan.name} to ${opts.image}`, opts.yes);
      const accepted = await client.call(
        'POST /instances/:id/update',
        { id: plan.instanceId },
        { body: { image: opts.image, confirm: true, ...(opts.backup ? { backup: true } : {}) } },
      );
      await finish(ctx, client, 'update', accepted, opts, plan.name);
    });
}

const onOff = (opts: { on?: boolean; off?: boolean }): boolean => {
  if (Boolean(opts.on) === Boolean(opts.off)) throw new CliError('usage', 'give exactly one of --on or --off');
  return Boolean(opts.on);
};

type MaintenanceOpts = { on?: boolean; off?: boolean; message: string; json?: boolean };

/** The --on/--off/--message flags of the instance and the global maintenance commands. */
const maintenanceFlags = (c: Command): Command =>
  c.option('--on', 'enable').option('--off', 'disable').option('--message <text>', 'shown to refused starts', '');

function registerAdmin(instances: Command, program: Command, ctx: CommandContext): void {
  jsonCommand<InstanceView, MaintenanceOpts>(instances, ctx, {
    use: 'maintenance <name>',
    description: 'per-instance maintenance: ordinary starts are refused with the message (admin/manager token)',
    options: maintenanceFlags,
    fetch: async (opts, name) => {
      const enabled = onOff(opts);
      return (await ctx.client()).post<InstanceView>(`/instances/${enc(name)}/maintenance`, { enabled, message: opts.message });
    },
    render: (i, opts, name) => ctx.out.line(`instance ${i.name ?? name}: maintenance ${opts.on ? 'on' : 'off'}`),
  });
  instances
    .command('reset-crash-loop <name>')
    .description('re-enable starts after a crash loop, once diagnosed (admin/manager token); an instance in error becomes stopped')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const i = await (await ctx.client()).post<InstanceView>(`/instances/${enc(name)}/reset-crash-loop`, undefined);
      if (opts.json) return printJson(ctx.out, i);
      ctx.out.line(`instance ${i.name ?? name}: crash loop reset (state ${i.state}); start it with ectl instances start ${i.name ?? name}`);
    });
  instances
    .command('evacuate <name>')
    .description('transfer every connected player off an instance; it takes no new joins while draining')
    .option('--to-instance <name>', 'send them to this instance')
    .option('--to-group <id>', 'to any instance of this group')
    .option('--to-session <id>', 'to this session')
    .option('--ttl <seconds>', 'how long each transfer waits for the login', positiveInt('--ttl'))
    .option('--drain <seconds>', 'how long the instance takes no new joins (default 300)', positiveInt('--drain'))
    .option('--json', 'print JSON')
    .action(async (name: string, opts: TargetOpts & { ttl?: number; drain?: number; json?: boolean }) => {
      const target = transferTarget(opts, false);
      const body = {
        ...(target ? { target } : {}),
        ...(opts.ttl ? { ttlSeconds: opts.ttl } : {}),
        ...(opts.drain ? { drainSeconds: opts.drain } : {}),
      };
      const r = await (
        await ctx.client()
      ).post<{ instanceId: string; players: { player?: string; name?: string; moved: boolean }[] }>(
        `/instances/${enc(name)}/evacuate`,
        body,
      );
      if (opts.json) return printJson(ctx.out, r);
      const moved = r.players.filter((p) => p.moved).length;
      ctx.out.line(`instance ${name}: draining; ${r.players.length} player(s) to transfer, ${moved} moved now`);
    });
  type M = MaintenanceAnswer;
  jsonCommand<M, MaintenanceOpts>(program, ctx, {
    use: 'maintenance',
    description:
      'global maintenance: show it, or with --on/--off switch it (ordinary starts of every instance refused; admin/manager token)',
    options: maintenanceFlags,
    fetch: async (opts) => {
      const client = await ctx.client();
      return opts.on || opts.off
        ? client.post<M>('/maintenance', { enabled: onOff(opts), message: opts.message })
        : client.get<M>('/maintenance');
    },
    render: (m) =>
      printFields(ctx.out, [
        ['maintenance', m.enabled ? 'on' : 'off'],
        ['message', m.message || '-'],
        ['since', m.since ?? '-'],
      ]),
  });
}

export interface TargetOpts {
  toInstance?: string;
  toGroup?: string;
  toSession?: string;
}

/** Exactly one of --to-instance/--to-group/--to-session (or none, when optional). */
export function transferTarget(opts: TargetOpts, required: boolean): Record<string, string> | undefined {
  const given = [
    ['instance', opts.toInstance],
    ['group', opts.toGroup],
    ['session', opts.toSession],
  ].filter(([, v]) => v !== undefined) as [string, string][];
  if (given.length > 1) throw new CliError('usage', 'give only one of --to-instance, --to-group, --to-session');
  if (given.length === 0) {
    if (required) throw new CliError('usage', 'give one of --to-instance, --to-group, --to-session');
    return undefined;
  }
  return { [given[0]![0]]: given[0]![1] };
}

export function registerInstanceActions(instances: Command, program: Command, ctx: CommandContext): void {
  registerPower(instances, ctx);
  registerKill(instances, ctx);
  registerData(instances, ctx);
  registerAdmin(instances, program, ctx);
}
