// Drift correction: the stored state already claims what the instance should
// be (stopped, paused, online) but Docker shows otherwise because someone
// changed the container outside EnderCloud. The ordinary actions would be a
// no-op or refused there, so the container is brought back directly through the
// host driver and the instance's history says so (docs/lifecycle.md "Drift").

import type { Host, Instance, JsonObject } from '../../domain/index.js';
import { planStop, stopPath } from '../../lifecycle/stop.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { HostDriver } from '../drivers/host-driver.js';
import { templateOf } from '../services/template-of.js';

export interface DriftDecision {
  action: 'start' | 'stop' | 'pause' | 'resume';
  reason: string;
}

export interface DriftDeps {
  store: Store;
  driver: HostDriver;
  clock: Clock;
}

/** Only the three corrections reconcile.ts marks as drift are made here. */
const DRIFT_STATES: Readonly<Record<DriftDecision['action'], readonly string[]>> = {
  stop: ['stopped'],
  pause: ['paused'],
  resume: ['starting', 'online', 'degraded'],
  start: [],
};

/**
 * Corrects one instance and appends the history entry (same state before and
 * after: event `drift_corrected`). Re-reads the instance first and does
 * nothing when it changed meanwhile (an action took over). Returns the entry's details.
 */
export async function correctDrift(deps: DriftDeps, seen: Instance, decision: DriftDecision, host: Host): Promise<JsonObject> {
  const instance = await deps.store.instances.get(seen.id);
  if (!instance || instance.activeAction || instance.state !== seen.state || !DRIFT_STATES[decision.action].includes(instance.state)) {
    return { skipped: 'the instance changed before the correction' };
  }
  const ids = { requestId: `drift-${instance.id}-${deps.clock.now()}` };
  const observed = instance.observed?.container ?? null;
  let details: JsonObject = { event: 'drift_corrected', action: decision.action, observed };
  if (decision.action === 'stop') {
    const template = await templateOf(deps.store, instance);
    const request = planStop(template?.stop ?? { signal: 'SIGTERM', timeoutMs: 30_000 }, instance.secretSettings);
    const res = await deps.driver.stop(host, instance.id, request, ids);
    details = { ...details, path: stopPath(res), killed: res.killed, exitCode: res.exitCode };
  } else if (decision.action === 'pause') {
    await deps.driver.pause(host, instance.id, ids);
  } else if (decision.action === 'resume') {
    await deps.driver.resume(host, instance.id, ids);
  }
  await deps.store.history.append({
    instanceId: instance.id,
    at: deps.clock.now(),
    from: instance.state,
    to: instance.state,
    reason: `drift corrected: ${decision.reason}`,
    actor: 'system',
    commandId: null,
    details,
  });
  return details;
}
