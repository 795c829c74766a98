// Fleets: `ectl spawn`, `despawn`, `allocate`, `release`, `fleet` (the
// group's fleet view as a table) and `idle-tiers` (a per-instance override).
// Durations are given as text ("30s", "5m") and sent as such; the server parses them.

import type { Command } from 'commander';
import { parseDuration } from '../../shared/config.js';
import { CliError } from '../errors.js';
import { printJson, printTable } from '../output.js';
import type { CommandContext } from '../program.js';
import type { InstanceView } from './instances.js';
import type { AllocationAnswer, FleetAnswer, FleetInstanceView } from '../../contracts/public-api/answers.js';

const enc = encodeURIComponent;
/** `--wait` without a value. */
const DEFAULT_WAIT = '5m';
/** Beyond the server's own wait, the answer still has to travel. */
const ANSWER_MARGIN_MS = 15_000;

/** A duration flag: checked here (a usage error names the flag), sent as text. */
export function durationFlag(name: string) {
  return (v: string): string => {
    try {
      parseDuration(v);
    } catch (err) {
      throw new CliError('usage', `${name}: ${(err as Error).message}`);
    }
    return v.trim();
  };
}

/** `k=v` labels, repeatable. */
function label(v: string, previous: Record<string, string> = {}): Record<string, string> {
  const at = v.indexOf('=');
  if (at <= 0) throw new CliError('usage', `--label must be key=value (got "${v}")`);
  return { ...previous, [v.slice(0, at)]: v.slice(at + 1) };
}

/**
 * `10m:pause,6h:stop` (or `off`) → the API's idle tiers, checked by the server's own rules: a bad tier is a usage error (exit 2).
 * The rules (and the schemas they bring) are imported here, when the command runs: ectl's other commands start without them.
 */
async function parseIdleTiers(text: string): Promise<{ after: string; action: string }[]> {
  const { parseIdleTierText } = await import('../../provisioning/idle-tiers.js');
  try {
    return parseIdleTierText(text, 'idle tiers').map((t) => ({ after: t.after, action: t.action }));
  } catch (err) {
    throw new CliError('usage', (err as Error).message);
  }
}

const waitTimeout = (wait: string | undefined): number | undefined =>
  wait === undefined ? undefined : parseDuration(wait) + ANSWER_MARGIN_MS;

function nextText(i: FleetInstanceView): string {
  if (!i.next) return i.awakeBecause ? `awake: ${i.awakeBecause}` : '-';
  const s = i.next.inSeconds;
  const when = s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
  return s === 0 ? `${i.next.action} now` : `${i.next.action} in ${when}${i.next.tier ? ` (tier ${i.next.tier})` : ''}`;
}

export function registerFleet(program: Command, ctx: CommandContext): void {
  program
    .command('spawn <group>')
    .description('spawn an instance into the group (caps and placement apply); with --wait, answer once it is online')
    .option('--variant <id>', 'variant to spawn (default: the first)')
    .option('--name <name>', 'instance name')
    .option('--wait [duration]', `wait until it is online, at most this long (default ${DEFAULT_WAIT})`)
    .option('--json', 'print JSON')
    .action(async (group: string, opts: { variant?: string; name?: string; wait?: string | true; json?: boolean }) => {
      const wait = opts.wait === undefined ? undefined : durationFlag('--wait')(opts.wait === true ? DEFAULT_WAIT : opts.wait);
      const body = {
        ...(opts.variant ? { variantId: opts.variant } : {}),
        ...(opts.name ? { name: opts.name } : {}),
        ...(wait ? { wait } : {}),
      };
      const timeoutMs = waitTimeout(wait);
      const r = await (
        await ctx.client()
      ).post<InstanceView & { commandId: string }>(`/groups/${enc(group)}/spawn`, body, timeoutMs ? { timeoutMs } : {});
      if (opts.json) return printJson(ctx.out, r);
      const at = r.endpoint ? ` at ${r.endpoint.host}:${r.endpoint.port}` : '';
      ctx.out.line(
        wait
          ? `instance ${r.name ?? r.id} (${r.id}) is ${r.state}${at}`
          : `instance ${r.name ?? r.id} (${r.id}) spawning (command ${r.commandId}); ectl spawn --wait answers once online`,
      );
    });

  program
    .command('despawn <instance>')
    .description('despawn: drain, evacuate players, wait until empty (bounded), then delete per the group savegame policy')
    .option('--timeout <duration>', 'how long players get to leave (server default 2m)', durationFlag('--timeout'))
    .option('--force', 'go on when players are still on after the timeout')
    .option('--json', 'print JSON')
    .action(async (instance: string, opts: { timeout?: string; force?: boolean; json?: boolean }) => {
      const body = { ...(opts.timeout ? { timeout: opts.timeout } : {}), ...(opts.force ? { force: true } : {}) };
      const r = await (
        await ctx.client()
      ).post<{ id: string; commandId: string | null; state: string }>(`/instances/${enc(instance)}/despawn`, body);
      if (opts.json) return printJson(ctx.out, r);
      ctx.out.line(`despawn of ${instance} (${r.id}) requested${r.commandId ? ` (command ${r.commandId})` : ''}; it is ${r.state}`);
    });

  program
    .command('allocate <group>')
    .description('allocate a Ready instance from the group warm buffer to a session (with --wait, spawn one when the buffer is empty)')
    .option('--variant <id>', 'only instances of this variant')
    .option('--label <key=value>', 'only instances with this label (repeatable)', label)
    .option('--wait <duration>', 'with an empty buffer, wait this long for a spawned instance', durationFlag('--wait'))
    .option('--json', 'print JSON')
    .action(async (group: string, opts: { variant?: string; label?: Record<string, string>; wait?: string; json?: boolean }) => {
      const body = {
        ...(opts.variant ? { variantId: opts.variant } : {}),
        ...(opts.label ? { labels: opts.label } : {}),
        ...(opts.wait ? { wait: opts.wait } : {}),
      };
      const timeoutMs = waitTimeout(opts.wait);
      const r = await (
        await ctx.client()
      ).post<AllocationAnswer>(`/groups/${enc(group)}/allocations`, body, timeoutMs ? { timeoutMs } : {});
      if (opts.json) return printJson(ctx.out, r);
      ctx.out.line(`allocation ${r.allocationId}: instance ${r.instanceId} at ${r.endpoint ?? '-'}`);
    });

  program
    .command('release <allocation>')
    .description('end an allocation: the instance returns to the buffer')
    .option('--json', 'print JSON')
    .action(async (allocation: string, opts: { json?: boolean }) => {
      const r = await (
        await ctx.client()
      ).delete<{ allocationId: string; instanceId: string; status: string }>(`/allocations/${enc(allocation)}`);
      if (opts.json) return printJson(ctx.out, r);
      ctx.out.line(`allocation ${r.allocationId} ${r.status} (instance ${r.instanceId})`);
    });

  program
    .command('fleet <group>')
    .description("the group's fleet: buffer, allocations and what each instance waits for next")
    .option('--json', 'print JSON')
    .action(async (group: string, opts: { json?: boolean }) => {
      const f = await (await ctx.client()).get<FleetAnswer>(`/groups/${enc(group)}/fleet`);
      if (opts.json) return printJson(ctx.out, f);
      ctx.out.line(
        `group ${f.groupId}: buffer ${f.buffer.ready} ready of ${f.buffer.target} wanted (${f.buffer.starting} starting), ${f.counts.allocated ?? 0} allocated`,
      );
      if (f.short) ctx.out.line(`short since ${f.short.since}: ${f.short.reason}`);
      printTable(
        ctx.out,
        f.instances,
        [
          { header: 'instance', value: (i) => i.name },
          { header: 'state', value: (i) => i.state },
          { header: 'class', value: (i) => (i.draining ? `${i.class} (draining)` : i.class) },
          { header: 'players', value: (i) => `${i.playersOnline}/${i.maxPlayers ?? '?'}` },
          { header: 'allocated', value: (i) => i.sessionId ?? '-' },
          { header: 'next', value: (i) => `${nextText(i)}${i.idleTiersOverridden ? ' [own tiers]' : ''}` },
          { header: 'sleeps', value: (i) => `${i.idleTiers ?? '-'}${i.idleTiersFrom ? ` (${i.idleTiersFrom})` : ''}` },
        ],
        'no instances in this group',
      );
    });

  program
    .command('idle-tiers <target> <verb> [tiers]')
    .description(
      'how worlds sleep when empty. TARGET is an instance, group:<id> or system; `set 10m:pause,6h:stop` (one tier is fine), `off` (never sleeps), or `clear` to follow the next level (instance → group → system → ENDERCLOUD_IDLE_TIERS)',
    )
    .option('--json', 'print JSON')
    .action(async (target: string, verb: string, tiers: string | undefined, opts: { json?: boolean }) => {
      let idleTiers: { after: string; action: string }[] | null;
      if (verb === 'set') {
        if (!tiers) throw new CliError('usage', 'idle-tiers set needs the tiers, e.g. 10m:pause,6h:stop (or off)');
        idleTiers = await parseIdleTiers(tiers);
      } else if (verb === 'off' || verb === 'clear') {
        if (tiers) throw new CliError('usage', `idle-tiers ${verb} takes no tiers`);
        idleTiers = verb === 'off' ? [] : null;
      } else {
        throw new CliError('usage', `idle-tiers: unknown verb "${verb}" (set, off or clear)`);
      }
      const client = await ctx.client();
      const text = (t: { after: string; action: string }[]): string =>
        t.length === 0
          ? 'idle tiers off (never paused or stopped for being empty)'
          : `idle tiers ${t.map((x) => `${x.after}:${x.action}`).join(',')}`;
      if (target === 'system') {
        const r = await client.call('PUT /system/idle-tiers', {}, { body: { idleTiers } });
        if (opts.json) return printJson(ctx.out, r);
        ctx.out.line(`system: ${text(r.tiers)}${r.source === 'configured' ? ' (the configured default)' : ''}`);
        return;
      }
      const group = /^group:(.+)$/.exec(target)?.[1];
      const r =
        group !== undefined
          ? await client.call('PUT /groups/:id/idle-tiers', { id: group }, { body: { idleTiers } })
          : await client.call('PUT /instances/:id/idle-tiers', { id: target }, { body: { idleTiers } });
      if (opts.json) return printJson(ctx.out, r);
      const follows = group !== undefined ? "follows the system's idle tiers" : "follows the group's idle tiers";
      ctx.out.line(`${target}: ${r.idleTiers === null ? follows : text(r.idleTiers)}`);
    });
}
