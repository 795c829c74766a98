// What a finished create command does to its instance: record the endpoint and
// move installing → stopped (→ starting). Guarded by `from`, so applying it twice
// (a re-dispatch after a crash) changes nothing the second time.

import type { Command, Host, Instance, ObservedState } from '../../domain/index.js';
import type { Store } from '../../store/store.js';
import type { AgentInstanceEndpoint } from '../agent-client.js';

const CONTAINER_STATES: readonly ObservedState['container'][] = ['absent', 'created', 'running', 'paused', 'restarting', 'exited', 'dead', 'unknown'];

function observedOf(state: string, now: number): ObservedState {
  const container = (CONTAINER_STATES as readonly string[]).includes(state) ? (state as ObservedState['container']) : 'unknown';
  return { container, observedAt: now };
}

export async function applyCreateSuccess(store: Store, cmd: Command, host: Host, res: AgentInstanceEndpoint, start: boolean, now: number, note = ''): Promise<Instance | undefined> {
  const id = cmd.instanceId as string;
  return store.transaction(async (tx) => {
    const current = await tx.instances.get(id);
    if (!current) return undefined;
    await tx.instances.update(id, {
      hostPort: res.hostPort,
      endpoint: res.hostPort === null ? null : { host: host.gameAddress, port: res.hostPort },
      observed: observedOf(res.state, now),
    }, { now });
    const stopped = await tx.instances.transition(id, 'stopped', { now, from: ['installing'], reason: `container ${res.containerName} created${note}`, actor: 'system', commandId: cmd.id });
    if (!stopped || !start) return tx.instances.get(id);
    return tx.instances.transition(id, 'starting', { now, from: ['stopped'], reason: 'container started after creation', actor: 'system', commandId: cmd.id });
  });
}

/** A create that failed for good leaves the instance in `error`; its memory stays reserved until deletion. */
export async function applyCreateFailure(store: Store, cmd: Command, message: string, now: number): Promise<void> {
  await store.instances.transition(cmd.instanceId as string, 'error', { now, from: ['installing'], reason: `create failed: ${message}`.slice(0, 1000), actor: 'system', commandId: cmd.id });
}
