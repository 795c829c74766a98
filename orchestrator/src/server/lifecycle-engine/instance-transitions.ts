// The one place that moves an instance between lifecycle states (a lint rule
// keeps every other module off store.instances.transition): checks the move
// against the pure transition table, records the event in the history entry
// and applies a patch in the same transaction.

import type { Instance, InstanceState, JsonObject } from '../../domain/index.js';
import { assertTransition } from '../../lifecycle/states.js';
import { AppError } from '../../shared/errors.js';
import type { InstancePatch, Store } from '../../store/store.js';

/** Where each lifecycle transition is logged: one info line (a Logger fits). */
export interface TransitionLog {
  info(fields: Record<string, unknown>, message: string): void;
}

// Injected once by the composition root (setTransitionLog); none by default, so
// pure tests and tools stay quiet. A module-level sink keeps moveInstance the one
// place every transition passes, without threading a logger through each caller.
let transitionLog: TransitionLog | null = null;

/** Installs (or, with null, removes) the sink that logs every transition moveInstance makes. */
export function setTransitionLog(log: TransitionLog | null): void {
  transitionLog = log;
}

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
    throw new AppError('INVALID_TRANSITION', `instance ${instance.name}: ${(err as Error).message} (${o.reason})`, { details: { from: instance.state, to } });
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
  if (moved) {
    transitionLog?.info({
      instanceId: instance.id, instance: instance.name, from: instance.state, to, event, reason: o.reason,
      actor: o.actor ?? 'system', ...(o.commandId ? { commandId: o.commandId } : {}),
    }, `instance ${instance.name}: ${instance.state} → ${to} (${o.reason})`);
  }
  return moved;
}
