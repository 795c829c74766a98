// The fleet autoscaler, pure: one evaluation over a snapshot of a group
// decides what to spawn, wake and despawn, and returns the inputs it decided
// from for the audit log. The caller applies the plan through the normal
// placement/caps path (which re-checks every cap atomically).

import type { EpochMs, GroupCaps, GroupKind, PlacementStrategy } from '../domain/index.js';
import { desiredBuffer, fillOf, fleetClass, fleetCounts, type Fill, type FleetCounts, type FleetInstance } from './buffer.js';
import { chooseInstances, hostOrder, type FleetHost } from './instance-choice.js';
import type { ScalingPolicy } from './scaling-policy.js';
import { limitName, type LimitRoom } from '../placement/placement.js';

export type { FleetHost } from './instance-choice.js';

export interface CapsRemaining {
  /** New instances the group's atomic limits (caps.maxInstances, scaling.maxInstances) still allow. */
  group: number;
  template: number;
  global: number;
  /** Each limit by the name the enforcement point gives it (capsRemainingOf), for the reason a plan falls short. */
  named?: readonly { name: string; room: number }[];
}

const UNLIMITED = Number.MAX_SAFE_INTEGER;

/** The room left under each limit (limitRooms of every variant's template) as the plan reads it. */
export function capsRemainingOf(groupId: string, rooms: readonly LimitRoom[]): CapsRemaining {
  const least = (ls: readonly LimitRoom[]): number => ls.reduce((m, l) => Math.min(m, l.room), UNLIMITED);
  const named = new Map<string, number>();
  for (const l of rooms) named.set(limitName(groupId, l), l.room);
  return {
    group: least(rooms.filter((l) => l.template === undefined && l.limit !== 'ENDERCLOUD_MAX_INSTANCES')),
    template: least(rooms.filter((l) => l.template !== undefined)),
    global: least(rooms.filter((l) => l.limit === 'ENDERCLOUD_MAX_INSTANCES')),
    named: [...named].map(([name, room]) => ({ name, room })),
  };
}

export interface FleetInput {
  /** `kind` ephemeral: instances on a host in MAINTENANCE are moved off (replaced, then despawned). */
  group: { id: string; kind?: GroupKind; placement: PlacementStrategy; scaling: ScalingPolicy; caps: GroupCaps };
  instances: readonly FleetInstance[];
  hosts: readonly FleetHost[];
  now: EpochMs;
  lastScaleUpAt: EpochMs | null;
  lastScaleDownAt: EpochMs | null;
  capsRemaining: CapsRemaining;
}

export interface FleetPlanInputs {
  groupId: string;
  now: EpochMs;
  counts: FleetCounts;
  minInstances: number;
  maxInstances: number | null;
  bufferTarget: number;
  fill: Fill;
  need: { min: number; buffer: number; scaleUp: number };
  /** New instances each limit still allows; `policy` is scaling.maxInstances, `capsMax` caps.maxInstances, minus the group's instances. */
  room: { group: number; template: number; global: number; policy: number | null; capsMax: number | null; effective: number };
  scaleUp: { threshold: number; above: boolean; cooldownRemainingMs: number } | null;
  scaleDown: { whenEmptyForMs: number; cooldownRemainingMs: number; removable: number } | null;
  lastScaleUpAt: EpochMs | null;
  lastScaleDownAt: EpochMs | null;
}

export interface FleetPlan {
  spawn: { count: number; reason: string };
  /** Paused, then stopped, unallocated instances to bring back before spawning (no world generation). */
  wake: { instanceId: string; reason: string }[];
  despawn: { instanceId: string; reason: string }[];
  /** Ready instances that make up the minimum or buffer: idle tiers leave them alone (heldByFleet). */
  hold: string[];
  /**
   * Why the fleet stays below its minimum, buffer or scale-up step after this
   * plan (limits without room); null when it does not. `limits` names the
   * binding limits: the reason changes when they do, not with every count.
   */
  short: { reason: string; limits: string[] } | null;
  inputs: FleetPlanInputs;
}

const remaining = (last: EpochMs | null, cooldownMs: number, now: EpochMs): number =>
  last === null ? 0 : Math.max(0, last + cooldownMs - now);

/** Never below min or buffer, never above any cap, never an allocated or occupied instance. */
export function planFleet(input: FleetInput): FleetPlan {
  const { group, now } = input;
  const policy = group.scaling;
  const { instances, moveOff } = maintenanceDrain(input);
  const sorted = [...instances].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const counts = fleetCounts(sorted);
  const bufferTarget = desiredBuffer(policy.buffer, counts.allocated);
  const fill = fillOf(sorted);
  const towardBuffer = counts.ready + counts.starting;
  const towardMin = counts.ready + counts.allocated + counts.starting + counts.busy;

  const up = policy.scaleUp;
  const upCooldown = up ? remaining(input.lastScaleUpAt, up.cooldownMs, now) : 0;
  const above = up !== undefined && fill.ratio !== null && fill.ratio > up.whenFillAbove;
  // Instances already starting are the pending answer to a high fill: count them against the step.
  const need = {
    min: Math.max(0, policy.minInstances - towardMin),
    buffer: Math.max(0, bufferTarget - towardBuffer),
    scaleUp: up && above && upCooldown === 0 ? Math.max(0, up.step - counts.starting) : 0,
  };
  // Archived worlds count toward no limit (no container, nothing reserved); their retention bounds them.
  const counted = sorted.length - counts.archived;
  const policyRoom = policy.maxInstances === undefined ? null : policy.maxInstances - counted;
  const capsMax = group.caps.maxInstances === undefined ? null : group.caps.maxInstances - counted;
  const effective = Math.max(
    0,
    Math.min(
      input.capsRemaining.group,
      input.capsRemaining.template,
      input.capsRemaining.global,
      policyRoom ?? Infinity,
      capsMax ?? Infinity,
    ),
  );
  const room = {
    group: input.capsRemaining.group,
    template: input.capsRemaining.template,
    global: input.capsRemaining.global,
    policy: policyRoom,
    capsMax,
    effective,
  };

  const wanted = Math.max(need.min, need.buffer, need.scaleUp);
  const wake = chooseWake(sorted, input, wanted);
  const spawnCount = Math.min(wanted - wake.length, effective);
  const spawn = { count: spawnCount, reason: spawnReason(need, wanted, wake.length, spawnCount, room, counts, bufferTarget, policy) };
  const short = wake.length + spawnCount < wanted ? shortReason(input, need, wanted - wake.length, spawnCount, counts, bufferTarget) : null;

  const down = policy.scaleDown;
  let despawn: FleetPlan['despawn'] = [];
  let removable = 0;
  const downCooldown = up
    ? Math.max(remaining(input.lastScaleUpAt, up.cooldownMs, now), remaining(input.lastScaleDownAt, up.cooldownMs, now))
    : 0;
  if (down && wanted === 0 && downCooldown === 0) {
    removable = Math.max(0, Math.min(counts.ready + counts.allocated + counts.busy - policy.minInstances, counts.ready - bufferTarget));
    despawn = chooseDespawn(sorted, input, removable, fill, down.whenEmptyForMs, bufferTarget);
  }
  // Moved off a host in maintenance once the group is whole without them (spawn elsewhere → evacuate → despawn).
  if (wanted === 0 && counts.starting === 0) {
    for (const i of sorted)
      if (moveOff.has(i.id))
        despawn.push({
          instanceId: i.id,
          reason: `host ${i.hostId ?? '?'} is in MAINTENANCE: moved off (its replacement is ready on another host)`,
        });
  }
  const hold = chooseHold(sorted, input, despawn, counts, bufferTarget);

  return {
    spawn,
    wake,
    despawn,
    hold,
    short,
    inputs: {
      groupId: group.id,
      now,
      counts,
      minInstances: policy.minInstances,
      maxInstances: policy.maxInstances ?? null,
      bufferTarget,
      fill,
      need,
      room,
      scaleUp: up ? { threshold: up.whenFillAbove, above, cooldownRemainingMs: upCooldown } : null,
      scaleDown: down ? { whenEmptyForMs: down.whenEmptyForMs, cooldownRemainingMs: downCooldown, removable } : null,
      lastScaleUpAt: input.lastScaleUpAt,
      lastScaleDownAt: input.lastScaleDownAt,
    },
  };
}

/**
 * An ephemeral group's unallocated instances on a host in MAINTENANCE count
 * as draining (neither Ready nor toward the minimum), so the plan spawns their
 * replacements on placeable hosts; `moveOff` are those still to despawn
 * (allocated ones finish their session first; archived ones have no container).
 */
function maintenanceDrain(input: FleetInput): { instances: readonly FleetInstance[]; moveOff: Set<string> } {
  const moveOff = new Set<string>();
  if (input.group.kind !== 'ephemeral') return { instances: input.instances, moveOff };
  const maintenance = new Set(input.hosts.filter((h) => h.status === 'MAINTENANCE').map((h) => h.id));
  if (maintenance.size === 0) return { instances: input.instances, moveOff };
  const instances = input.instances.map((i) => {
    if (i.hostId === null || !maintenance.has(i.hostId) || i.allocated || i.draining || !MOVABLE.includes(i.state)) return i;
    moveOff.add(i.id);
    return { ...i, draining: true };
  });
  return { instances, moveOff };
}

const MOVABLE: readonly FleetInstance['state'][] = ['starting', 'online', 'degraded', 'paused', 'stopped'];

function chooseWake(sorted: readonly FleetInstance[], input: FleetInput, wanted: number): FleetPlan['wake'] {
  if (wanted <= 0) return [];
  // Only settled sleepers; archived worlds are finished (a start or a login brings one back, not the fleet).
  const rank = (i: FleetInstance): number => (i.state === 'paused' ? 0 : 1);
  const sleepers = sorted.filter((i) => !i.allocated && !i.draining && (i.state === 'paused' || i.state === 'stopped'));
  // Paused before stopped (a resume is cheaper), each in the chooser's order; never on a host that is down.
  const chosen = chooseInstances(sleepers, { placement: input.group.placement, hosts: input.hosts, groupInstances: sorted }, 'serving');
  const place = new Map(chosen.map((i, n) => [i.id, n]));
  const woken = chosen.slice().sort((a, b) => rank(a) - rank(b) || place.get(a.id)! - place.get(b.id)!);
  return woken.slice(0, wanted).map((i) => ({ instanceId: i.id, reason: `${i.state} and unallocated: waking it is cheaper than a spawn` }));
}

function chooseDespawn(
  sorted: readonly FleetInstance[],
  input: FleetInput,
  removable: number,
  fill: Fill,
  whenEmptyForMs: number,
  bufferTarget: number,
): FleetPlan['despawn'] {
  const { now, group } = input;
  const up = group.scaling.scaleUp;
  const candidates = sorted.filter(
    (i) => fleetClass(i) === 'ready' && i.playersOnline === 0 && i.emptySince !== null && now - i.emptySince >= whenEmptyForMs,
  );
  const out: FleetPlan['despawn'] = [];
  const { players } = fill;
  let { capacity } = fill;
  const taken = new Set<string>();
  while (out.length < removable) {
    const pool = candidates.filter((i) => !taken.has(i.id));
    if (pool.length === 0) break;
    // Re-rank after each pick: removing one changes its host's counts.
    const left = sorted.filter((i) => !taken.has(i.id));
    const next = pool.sort(hostOrder(group.placement, input.hosts, left, 'empty', takenHosts(sorted, taken)))[0]!;
    const cap = capacity - (next.maxPlayers ?? 0);
    // Never remove so much capacity that the fill rises above the scale-up threshold (it would flap).
    if (up && players > 0 && (cap <= 0 || players / cap > up.whenFillAbove)) break;
    capacity = cap;
    taken.add(next.id);
    out.push({
      instanceId: next.id,
      reason: `empty for ${Math.round((now - next.emptySince!) / 1000)}s (scaleDown.whenEmptyFor ${group.scaling.scaleDown!.whenEmptyFor}); keeps min ${group.scaling.minInstances} and buffer ${bufferTarget}`,
    });
  }
  return out;
}

/** How many instances each host lost to earlier picks of this plan. */
function takenHosts(sorted: readonly FleetInstance[], taken: ReadonlySet<string>): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of sorted) if (taken.has(i.id) && i.hostId !== null) m.set(i.hostId, (m.get(i.hostId) ?? 0) + 1);
  return m;
}

function chooseHold(
  sorted: readonly FleetInstance[],
  input: FleetInput,
  despawn: FleetPlan['despawn'],
  counts: FleetCounts,
  bufferTarget: number,
): string[] {
  const gone = new Set(despawn.map((d) => d.instanceId));
  const ready = sorted.filter((i) => fleetClass(i) === 'ready' && !gone.has(i.id));
  const towardBuffer = ready.length + counts.starting;
  const towardMin = ready.length + counts.allocated + counts.starting + counts.busy;
  // Ready instances that could sleep without the next evaluation spawning a replacement.
  const spare = Math.max(0, Math.min(towardBuffer - bufferTarget, towardMin - input.group.scaling.minInstances));
  const heldCount = Math.max(0, ready.length - spare);
  // Hold the ones scale-down would remove last.
  ready.sort(hostOrder(input.group.placement, input.hosts, sorted, 'empty'));
  return ready
    .slice(ready.length - heldCount)
    .map((i) => i.id)
    .sort();
}

/**
 * "buffer 2 needs 2 more (ready 0, starting 0): spawns 0, group survival's
 * scaling.maxInstances (4) has no room" — what is missing and every limit
 * that leaves less room than it needs.
 */
function shortReason(
  input: FleetInput,
  need: FleetPlanInputs['need'],
  toSpawn: number,
  count: number,
  counts: FleetCounts,
  bufferTarget: number,
): NonNullable<FleetPlan['short']> {
  const { group } = input;
  const policy = group.scaling;
  const missing: string[] = [];
  if (need.min > 0) missing.push(`minInstances ${policy.minInstances} needs ${need.min} more`);
  if (need.buffer > 0)
    missing.push(`buffer ${bufferTarget} needs ${need.buffer} more (ready ${counts.ready}, starting ${counts.starting})`);
  if (need.scaleUp > 0) missing.push(`fill above ${policy.scaleUp!.whenFillAbove} wants ${need.scaleUp} more`);
  const counted = input.instances.length - counts.archived;
  const limits = new Map<string, number>();
  if (policy.maxInstances !== undefined)
    limits.set(`group ${group.id}'s scaling.maxInstances (${policy.maxInstances})`, Math.max(0, policy.maxInstances - counted));
  if (group.caps.maxInstances !== undefined)
    limits.set(`group ${group.id}'s caps.maxInstances (${group.caps.maxInstances})`, Math.max(0, group.caps.maxInstances - counted));
  for (const l of input.capsRemaining.named ?? []) limits.set(l.name, Math.min(l.room, limits.get(l.name) ?? l.room));
  const binding = [...limits].filter(([, room]) => room < toSpawn);
  const why =
    binding.length > 0
      ? binding.map(([name, room]) => (room === 0 ? `${name} has no room` : `${name} has room for ${room}`)).join(', ')
      : 'a limit leaves no room';
  const archived = counts.archived > 0 ? ` (${counts.archived} archived not counted)` : '';
  return { reason: `${missing.join('; ')}: spawns ${count} of ${toSpawn}; ${why}${archived}`, limits: binding.map(([name]) => name) };
}

function spawnReason(
  need: FleetPlanInputs['need'],
  wanted: number,
  woken: number,
  count: number,
  room: FleetPlanInputs['room'],
  counts: FleetCounts,
  bufferTarget: number,
  policy: ScalingPolicy,
): string {
  if (wanted === 0) return 'nothing missing';
  const why: string[] = [];
  if (need.min > 0) why.push(`minInstances ${policy.minInstances} needs ${need.min} more`);
  if (need.buffer > 0) why.push(`buffer ${bufferTarget} needs ${need.buffer} more (ready ${counts.ready}, starting ${counts.starting})`);
  if (need.scaleUp > 0)
    why.push(`fill above ${policy.scaleUp!.whenFillAbove}: step ${policy.scaleUp!.step} less ${counts.starting} starting`);
  let text = why.join('; ');
  if (woken > 0) text += `; ${woken} woken instead`;
  if (count < wanted - woken) {
    const limits = (
      [
        ['group cap', room.group],
        ['template cap', room.template],
        ['global cap', room.global],
        ['scaling.maxInstances', room.policy],
        ['caps.maxInstances', room.capsMax],
      ] as const
    )
      .filter(([, v]) => v !== null && v <= count)
      .map(([n]) => n);
    text += `; capped at ${count} by ${limits.join(', ')}`;
  }
  return text;
}
