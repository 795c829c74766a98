// The one place that moves an instance between lifecycle states (a lint rule
// keeps every other module off store.instances.transition): checks the move
// against the pure transition table, records the event in the history entry
// and applies a patch in the same transaction.

import type { Instance, InstanceState, JsonObject } from '../../domain/index.js';
import { assertTransition } from '../../lifecycle/states.js';
import { AppError } from '../../shared/errors.js';
import type { InstancePatch, Store } from '../../store/store.js';

export interface MoveOptions {
  now: number;
  reason: string;
  actor?: string | null;
  commandId?: string | null;
  details?: JsonObject | null;
  patch?: InstancePatch;
}

/**
 * Moves `instance` (as last read) to `to`, guarded by its current state: a
 * concurrent change in between makes it return undefined. Staying in the same
 * state only applies the patch (no history entry).
 */
export async function moveInstance(store: Store, instance: Instance, to: InstanceState, o: MoveOptions): Promise<Instance | undefined> {
  if (instance.state === to) {
    if (!o.patch || Object.keys(o.patch).length === 0) return instance;
    const current = await store.instances.get(instance.id);
    if (!current || current.state !== to) return undefined;
    return store.instances.update(instance.id, o.patch, { now: o.now });
  }
  let event: string;
  try {
    event = assertTransition(instance.state, to);
  } catch (err) {
    throw new AppError('INVALID_TRANSITION', `instance ${instance.name}: ${(err as Error).message} (${o.reason})`, {
      details: { from: instance.state, to },
    });
  }
  const moved = await store.instances.transition(instance.id, to, {
    now: o.now,
    from: [instance.state],
    reason: o.reason.slice(0, 1000),
    actor: o.actor ?? 'system',
    commandId: o.commandId ?? null,
    details: { event, ...(o.details ?? {}) },
    ...(o.patch ? { patch: o.patch } : {}),
  });
  // Each committed transition is logged once by the store adapter the composition root wires (changes/notifying-store.ts).
  return moved;
}
