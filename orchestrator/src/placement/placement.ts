// Placement, pure: picks the host for a new instance from the hosts' status
// and memory reservations, and checks group caps. The store applies the
// choice in a transaction so concurrent placements never oversubscribe.

import { AppError } from '../shared/errors.js';
import { fail, ok, type Checked } from '../lifecycle/result.js';

import type { HostStatus, PlacementStrategy } from '../domain/index.js';

export type { HostStatus, PlacementStrategy } from '../domain/index.js';

export interface PlacementHost {
  id: string;
  status: HostStatus;
  /** Memory the orchestrator may reserve on the host (resources.memoryMb). */
  memoryMb: number;
  /** Sum of the reservations of the instances placed there. */
  memoryReservedMb: number;
  /** Instances per group on this host (for `distributed`). */
  groupCounts?: Readonly<Record<string, number>>;
}

export interface PlacementRequest {
  groupId: string;
  memoryMb: number;
}

const free = (h: PlacementHost): number => h.memoryMb - h.memoryReservedMb;
const groupCount = (h: PlacementHost, groupId: string): number => h.groupCounts?.[groupId] ?? 0;
const byId = (a: PlacementHost, b: PlacementHost): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * `packed`: fill the busiest host that fits (highest reservation first) so
 * whole hosts stay free. `distributed`: fewest instances of the group, then
 * least reserved, to spread a group across failure domains. Ties → lowest id.
 */
export function compareHosts(strategy: PlacementStrategy, groupId: string): (a: PlacementHost, b: PlacementHost) => number {
  if (strategy === 'packed') return (a, b) => b.memoryReservedMb - a.memoryReservedMb || byId(a, b);
  return (a, b) => groupCount(a, groupId) - groupCount(b, groupId) || a.memoryReservedMb - b.memoryReservedMb || byId(a, b);
}

/** Returns the chosen host id, or NO_CAPACITY explaining why none fits. One pass, no sort: O(hosts). */
export function placeInstance(hosts: readonly PlacementHost[], request: PlacementRequest, strategy: PlacementStrategy): Checked<string> {
  if (!Number.isInteger(request.memoryMb) || request.memoryMb <= 0) {
    return fail(
      new AppError('VALIDATION_FAILED', `memoryMb must be a positive integer (got ${JSON.stringify(request.memoryMb)})`, {
        details: { field: 'memoryMb' },
      }),
    );
  }
  const better = compareHosts(strategy, request.groupId);
  let chosen: PlacementHost | undefined;
  let online = 0;
  let bestFree: PlacementHost | undefined;
  for (const h of hosts) {
    // Only ONLINE: RECOVERING is still being inventoried, OFFLINE is unreachable, MAINTENANCE takes no new work.
    if (h.status !== 'ONLINE') continue;
    online += 1;
    if (bestFree === undefined || free(h) > free(bestFree)) bestFree = h;
    if (free(h) < request.memoryMb) continue;
    if (chosen === undefined || better(h, chosen) < 0) chosen = h;
  }
  if (chosen) return ok(chosen.id);
  return fail(noCapacity(hosts, request, online, bestFree));
}

function noCapacity(
  hosts: readonly PlacementHost[],
  request: PlacementRequest,
  online: number,
  bestFree: PlacementHost | undefined,
): AppError {
  if (online === 0) {
    const counts = new Map<string, number>();
    for (const h of hosts) counts.set(h.status, (counts.get(h.status) ?? 0) + 1);
    const summary =
      hosts.length === 0 ? 'no hosts are registered' : `${hosts.length} host(s): ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ')}`;
    return new AppError('NO_CAPACITY', `no ONLINE host to place ${request.memoryMb} MiB on (${summary})`, {
      details: { requiredMb: request.memoryMb, onlineHosts: 0 },
    });
  }
  const best = bestFree ? Math.max(0, free(bestFree)) : 0;
  return new AppError('NO_CAPACITY', `no ONLINE host has ${request.memoryMb} MiB free; best has ${best} MiB (${bestFree?.id})`, {
    details: { requiredMb: request.memoryMb, bestFreeMb: best, bestHostId: bestFree?.id ?? null, onlineHosts: online },
  });
}

export interface GroupCaps {
  /** The group's `caps.maxInstances`: at most this many counted instances in the group. */
  maxInstances?: number;
  /** The group's `scaling.maxInstances`: the fleet's own limit, held on every path like the cap. */
  scalingMaxInstances?: number;
  /** ENDERCLOUD_MAX_INSTANCES: at most this many counted instances in the whole cloud. */
  maxTotalInstances?: number;
}

/** The per-template cap (docs/provisioning.md "Network secret and template caps"): instances of one template across every group. */
export interface TemplateCap {
  name: string;
  maxInstances: number;
  current: number;
}

/** One limit on the instance count and how many more it allows (never below 0). */
export interface LimitRoom {
  /** The limit as an operator writes it. */
  limit: 'scaling.maxInstances' | 'caps.maxInstances' | 'ENDERCLOUD_MAX_INSTANCES';
  /** Set for a template's `caps.maxInstances` (counted across all groups). */
  template?: string;
  max: number;
  current: number;
  room: number;
}

/**
 * Every limit that applies to a new instance of the group, most specific
 * first. Counts are of the instances that count (every state but archived:
 * an archived world has no container and reserves nothing) and exclude the
 * new one.
 */
export function limitRooms(caps: GroupCaps, counts: { group: number; total: number }, template?: TemplateCap): LimitRoom[] {
  const out: LimitRoom[] = [];
  const add = (limit: LimitRoom['limit'], max: number | undefined, current: number, of?: string): void => {
    if (max !== undefined)
      out.push({ limit, ...(of !== undefined ? { template: of } : {}), max, current, room: Math.max(0, max - current) });
  };
  add('scaling.maxInstances', caps.scalingMaxInstances, counts.group);
  add('caps.maxInstances', caps.maxInstances, counts.group);
  if (template) add('caps.maxInstances', template.maxInstances, template.current, template.name);
  add('ENDERCLOUD_MAX_INSTANCES', caps.maxTotalInstances, counts.total);
  return out;
}

/** "group survival's scaling.maxInstances (4)", "template lobby's caps.maxInstances (10)". */
export function limitName(groupId: string, l: LimitRoom): string {
  if (l.template !== undefined) return `template ${l.template}'s caps.maxInstances (${l.max})`;
  if (l.limit === 'ENDERCLOUD_MAX_INSTANCES') return `ENDERCLOUD_MAX_INSTANCES (${l.max})`;
  return `group ${groupId}'s ${l.limit} (${l.max})`;
}

/** The refusal of a new instance by a limit without room, naming it: "group survival is at its scaling.maxInstances (4)". */
export function capRefusal(groupId: string, full: LimitRoom): AppError {
  const counted = `${full.current} instances count toward it (archived worlds do not)`;
  const message =
    full.template !== undefined
      ? `template ${full.template} is at its caps.maxInstances (${full.max}) across all groups: ${counted}`
      : full.limit === 'ENDERCLOUD_MAX_INSTANCES'
        ? `EnderCloud is at its ENDERCLOUD_MAX_INSTANCES (${full.max}): ${counted}`
        : `group ${groupId} is at its ${full.limit} (${full.max}): ${counted}`;
  const cap =
    full.template !== undefined
      ? 'template.maxInstances'
      : full.limit === 'ENDERCLOUD_MAX_INSTANCES'
        ? 'maxTotalInstances'
        : full.limit === 'caps.maxInstances'
          ? 'maxInstances'
          : 'scaling.maxInstances';
  return new AppError('CAP_REACHED', message, {
    details: { groupId, cap, limit: full.max, current: full.current, ...(full.template !== undefined ? { template: full.template } : {}) },
  });
}

/** Refuses a new instance when a limit would be exceeded (counts exclude the new one; archived worlds are not counted). */
export function checkCaps(
  groupId: string,
  caps: GroupCaps,
  counts: { group: number; total: number },
  template?: TemplateCap,
): Checked<void> {
  const full = limitRooms(caps, counts, template).find((l) => l.room === 0);
  return full ? fail(capRefusal(groupId, full)) : ok(undefined);
}
