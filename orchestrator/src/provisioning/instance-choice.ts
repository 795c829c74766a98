// Choosing an instance of a group, pure: the one order the router join (which
// world a login goes to or wakes), the autoscaler (what to wake, despawn or
// hold) and allocation (which Ready instance a session gets) follow, per the
// group's placement and its hosts' state. Deterministic: ties by host id,
// then instance id; instances without a host come last.

import type { HostStatus, PlacementStrategy } from '../domain/index.js';
import type { FleetInstance } from './buffer.js';

export interface FleetHost {
  id: string;
  /** Instances of every group placed on the host. */
  instanceCount: number;
  /** When given, chooseInstances skips hosts whose status the choice may not land on. */
  status?: HostStatus;
}

/**
 * 'empty' (what to remove first): packed → the host with the fewest
 * instances, so whole hosts empty out (Agones); distributed → the host with
 * the most of this group, so the group stays spread.
 * 'fill' (what to use, route to or wake first): packed → the busiest host;
 * distributed → the host with the fewest of this group's instances in use
 * (allocated to a session or with players online), then the least busy.
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
  const inUse = new Map<string, number>();
  for (const i of groupInstances) {
    if (i.hostId === null) continue;
    inGroup.set(i.hostId, (inGroup.get(i.hostId) ?? 0) + 1);
    if (i.allocated || i.playersOnline > 0) inUse.set(i.hostId, (inUse.get(i.hostId) ?? 0) + 1);
  }
  const total = (h: string): number => (known.get(h) ?? inGroup.get(h) ?? 0) - (removed.get(h) ?? 0);
  const primary = (h: string): number => {
    if (placement === 'packed') return mode === 'empty' ? total(h) : -total(h);
    return mode === 'empty' ? -(inGroup.get(h) ?? 0) : (inUse.get(h) ?? 0);
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

/**
 * Which hosts a choice may land on. `serving`: a host whose worlds still
 * serve players (ONLINE, or MAINTENANCE: drained of ephemerals, its worlds
 * keep running) — a login is routed there or wakes a world there.
 * `placeable`: ONLINE only — a new session never goes to a host being drained.
 * A host whose status is not given counts as usable.
 */
export type HostUse = 'serving' | 'placeable';

const USABLE: Readonly<Record<HostUse, readonly HostStatus[]>> = {
  serving: ['ONLINE', 'MAINTENANCE'],
  placeable: ['ONLINE'],
};

export interface InstanceChoice {
  placement: PlacementStrategy;
  hosts: readonly FleetHost[];
  /** Every instance of the group (the counts the order reads), not only the candidates. */
  groupInstances: readonly FleetInstance[];
}

/**
 * The candidates on a host the choice may land on, best first by
 * hostOrder('fill'); a candidate without a host comes last (a start places it). The router join, the autoscaler's wake
 * and allocation all choose through this.
 */
export function chooseInstances<T extends FleetInstance>(candidates: readonly T[], choice: InstanceChoice, use: HostUse): T[] {
  const status = new Map(choice.hosts.map((h) => [h.id, h.status]));
  const usable = (i: FleetInstance): boolean => {
    if (i.hostId === null) return true;
    const s = status.get(i.hostId);
    return s === undefined || USABLE[use].includes(s);
  };
  return candidates.filter(usable).sort(hostOrder(choice.placement, choice.hosts, choice.groupInstances, 'fill'));
}
