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
    return fail(new AppError('VALIDATION_FAILED', `memoryMb must be a positive integer (got ${JSON.stringify(request.memoryMb)})`, { details: { field: 'memoryMb' } }));
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

function noCapacity(hosts: readonly PlacementHost[], request: PlacementRequest, online: number, bestFree: PlacementHost | undefined): AppError {
  if (online === 0) {
    const counts = new Map<string, number>();
    for (const h of hosts) counts.set(h.status, (counts.get(h.status) ?? 0) + 1);
    const summary = hosts.length === 0 ? 'no hosts are registered' : `${hosts.length} host(s): ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ')}`;
    return new AppError('NO_CAPACITY', `no ONLINE host to place ${request.memoryMb} MiB on (${summary})`, {
      retryable: true,
      details: { requiredMb: request.memoryMb, onlineHosts: 0 },
    });
  }
  const best = bestFree ? Math.max(0, free(bestFree)) : 0;
  return new AppError('NO_CAPACITY', `no ONLINE host has ${request.memoryMb} MiB free; best has ${best} MiB (${bestFree?.id})`, {
    retryable: true,
    details: { requiredMb: request.memoryMb, bestFreeMb: best, bestHostId: bestFree?.id ?? null, onlineHosts: online },
  });
}

export interface GroupCaps {
  /** At most this many instances in the group. */
  maxInstances?: number;
  /** At most this many instances in the whole cloud (operator-wide cap). */
  maxTotalInstances?: number;
}

/** Refuses a new instance when a cap would be exceeded (counts exclude the new one). */
/** The per-template cap (seed 003 "hard caps per template"): instances of one template across every group. */
export interface TemplateCap {
  name: string;
  maxInstances: number;
  current: number;
}

export function checkCaps(groupId: string, caps: GroupCaps, counts: { group: number; total: number }, template?: TemplateCap): Checked<void> {
  if (template && template.current >= template.maxInstances) {
    return fail(new AppError('CAP_REACHED', `template ${template.name} already has ${template.current} of its maximum ${template.maxInstances} instances (across all groups)`, {
      details: { groupId, cap: 'template.maxInstances', template: template.name, limit: template.maxInstances, current: template.current },
    }));
  }
  if (caps.maxInstances !== undefined && counts.group >= caps.maxInstances) {
    return fail(new AppError('CAP_REACHED', `group ${groupId} already has ${counts.group} of its maximum ${caps.maxInstances} instances`, {
      details: { groupId, cap: 'maxInstances', limit: caps.maxInstances, current: counts.group },
    }));
  }
  if (caps.maxTotalInstances !== undefined && counts.total >= caps.maxTotalInstances) {
    return fail(new AppError('CAP_REACHED', `EnderCloud already runs ${counts.total} of its maximum ${caps.maxTotalInstances} instances`, {
      details: { groupId, cap: 'maxTotalInstances', limit: caps.maxTotalInstances, current: counts.total },
    }));
  }
  return ok(undefined);
}
