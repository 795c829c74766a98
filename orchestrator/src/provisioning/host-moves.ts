// What happens to the instances of a host that is lost or returns, pure.
// A host that went OFFLINE gives no trustworthy inventory: every instance on
// it whose container may still exist becomes `unknown` (Nomad's `disconnect`:
// a persistent world is never started elsewhere while its data may be alive).
// `unknown` does not count toward a fleet's minimum or buffer, so the
// autoscaler replaces an instance of an ephemeral group with a scaling policy
// on the other hosts; when the host returns (its recovery run, before it is
// ONLINE again) every such instance still `unknown` there is despawned (its
// group's savegame policy decides what is kept), so no fleet instance exists
// twice. Without a scaling policy nothing replaces an instance: it is treated
// like a persistent one (re-verified when the host returns).

import type { GroupKind, InstanceState } from '../domain/index.js';

export interface HostMoveInstance {
  id: string;
  state: InstanceState;
  /** Kind of the instance's group; undefined when the group is gone. */
  groupKind: GroupKind | undefined;
  /** The group has a scaling policy: its autoscaler replaces what is lost. */
  scaled: boolean;
  /** A command owns the instance (it retries until the host answers). */
  activeAction: boolean;
}

const replacedByFleet = (i: HostMoveInstance): boolean => i.groupKind === 'ephemeral' && i.scaled;

export interface HostLossDecision {
  instanceId: string;
  to: 'unknown';
  /** A scaled ephemeral group's: replaced by its fleet and despawned when the host returns. */
  lost: boolean;
  reason: string;
}

/** States whose container may be alive on the lost host and that no command owns. */
const LOSABLE: readonly InstanceState[] = ['stopped', 'starting', 'online', 'degraded', 'stopping', 'pausing', 'paused'];

export function planHostLoss(hostId: string, instances: readonly HostMoveInstance[]): HostLossDecision[] {
  const out: HostLossDecision[] = [];
  for (const i of instances) {
    if (i.activeAction || !LOSABLE.includes(i.state)) continue;
    const lost = replacedByFleet(i);
    out.push({
      instanceId: i.id,
      to: 'unknown',
      lost,
      reason: lost
        ? `host ${hostId} is OFFLINE: fleet instance lost; replaced on the other hosts, despawned when the host returns`
        : `host ${hostId} is OFFLINE: the container and its data may still be alive there; never started elsewhere, re-checked when the host returns`,
    });
  }
  return out;
}

export interface HostReturnDecision {
  instanceId: string;
  reason: string;
}

/**
 * A returning host's fleet instances still `unknown` (lost with it; the
 * supervisor has not seen the host since): despawn them, their replacements
 * already run elsewhere.
 */
export function planHostReturn(hostId: string, instances: readonly HostMoveInstance[]): HostReturnDecision[] {
  return instances
    .filter((i) => replacedByFleet(i) && i.state === 'unknown' && !i.activeAction)
    .map((i) => ({
      instanceId: i.id,
      reason: `host ${hostId} returned: this fleet instance was lost with it and replaced elsewhere; despawned`,
    }));
}
