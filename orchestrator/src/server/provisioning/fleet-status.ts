// The fleet view of a group for operators and the panel: the buffer target
// and counts, and per instance its class, players, allocation and what it is
// waiting for next ("pauses in 4 min"), from the same pure functions the
// provisioner runs.

import type { Group, JsonObject } from '../../domain/index.js';
import { desiredBuffer, effectiveIdleTiers, fleetClass, fleetCounts, idleTierText, type IdleTier } from '../../provisioning/index.js';
import type { Store } from '../../store/store.js';
import { idleOutlooks, planGroup, readFleetMemory, readGroup, type GroupSnapshot } from './fleet-view.js';
import { readFleetShort } from './fleet-short.js';

export async function fleetView(store: Store, group: Group, systemTiers: readonly IdleTier[], now: number): Promise<JsonObject> {
  const [snap, short] = await Promise.all([readGroup(store, group.id), readFleetShort(store, group.id)]);
  const counts = fleetCounts(snap.fleet);
  const policy = group.scaling;
  const outlooks = idleOutlooks(group, snap, systemTiers, await heldByFleet(store, group, snap, now), now);
  const instances = snap.instances.map((instance, n) => {
    const f = snap.fleet[n]!;
    const { choice, decision, awakeBecause } = outlooks[n]!;
    const clock = instance.fleet?.idle;
    const next =
      decision === null
        ? null
        : 'wait' in decision
          ? {
              action: decision.wait.action,
              dueAt: new Date(decision.wait.dueAt).toISOString(),
              inSeconds: Math.max(0, Math.round((decision.wait.dueAt - now) / 1000)),
              tier: tierOf(choice.tiers, decision.wait.action),
            }
          : // Due now: the provisioner's next pass (every few seconds) applies it.
            { action: decision.action, dueAt: new Date(now).toISOString(), inSeconds: 0, tier: decision.tier.after };
    return {
      id: instance.id,
      name: instance.name,
      state: instance.state,
      class: fleetClass(f),
      hostId: instance.hostId,
      allocated: f.allocated,
      sessionId: instance.sessionId,
      playersOnline: f.playersOnline,
      maxPlayers: f.maxPlayers,
      draining: f.draining === true,
      emptySince: clock?.emptySince ? new Date(clock.emptySince).toISOString() : null,
      next,
      awakeBecause,
      idleTiers: idleTierText(choice.tiers),
      idleTiersFrom: choice.source,
      idleTiersOverridden: choice.source === 'instance',
    };
  });
  return {
    groupId: group.id,
    kind: group.kind,
    scaling: policy as unknown as JsonObject,
    idleTiers: idleTierText(effectiveIdleTiers(undefined, group.idleTiers, systemTiers).tiers),
    idleTiersFrom: group.idleTiers === undefined ? 'system' : 'group',
    buffer: { target: policy ? desiredBuffer(policy.buffer, counts.allocated) : 0, ready: counts.ready, starting: counts.starting },
    // Why the fleet stays below its minimum or buffer, as the provisioner last found it (null: it does not).
    short: policy && short ? { reason: short.reason, since: new Date(short.since).toISOString() } : null,
    counts: { ...counts },
    instances,
  };
}

const tierOf = (tiers: readonly IdleTier[], action: string): string | null => tiers.find((t) => t.action === action)?.after ?? null;

/** What the fleet keeps awake as its minimum or buffer: the provisioner's own plan over the same snapshot (caps do not change it). */
async function heldByFleet(store: Store, group: Group, snap: GroupSnapshot, now: number): Promise<ReadonlySet<string>> {
  if (!group.scaling) return new Set();
  const unlimited = Number.MAX_SAFE_INTEGER;
  const plan = planGroup(
    { ...group, scaling: group.scaling },
    snap,
    await readFleetMemory(store, group.id),
    { group: unlimited, template: unlimited, global: unlimited },
    now,
  );
  return new Set(plan.hold);
}
