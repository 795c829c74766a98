// Host recovery, pure: compares what a returning agent reports with what the
// store knows and decides what to remove, what to leave for an operator
// (unclaimed) and which stored instances went missing. Never destroys data on
// a guess: on a host the store knows, orphans of its groups are removed, and
// only an ephemeral group's orphan loses its runtime directory; a host the
// store knows nothing of (fresh or restored database) loses nothing, and a
// container once listed as unclaimed stays unclaimed until an operator acts.

import type { GroupKind, Instance, InstanceState } from '../../domain/index.js';

export interface InventoryContainer {
  instanceId: string;
  containerId: string;
  containerName: string;
  groupId: string | null;
  variantId: string | null;
  hostPort: number | null;
  state: string;
}

export interface UnclaimedContainer extends InventoryContainer {
  reason: string;
}

export interface RecoveryFacts {
  hostId: string;
  inventory: readonly InventoryContainer[];
  /** Instances the store places on this host. */
  stored: readonly Pick<Instance, 'id' | 'state'>[];
  /** True when the store has any history on this host (instances or commands). */
  hostKnown: boolean;
  /** Host id of instances stored elsewhere that this host reports (by instance id). */
  storedElsewhere: ReadonlyMap<string, string | null>;
  /** Kind of every group the store knows. */
  groupKinds: ReadonlyMap<string, GroupKind>;
  /**
   * The host's persisted unclaimed set (instance id → firstSeenAt): containers
   * an earlier run listed for an operator. Adopting one of several makes the
   * host "known"; without this the others would then be taken for orphans.
   */
  listedUnclaimed: ReadonlyMap<string, number>;
  /** Instance ids named by an unfinished cleanup command on this host: that command decides, with its own keepDataFor. */
  removalQueued: ReadonlySet<string>;
}

export interface RecoveryPlan {
  /** Orphans to remove through the agent's cleanup (it re-checks labels). */
  remove: string[];
  /** The part of `remove` whose runtime directory is kept (persistent groups). */
  keepDataFor: string[];
  /** Containers left for an operator: the host's unclaimed set becomes exactly these. */
  unclaimed: UnclaimedContainer[];
  /** Stored instances whose container is gone: to `unknown` for the lifecycle engine (also those already `unknown`, lost with the host). */
  missing: string[];
}

/** States in which no container is expected yet (or any more), so absence is no news. */
const NO_CONTAINER_EXPECTED: readonly InstanceState[] = ['draft', 'installing', 'deleting', 'unknown', 'error', 'intervention_required'];

export function planRecovery(f: RecoveryFacts): RecoveryPlan {
  const storedIds = new Set(f.stored.map((i) => i.id));
  const plan: RecoveryPlan = { remove: [], keepDataFor: [], unclaimed: [], missing: [] };
  for (const c of f.inventory) {
    if (storedIds.has(c.instanceId) || f.removalQueued.has(c.instanceId)) continue;
    const unclaimed = (reason: string) => plan.unclaimed.push({ ...c, reason });
    if (!f.hostKnown) {
      unclaimed('the store knows no instance on this host (a fresh or restored database): adopt or delete it explicitly');
      continue;
    }
    if (f.storedElsewhere.has(c.instanceId)) {
      unclaimed(`the store places instance ${c.instanceId} on host ${f.storedElsewhere.get(c.instanceId) ?? '(none)'}`);
      continue;
    }
    const since = f.listedUnclaimed.get(c.instanceId);
    if (since !== undefined) {
      unclaimed(`listed as unclaimed since ${new Date(since).toISOString()}: kept until an operator adopts or deletes it`);
      continue;
    }
    const kind = c.groupId === null ? undefined : f.groupKinds.get(c.groupId);
    if (kind === 'ephemeral') plan.remove.push(c.instanceId);
    else if (kind === 'persistent') {
      // The container goes; its world stays on disk for an operator to restore or delete.
      plan.remove.push(c.instanceId);
      plan.keepDataFor.push(c.instanceId);
    } else unclaimed(`orphan of unknown group ${c.groupId ?? '(none)'}: kept because its data may matter`);
  }
  const reported = new Set(f.inventory.map((c) => c.instanceId));
  for (const i of f.stored) {
    // A lost host's instances are already `unknown`: a container that did not come back with the host is still news.
    if (!reported.has(i.id) && (i.state === 'unknown' || !NO_CONTAINER_EXPECTED.includes(i.state))) plan.missing.push(i.id);
  }
  return plan;
}
