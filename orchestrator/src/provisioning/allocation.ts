// Allocation choices, pure: which Ready instance of the buffer a session gets,
// and when an allocation that stayed empty releases itself.

import type { EpochMs, PlacementStrategy } from '../domain/index.js';
import { fleetClass, type FleetInstance } from './buffer.js';
import { chooseInstances, type FleetHost } from './instance-choice.js';

export interface AllocationFilter {
  variantId?: string;
  /** Every label must be present with this value. */
  labels?: Readonly<Record<string, string>>;
}

/**
 * The Ready, unallocated, not draining instances matching the filter, on
 * ONLINE hosts (or hosts whose status is not given), best first by the one
 * instance chooser (instance-choice.ts): packed: on the busiest host (most
 * instances), so other hosts empty out and scale-down can free them;
 * distributed: on the host with the fewest of the group in use (allocated or
 * with players), then the least busy. Ties by host id, then instance id.
 */
export function rankAllocatable(
  instances: readonly FleetInstance[],
  hosts: readonly FleetHost[],
  placement: PlacementStrategy,
  filter: AllocationFilter = {},
): string[] {
  return readyOn(instances, hosts, placement)
    .filter((i) => matches(i, filter))
    .map((i) => i.id);
}

/** Ready, unallocated, not draining instances on ONLINE hosts, best first: what an allocation may take. */
function readyOn(
  instances: readonly FleetInstance[],
  hosts: readonly FleetHost[],
  placement: PlacementStrategy = 'packed',
): FleetInstance[] {
  return chooseInstances(
    instances.filter((i) => fleetClass(i) === 'ready' && i.hostId !== null),
    { placement, hosts, groupInstances: instances },
    'placeable',
  );
}

const matches = (i: FleetInstance, filter: AllocationFilter): boolean =>
  (filter.variantId === undefined || i.variantId === filter.variantId) &&
  Object.entries(filter.labels ?? {}).every(([k, v]) => i.labels?.[k] === v);

/** At most this many distinct label sets of the Ready instances are listed in a refusal. */
const LISTED = 5;

/**
 * Why an allocation found nothing, in the words an operator checks:
 * "no Ready instance of group lobby has label mode=duels (2 Ready: mode=solo,
 * mode=squads)". Names the asked labels (and variant) that no Ready instance
 * has, or, when each is present on some but none has them all, all of them;
 * lists what the Ready instances have for the asked keys.
 */
export function explainNoMatch(
  groupId: string,
  instances: readonly FleetInstance[],
  hosts: readonly FleetHost[],
  filter: AllocationFilter = {},
): string {
  const ready = readyOn(instances, hosts);
  const variant = filter.variantId === undefined ? '' : ` of variant ${filter.variantId}`;
  if (ready.length === 0) {
    const allocated = instances.filter((i) => fleetClass(i) === 'allocated').length;
    const starting = instances.filter((i) => fleetClass(i) === 'starting').length;
    return `group ${groupId} has no Ready, unallocated instance${variant} in its buffer (${allocated} allocated, ${starting} starting)`;
  }
  const asked = Object.entries(filter.labels ?? {});
  const pool = filter.variantId === undefined ? ready : ready.filter((i) => i.variantId === filter.variantId);
  if (pool.length === 0) {
    const variants = [...new Set(ready.map((i) => i.variantId ?? '?'))].sort();
    return `no Ready instance of group ${groupId} is of variant ${filter.variantId} (${ready.length} Ready: ${variants.map((v) => `variant ${v}`).join(', ')})`;
  }
  if (asked.length === 0)
    return `the ${pool.length} Ready instance${pool.length === 1 ? '' : 's'}${variant} of group ${groupId} were taken by concurrent allocations; retry`;
  const label = ([k, v]: [string, string]): string => `${k}=${v}`;
  const absent = asked.filter(([k, v]) => !pool.some((i) => i.labels?.[k] === v));
  const named = absent.length > 0 ? absent : asked;
  const what =
    named.length === 1
      ? `label ${label(named[0]!)}`
      : `${absent.length > 0 ? 'labels' : 'all of the labels'} ${named.map(label).join(', ')}`;
  const keys = asked.map(([k]) => k);
  const sets = new Map<string, number>();
  for (const i of pool) {
    const set = keys
      .map((k) => {
        const v = i.labels?.[k];
        return v === undefined ? `${k} unset` : `${k}=${v}`;
      })
      .join(' ');
    sets.set(set, (sets.get(set) ?? 0) + 1);
  }
  const listed = [...sets]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, LISTED)
    .map(([set, n]) => (n > 1 ? `${set} ×${n}` : set));
  const more = sets.size > LISTED ? `, and ${sets.size - LISTED} more` : '';
  return `no Ready instance${variant} of group ${groupId} has ${what} (${pool.length} Ready: ${listed.join(', ')}${more})`;
}

export interface AllocationRecord {
  sessionId: string;
  allocatedAt: EpochMs;
}

export type ReleaseDecision = { release: true; reason: string } | { release: false; dueAt: EpochMs | null };

/**
 * Releases an allocation whose instance has been empty for
 * releaseWhenEmptyForMs. The empty time counts from the later of the
 * allocation and the idle clock's emptySince: a fresh allocation gets the
 * full delay for its first player to arrive. No policy: never released.
 */
export function shouldRelease(
  allocation: AllocationRecord,
  instance: { playersOnline: number; emptySince: EpochMs | null },
  releaseWhenEmptyForMs: number | undefined,
  now: EpochMs,
): ReleaseDecision {
  if (releaseWhenEmptyForMs === undefined || instance.playersOnline > 0 || instance.emptySince === null)
    return { release: false, dueAt: null };
  const since = Math.max(allocation.allocatedAt, instance.emptySince);
  const dueAt = since + releaseWhenEmptyForMs;
  if (now >= dueAt)
    return {
      release: true,
      reason: `session ${allocation.sessionId}: instance empty for ${Math.round((now - since) / 1000)}s (releaseWhenEmptyFor ${releaseWhenEmptyForMs} ms)`,
    };
  return { release: false, dueAt };
}
