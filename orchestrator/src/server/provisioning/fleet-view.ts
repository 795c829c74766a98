// How the provisioning core sees the store: a group's instances as
// FleetInstances (cross-checked player counts, allocation, drain, idle clock)
// and its hosts as FleetHosts. One reading for the autoscaler, the idle tiers,
// allocation and router joins.

import type { Host, Instance } from '../../domain/index.js';
import type { FleetHost, FleetInstance } from '../../provisioning/index.js';
import type { Store } from '../../store/store.js';

/** The larger of the routers' active sessions and the probe's count: a player either source sees is there. */
export function playersOf(instance: Instance, routerPlayers: Readonly<Record<string, number>>): number {
  return Math.max(routerPlayers[instance.id] ?? 0, instance.players?.online ?? 0);
}

export function fleetInstance(instance: Instance, routerPlayers: Readonly<Record<string, number>>): FleetInstance {
  return {
    id: instance.id,
    hostId: instance.hostId,
    variantId: instance.variantId,
    labels: instance.containerConfig.labels,
    state: instance.state,
    allocated: instance.sessionId !== null,
    draining: instance.fleet?.draining !== undefined,
    playersOnline: playersOf(instance, routerPlayers),
    maxPlayers: instance.players?.max ?? null,
    emptySince: instance.fleet?.idle?.emptySince ?? null,
  };
}

export interface GroupSnapshot {
  instances: Instance[];
  fleet: FleetInstance[];
  hosts: FleetHost[];
  routerPlayers: Record<string, number>;
  hostsById: Map<string, Host>;
}

/**
 * One consistent-enough read of a group for a decision (the actions re-check
 * atomically). `routerPlayers: false` skips the router's player counts (an
 * allocation's choice does not depend on them; its hot path saves the query).
 */
export async function readGroup(store: Store, groupId: string, opts: { routerPlayers?: boolean } = {}): Promise<GroupSnapshot> {
  const [instances, hosts, counts, routerPlayers] = await Promise.all([
    store.instances.list({ groupId }), store.hosts.list(), store.instances.countByHost(),
    opts.routerPlayers === false ? Promise.resolve({}) : store.playerSessions.countActiveByInstance(),
  ]);
  return {
    instances,
    fleet: instances.map((i) => fleetInstance(i, routerPlayers)),
    hosts: hosts.map((h) => ({ id: h.id, instanceCount: counts[h.id] ?? 0, status: h.status })),
    routerPlayers,
    hostsById: new Map(hosts.map((h) => [h.id, h])),
  };
}
