// How the provisioning core sees the store: a group's instances as
// FleetInstances (cross-checked player counts, allocation, drain, idle clock)
// and its hosts as FleetHosts. One reading for the autoscaler, the idle tiers,
// allocation and router joins.

import type { Group, Host, Instance } from '../../domain/index.js';
import {
  effectiveIdleTiers,
  nextIdleAction,
  planFleet,
  type CapsRemaining,
  type FleetHost,
  type FleetPlan,
  type FleetInstance,
  type IdleDecision,
  type IdleTier,
  type IdleTierChoice,
} from '../../provisioning/index.js';
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
    store.instances.list({ groupId }),
    store.hosts.list(),
    store.instances.countByHost(),
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

/** What the provisioner remembers of a group between evaluations (the autoscaler's cooldowns). */
export interface FleetMemory {
  lastScaleUpAt: number | null;
  lastScaleDownAt: number | null;
}

export const fleetMemoryKey = (groupId: string): string => `fleet:${groupId}`;

export async function readFleetMemory(store: Store, groupId: string): Promise<FleetMemory> {
  const stored = (await store.system.get(fleetMemoryKey(groupId))) as Partial<FleetMemory> | undefined;
  return { lastScaleUpAt: stored?.lastScaleUpAt ?? null, lastScaleDownAt: stored?.lastScaleDownAt ?? null };
}

/** The autoscaler's plan of a group over one snapshot: the provisioner acts on it, the fleet view reads its held set. */
export function planGroup(
  group: Group & { scaling: NonNullable<Group['scaling']> },
  snap: GroupSnapshot,
  memory: FleetMemory,
  capsRemaining: CapsRemaining,
  now: number,
): FleetPlan {
  return planFleet({
    group: { id: group.id, kind: group.kind, placement: group.placement, scaling: group.scaling, caps: group.caps },
    instances: snap.fleet,
    hosts: snap.hosts,
    now,
    lastScaleUpAt: memory.lastScaleUpAt,
    lastScaleDownAt: memory.lastScaleDownAt,
    capsRemaining,
  });
}

export interface IdleOutlook {
  instanceId: string;
  choice: IdleTierChoice;
  /** The tier due now, the next one and when, or null (nothing ahead, or players/allocation/buffer keep it awake). */
  decision: IdleDecision;
  /** Why nothing is ahead although tiers exist, for people ("kept ready by the fleet's buffer"). */
  awakeBecause: string | null;
}

/**
 * Each instance's sleep outlook: the tiers in force (instance, group, system)
 * and nextIdleAction over the same inputs. The provisioner acts on it and the
 * fleet view shows it, so the countdown shown is the tier that fires.
 */
export function idleOutlooks(
  group: Pick<Group, 'idleTiers'>,
  snap: GroupSnapshot,
  systemTiers: readonly IdleTier[],
  held: ReadonlySet<string>,
  now: number,
): IdleOutlook[] {
  return snap.instances.map((instance) => {
    const choice = effectiveIdleTiers(instance.fleet?.idleTiers, group.idleTiers, systemTiers);
    const clock = instance.fleet?.idle;
    const allocated = instance.sessionId !== null;
    const playersOnline = Math.max(clock?.playersOnline ?? 0, playersOf(instance, snap.routerPlayers));
    const heldByFleet = held.has(instance.id);
    const decision =
      clock && choice.tiers.length > 0 && !instance.activeAction
        ? nextIdleAction(
            {
              tiers: choice.tiers,
              clock,
              state: instance.state,
              allocated,
              playersOnline,
              lastTierApplied: instance.fleet?.lastTier ?? null,
              heldByFleet,
              awakeSince: instance.stateChangedAt,
            },
            now,
          )
        : null;
    let awakeBecause: string | null = null;
    if (decision === null && choice.tiers.length > 0) {
      awakeBecause = instance.activeAction
        ? `${instance.activeAction.kind} in progress`
        : allocated
          ? 'allocated to a session'
          : playersOnline > 0
            ? `${playersOnline} player${playersOnline === 1 ? '' : 's'} on`
            : heldByFleet
              ? "kept ready by the fleet's minimum or buffer"
              : null;
    }
    return { instanceId: instance.id, choice, decision, awakeBecause };
  });
}
