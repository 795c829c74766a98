// Buffer maths and the fleet view of instances, pure. The buffer is the count
// of Ready, unallocated instances to keep warm so an allocation never waits
// for a spawn (world generation is paid before any player waits).

import type { EpochMs, InstanceState } from '../domain/index.js';
import type { BufferPolicy } from './scaling-policy.js';

/** ceil(n / d) on non-negative integers without floating-point rounding. */
function ceilDiv(n: number, d: number): number {
  const r = n % d;
  return (n - r) / d + (r > 0 ? 1 : 0);
}

/**
 * Agones' percent buffer: the Ready share of the total is `percent`, so the
 * total is ceil(allocated*100/(100-percent)) and the buffer is that minus the
 * allocated. 0 % keeps none, 99 % keeps 99 per allocated; 0 allocated keeps 0
 * (pair it with `count` to keep some when nothing is allocated).
 */
export function percentBuffer(percent: number, allocated: number): number {
  if (!Number.isInteger(percent) || percent < 0 || percent > 99)
    throw new RangeError(`buffer percent must be an integer 0..99 (got ${percent})`);
  if (!Number.isSafeInteger(allocated) || allocated < 0)
    throw new RangeError(`allocated must be a non-negative integer (got ${allocated})`);
  return ceilDiv(allocated * 100, 100 - percent) - allocated;
}

/** The Ready, unallocated instances to keep: `count`, the percent buffer, or the larger of both. */
export function desiredBuffer(buffer: BufferPolicy, allocatedCount: number): number {
  const absolute = buffer.count ?? 0;
  const relative = buffer.percent === undefined ? 0 : percentBuffer(buffer.percent, allocatedCount);
  return Math.max(absolute, relative);
}

export type FleetInstanceState = InstanceState;

/** One instance of a group as the autoscaler and the allocator see it. */
export interface FleetInstance {
  id: string;
  hostId: string | null;
  variantId?: string;
  labels?: Readonly<Record<string, string>>;
  state: FleetInstanceState;
  /** Has an allocated session (Instance.sessionId). */
  allocated: boolean;
  /** Chosen for despawn and being drained; neither Ready nor allocatable. */
  draining?: boolean;
  /** Cross-checked logged-in players (idle clock). */
  playersOnline: number;
  /** Max players from the probe; null while unknown. */
  maxPlayers: number | null;
  /** The idle clock's emptySince. */
  emptySince: EpochMs | null;
}

/**
 * ready: online, unallocated (the buffer, allocatable). starting: coming up,
 * counts toward the buffer but is not allocatable. busy: a running world in
 * a backup/restore/update, counted toward the minimum only. unhealthy and
 * other never count.
 */
export type FleetClass =
  'ready' | 'allocated' | 'starting' | 'busy' | 'draining' | 'paused' | 'stopped' | 'archived' | 'unhealthy' | 'other';

const BY_STATE: Record<FleetInstanceState, FleetClass> = {
  online: 'ready',
  installing: 'starting',
  starting: 'starting',
  backup: 'busy',
  restore: 'busy',
  update: 'busy',
  pausing: 'paused',
  paused: 'paused',
  stopping: 'stopped',
  stopped: 'stopped',
  archiving: 'archived',
  archived: 'archived',
  degraded: 'unhealthy',
  error: 'unhealthy',
  unknown: 'unhealthy',
  intervention_required: 'unhealthy',
  draft: 'other',
  deleting: 'other',
};

export function fleetClass(i: FleetInstance): FleetClass {
  if (i.state === 'deleting') return 'other';
  if (i.allocated) return 'allocated';
  if (i.draining) return 'draining';
  return BY_STATE[i.state];
}

export type FleetCounts = Record<FleetClass, number>;

export function fleetCounts(instances: readonly FleetInstance[]): FleetCounts {
  const counts: FleetCounts = {
    ready: 0,
    allocated: 0,
    starting: 0,
    busy: 0,
    draining: 0,
    paused: 0,
    stopped: 0,
    archived: 0,
    unhealthy: 0,
    other: 0,
  };
  for (const i of instances) counts[fleetClass(i)] += 1;
  return counts;
}

export interface Fill {
  players: number;
  capacity: number;
  /** players / capacity as a real ratio (never integer division); null when no capacity is known. */
  ratio: number | null;
}

/** Fill over the group's Ready and allocated instances whose max players is known. */
export function fillOf(instances: readonly FleetInstance[]): Fill {
  let players = 0;
  let capacity = 0;
  for (const i of instances) {
    const c = fleetClass(i);
    if ((c !== 'ready' && c !== 'allocated') || i.maxPlayers === null || i.maxPlayers <= 0) continue;
    players += Math.max(0, i.playersOnline);
    capacity += i.maxPlayers;
  }
  return { players, capacity, ratio: capacity === 0 ? null : players / capacity };
}
