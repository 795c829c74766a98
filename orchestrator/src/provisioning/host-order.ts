// Orders a group's instances by their host, per the group's placement, so
// the autoscaler and the allocator agree. Deterministic: ties by host id,
// then instance id; instances without a host come last.

import type { HostStatus, PlacementStrategy } from '../domain/index.js';
import type { FleetInstance } from './buffer.js';

export interface FleetHost {
  id: string;
  /** Instances of every group placed on the host. */
  instanceCount: number;
  /** When given and not ONLINE, the allocator skips the host's instances (unreachable or being drained). */
  status?: HostStatus;
}

/**
 * 'empty' (what to remove first): packed → the host with the fewest
 * instances, so whole hosts empty out (Agones); distributed → the host with
 * the most of this group, so the group stays spread.
 * 'fill' (what to use or wake first): the reverse preference.
 * `removed` lowers a host's count by instances already picked in this plan.
 */
export function hostOrder(
  placement: PlacementStrategy,
  hosts: readonly FleetHost[],
  groupInstances: readonly FleetInstance[],
  mode: 'empty' | 'fill',
  removed: ReadonlyMap<string, number> = new Map(),
): (a: FleetInstance, b: FleetInstance) => number {
  const known = new Map(hosts.map((h) => [h.id, h.instanceCount]));
  const inGroup = new Map<string, number>();
  for (const i of groupInstances) if (i.hostId !== null) inGroup.set(i.hostId, (inGroup.get(i.hostId) ?? 0) + 1);
  const total = (h: string): number => (known.get(h) ?? inGroup.get(h) ?? 0) - (removed.get(h) ?? 0);
  const group = (h: string): number => inGroup.get(h) ?? 0;
  const primary = (h: string): number => {
    if (placement === 'packed') return mode === 'empty' ? total(h) : -total(h);
    return mode === 'empty' ? -group(h) : group(h);
  };
  const secondary = (h: string): number => (placement === 'distributed' && mode === 'fill' ? total(h) : 0);
  return (a, b) => {
    if (a.hostId !== b.hostId) {
      if (a.hostId === null) return 1;
      if (b.hostId === null) return -1;
      const d = primary(a.hostId) - primary(b.hostId) || secondary(a.hostId) - secondary(b.hostId);
      if (d !== 0) return d;
      return a.hostId < b.hostId ? -1 : 1;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  };
}
