// The fleet view of a group for operators and the panel: the buffer target
// and counts, and per instance its class, players, allocation and what it is
// waiting for next ("pauses in 4 min"), from the same pure functions the
// provisioner runs.

import type { Group, JsonObject } from '../../domain/index.js';
import { desiredBuffer, fleetClass, fleetCounts, nextIdleAction } from '../../provisioning/index.js';
import type { Store } from '../../store/store.js';
import { readGroup } from './fleet-view.js';
import { readFleetShort } from './fleet-short.js';

export async function fleetView(store: Store, group: Group, now: number): Promise<JsonObject> {
  const [snap, short] = await Promise.all([readGroup(store, group.id), readFleetShort(store, group.id)]);
  const counts = fleetCounts(snap.fleet);
  const policy = group.scaling;
  const instances = snap.instances.map((instance, n) => {
    const f = snap.fleet[n]!;
    const tiers = instance.fleet?.idleTiers ?? policy?.idleTiers ?? [];
    const clock = instance.fleet?.idle;
    const next = clock && tiers.length > 0 ? nextIdleAction({
      tiers, clock, state: instance.state, allocated: f.allocated, playersOnline: f.playersOnline, lastTierApplied: instance.fleet?.lastTier ?? null,
    }, now) : null;
    const waiting = next && 'wait' in next ? { action: next.wait.action, dueAt: new Date(next.wait.dueAt).toISOString(), inSeconds: Math.max(0, Math.round((next.wait.dueAt - now) / 1000)) } : null;
    return {
      id: instance.id, name: instance.name, state: instance.state, class: fleetClass(f), hostId: instance.hostId,
      allocated: f.allocated, sessionId: instance.sessionId, playersOnline: f.playersOnline, maxPlayers: f.maxPlayers, draining: f.draining === true,
      emptySince: clock?.emptySince ? new Date(clock.emptySince).toISOString() : null,
      next: waiting, idleTiersOverridden: instance.fleet?.idleTiers !== undefined,
    };
  });
  return {
    groupId: group.id,
    kind: group.kind,
    scaling: policy as unknown as JsonObject,
    buffer: { target: policy ? desiredBuffer(policy.buffer, counts.allocated) : 0, ready: counts.ready, starting: counts.starting },
    // Why the fleet stays below its minimum or buffer, as the provisioner last found it (null: it does not).
    short: policy && short ? { reason: short.reason, since: new Date(short.since).toISOString() } : null,
    counts: { ...counts },
    instances,
  };
}
