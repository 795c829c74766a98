// Reconciliation, pure: compares one stored instance with what its host's
// agent observed, and decides. It never recreates or adopts a container.

import type { DesiredState } from './actions.js';
import type { HostStatus, InstanceState } from './states.js';

export interface StoredInstance {
  id: string;
  state: InstanceState;
  desiredState: DesiredState;
  stateChangedAt: number;
  /** The labels EnderCloud put on the container (ownership ones, or the instance's own labels). */
  expectedLabels: Record<string, string>;
  /** The image the current container was created from; a different one means it was replaced behind our back. */
  expectedImage?: string;
  /** False when no container was ever created for it (a failed create); undefined = unknown. */
  containerCreated?: boolean;
}

export interface ObservedContainer {
  status: 'created' | 'running' | 'paused' | 'restarting' | 'exited' | 'dead';
  labels: Record<string, string>;
  exitCode?: number | null;
  oomKilled?: boolean;
  /** The image reference the container runs, when the agent reports it. */
  image?: string;
}

export interface ReconcileOptions {
  now: number;
  /** How long a container may stay missing (`unknown`) before an operator is asked to act. */
  unknownGraceMs: number;
}

export const DEFAULT_UNKNOWN_GRACE_MS = 10 * 60_000;

export type ReconcileDecision =
  | { action: 'none'; reason: string }
  | { action: 'set_state'; to: InstanceState; event: string; reason: string }
  /** Keep waiting for readiness (setting `to` first when given). */
  | { action: 'await_readiness'; to?: InstanceState; reason: string }
  /** A durable command owns this state: let it resume, do not interfere. */
  | { action: 'await_command'; reason: string }
  /** Unexpected exit: record it in the crash-loop breaker and apply shouldAutoRestart. */
  | { action: 'handle_crash'; exitCode: number | null; oomKilled: boolean; reason: string }
  /**
   * Bring Docker back to the desired state. Without `drift`, with an ordinary
   * action. With `drift`, the stored state already claims the result (a stopped
   * instance whose container was started outside EnderCloud): the action would
   * be a no-op or refused, so the supervisor acts on the container directly and
   * records a history entry saying so.
   */
  | { action: 'start' | 'stop' | 'pause' | 'resume'; reason: string; drift?: true };

/**
 * States in which the instance's container must exist on its host: a container
 * missing from a recovering host's inventory makes such an instance `unknown`
 * (installing and deleting belong to their command; error, unknown and
 * intervention_required already say something is wrong).
 */
export const CONTAINER_EXPECTED: readonly InstanceState[] = [
  'stopped',
  'starting',
  'online',
  'degraded',
  'stopping',
  'pausing',
  'paused',
  'backup',
  'restore',
  'update',
];

// Running states whose container may be thawed directly when it was paused outside EnderCloud.
const DRIFT_RESUMABLE: readonly InstanceState[] = ['starting', 'online', 'degraded'];

// States whose in-flight command owns the container (it may be absent or changing on purpose).
const COMMAND_OWNED: readonly InstanceState[] = ['installing', 'backup', 'restore', 'update', 'deleting', 'archiving'];

/** `name` and `name:latest` are the same reference. */
function normaliseImage(image: string): string {
  if (image.includes('@')) return image;
  return image.slice(image.lastIndexOf('/') + 1).includes(':') ? image : `${image}:latest`;
}

function alteredLabels(expected: Record<string, string>, observed: Record<string, string>): string[] {
  return Object.keys(expected).filter((k) => observed[k] !== expected[k]);
}

/**
 * One instance. `observed` is null when the host's inventory has no managed
 * container for it. Hosts that are OFFLINE give no trustworthy inventory.
 */
export function reconcileInstance(
  stored: StoredInstance,
  observed: ObservedContainer | null,
  hostStatus: HostStatus,
  options: ReconcileOptions,
): ReconcileDecision {
  if (hostStatus === 'OFFLINE') return { action: 'none', reason: 'host offline: no inventory to compare with (router shows Stale)' };
  const { state, desiredState: desired } = stored;
  if (state === 'intervention_required') return { action: 'none', reason: 'waiting for an operator' };
  if (COMMAND_OWNED.includes(state)) return { action: 'await_command', reason: `the ${state} command owns the container` };

  if (state === 'archived') {
    if (observed === null) return { action: 'none', reason: 'archived: no container, the world is kept on its host' };
    return {
      action: 'set_state',
      to: 'intervention_required',
      event: 'require_intervention',
      reason: 'a container exists for an archived instance; not adopted',
    };
  }
  if (observed === null) {
    if (state === 'draft') return { action: 'none', reason: 'a draft has no container yet' };
    // A failed create (unpullable image, no room) leaves no container; its error and the agent's reason stay.
    if (state === 'error' && stored.containerCreated === false)
      return { action: 'none', reason: 'error is sticky; there is no container (a failed create leaves none)' };
    if (state === 'unknown') {
      if (options.now - stored.stateChangedAt >= options.unknownGraceMs) {
        return {
          action: 'set_state',
          to: 'intervention_required',
          event: 'require_intervention',
          reason: `container still missing after ${options.unknownGraceMs} ms; an operator must decide (it is never recreated automatically)`,
        };
      }
      return { action: 'none', reason: 'container still missing' };
    }
    return {
      action: 'set_state',
      to: 'unknown',
      event: 'lose_container',
      reason: 'managed container missing from the host inventory; not recreated because data safety is uncertain',
    };
  }

  if (state === 'draft') {
    return {
      action: 'set_state',
      to: 'intervention_required',
      event: 'require_intervention',
      reason: 'a container exists for an instance that was never installed',
    };
  }
  const altered = alteredLabels(stored.expectedLabels, observed.labels);
  if (altered.length > 0) {
    return {
      action: 'set_state',
      to: 'intervention_required',
      event: 'require_intervention',
      reason: `managed container labels altered (${altered.join(', ')}); not adopted`,
    };
  }
  if (
    stored.expectedImage !== undefined &&
    observed.image !== undefined &&
    normaliseImage(observed.image) !== normaliseImage(stored.expectedImage)
  ) {
    return {
      action: 'set_state',
      to: 'intervention_required',
      event: 'require_intervention',
      reason: `managed container runs image ${observed.image}, not ${stored.expectedImage}; not adopted`,
    };
  }
  const exit = { exitCode: observed.exitCode ?? null, oomKilled: observed.oomKilled ?? false };
  // Docker's restart policy is `no`, so restarting/dead mean the process is gone.
  const status = observed.status === 'restarting' || observed.status === 'dead' ? 'exited' : observed.status;

  if (state === 'unknown') {
    // The container came back (host returned, engine restarted): re-verify, never assume online.
    if (status === 'running')
      return { action: 'await_readiness', to: 'starting', reason: 'container reappeared running; verifying readiness' };
    if (status === 'paused')
      return { action: 'set_state', to: 'intervention_required', event: 'require_intervention', reason: 'container reappeared paused' };
    return { action: 'set_state', to: 'stopped', event: 'observed_stopped', reason: 'container reappeared stopped' };
  }
  if (state === 'error') return { action: 'none', reason: 'error is sticky until an admin resets or starts it' };

  switch (status) {
    case 'running':
      return reconcileRunning(state, desired);
    case 'paused':
      if (desired === 'paused') {
        if (state === 'paused') return { action: 'none', reason: 'paused as desired' };
        if (state === 'pausing') return { action: 'set_state', to: 'paused', event: 'paused', reason: 'pause completed' };
        return { action: 'pause', reason: `container already paused while ${state}; completing the pause` };
      }
      if (desired === 'running') {
        if (DRIFT_RESUMABLE.includes(state))
          return { action: 'resume', drift: true, reason: `container paused outside EnderCloud while ${state}; resuming it` };
        return { action: 'resume', reason: 'desired running but the container is paused' };
      }
      // A frozen server cannot save its world on a graceful stop, and killing it could lose data: an operator decides.
      if (state === 'stopped')
        return {
          action: 'set_state',
          to: 'intervention_required',
          event: 'require_intervention',
          reason:
            'observed: the container of a stopped instance is paused (changed outside EnderCloud); not stopped automatically, since a frozen server cannot save its world',
        };
      return { action: 'stop', reason: 'desired stopped but the container is paused' };
    default: // created or exited
      return reconcileNotRunning(state, desired, status, exit);
  }
}

function reconcileRunning(state: InstanceState, desired: DesiredState): ReconcileDecision {
  if (desired === 'running') {
    if (state === 'online' || state === 'degraded') return { action: 'none', reason: 'running as desired; probes continue' };
    if (state === 'starting') return { action: 'await_readiness', reason: 'start in progress; continuing readiness' };
    if (state === 'paused') return { action: 'await_readiness', reason: 'resume in progress; continuing the readiness check' };
    if (state === 'stopping') return { action: 'stop', reason: 'restart in progress; finishing its stop first' };
    if (state === 'pausing')
      return {
        action: 'set_state',
        to: 'online',
        event: 'pause_aborted',
        reason: 'pause abandoned; desired running and the container runs',
      };
    return { action: 'await_readiness', to: 'starting', reason: `container running while ${state}; verifying readiness` };
  }
  if (desired === 'paused') {
    if (state === 'pausing' || state === 'online') return { action: 'pause', reason: 'desired paused; pausing' };
    if (state === 'paused')
      return { action: 'pause', drift: true, reason: 'container unpaused outside EnderCloud while paused; pausing it again' };
    return { action: 'pause', reason: `desired paused but running while ${state}` };
  }
  // Desired stopped (or deleted): started behind EnderCloud's back, or a stop still in flight.
  // A graceful stop saves the world, so enforcing the intent is safe.
  if (state === 'stopping') return { action: 'stop', reason: 'stop in progress; continuing' };
  if (state === 'stopped')
    return {
      action: 'stop',
      drift: true,
      reason: `container started outside EnderCloud while stopped (desired ${desired}); stopping it gracefully again`,
    };
  return { action: 'stop', reason: `desired ${desired} but the container is running; stopping gracefully` };
}

function reconcileNotRunning(
  state: InstanceState,
  desired: DesiredState,
  status: 'created' | 'exited',
  exit: { exitCode: number | null; oomKilled: boolean },
): ReconcileDecision {
  const running = ['starting', 'online', 'degraded', 'pausing', 'paused'].includes(state);
  if (desired === 'running' || desired === 'paused') {
    if (status === 'created') return { action: 'start', reason: 'container created but never started; continuing the start' };
    if (running)
      return {
        action: 'handle_crash',
        ...exit,
        reason: `container exited unexpectedly (code ${exit.exitCode ?? 'unknown'}${exit.oomKilled ? ', OOM killed' : ''})`,
      };
    if (state === 'stopping') return { action: 'set_state', to: 'stopped', event: 'exited', reason: 'stop completed' };
    return { action: 'start', reason: 'desired running; start (subject to the crash-loop backoff)' };
  }
  if (state === 'stopped') return { action: 'none', reason: 'stopped as desired' };
  return { action: 'set_state', to: 'stopped', event: 'exited', reason: `container ${status}; desired ${desired}` };
}

export interface HostInventoryEntry extends ObservedContainer {
  /** The `orchestrator.instance` label value. */
  instanceId: string;
}

/**
 * A whole host: one decision per stored instance placed there. Containers
 * that match no stored instance are ignored here (host recovery lists them as
 * unclaimed; unknown Docker containers are never touched).
 */
export function reconcileHost(
  stored: readonly StoredInstance[],
  inventory: readonly HostInventoryEntry[],
  hostStatus: HostStatus,
  options: ReconcileOptions,
): {
  decisions: { instanceId: string; decision: ReconcileDecision }[];
  ignored: string[];
} {
  const byId = new Map(inventory.map((c) => [c.instanceId, c]));
  const known = new Set(stored.map((s) => s.id));
  return {
    decisions: stored.map((s) => ({ instanceId: s.id, decision: reconcileInstance(s, byId.get(s.id) ?? null, hostStatus, options) })),
    ignored: inventory.filter((c) => !known.has(c.instanceId)).map((c) => c.instanceId),
  };
}
