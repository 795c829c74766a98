// Allocation choices, pure: which Ready instance of the buffer a session gets,
// and when an allocation that stayed empty releases itself.

import type { EpochMs, PlacementStrategy } from '../domain/index.js';
import { fleetClass, type FleetInstance } from './buffer.js';
import type { FleetHost } from './host-order.js';

export interface AllocationFilter {
  variantId?: string;
  /** Every label must be present with this value. */
  labels?: Readonly<Record<string, string>>;
}

const byId = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The Ready, unallocated, not draining instances matching the filter, on
 * hosts not known to be other than ONLINE, best first. packed: on the busiest
 * host (most instances), so other hosts empty out and scale-down can free
 * them; distributed: on the host with the fewest allocated instances of the
 * group, then the least busy. Ties by host id, then instance id.
 */
export function rankAllocatable(instances: readonly FleetInstance[], hosts: readonly FleetHost[], placement: PlacementStrategy, filter: AllocationFilter = {}): string[] {
  const known = new Map(hosts.map((h) => [h.id, h.instanceCount]));
  const closed = new Set(hosts.filter((h) => h.status !== undefined && h.status !== 'ONLINE').map((h) => h.id));
  const onHost = new Map<string, number>();
  const allocatedOnHost = new Map<string, number>();
  for (const i of instances) {
    if (i.hostId === null) continue;
    onHost.set(i.hostId, (onHost.get(i.hostId) ?? 0) + 1);
    if (i.allocated) allocatedOnHost.set(i.hostId, (allocatedOnHost.get(i.hostId) ?? 0) + 1);
  }
  const busy = (h: string): number => known.get(h) ?? onHost.get(h) ?? 0;
  const score = (h: string): [number, number] => (placement === 'packed' ? [-busy(h), 0] : [allocatedOnHost.get(h) ?? 0, busy(h)]);
  const wanted = Object.entries(filter.labels ?? {});
  const candidates = instances.filter((i) => fleetClass(i) === 'ready' && i.hostId !== null && !closed.has(i.hostId)
    && (filter.variantId === undefined || i.variantId === filter.variantId) && wanted.every(([k, v]) => i.labels?.[k] === v));
  return candidates.sort(compare).map((i) => i.id);

  function compare(a: FleetInstance, b: FleetInstance): number {
    const [a1, a2] = score(a.hostId!);
    const [b1, b2] = score(b.hostId!);
    return a1 - b1 || a2 - b2 || byId(a.hostId!, b.hostId!) || byId(a.id, b.id);
  }
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
  if (releaseWhenEmptyForMs === undefined || instance.playersOnline > 0 || instance.emptySince === null) return { release: false, dueAt: null };
  const since = Math.max(allocation.allocatedAt, instance.emptySince);
  const dueAt = since + releaseWhenEmptyForMs;
  if (now >= dueAt) return { release: true, reason: `session ${allocation.sessionId}: instance empty for ${Math.round((now - since) / 1000)}s (releaseWhenEmptyFor ${releaseWhenEmptyForMs} ms)` };
  return { release: false, dueAt };
}
