// The instance lifecycle state machine (docs/lifecycle.md "Transition table", with the warm-sleep pair):
// the user-visible states, the one transition table, and the router's view.

import type { HostStatus, InstanceState } from '../domain/index.js';
import type { RegistryStatus } from '../protocol/registry-contract.js';
import { AppError } from '../shared/errors.js';

// The vocabulary is the domain's; this module owns the rules over it.
export { INSTANCE_STATES, type HostStatus, type InstanceState } from '../domain/index.js';

/** A state nothing is actively changing: it lasts until an action or an observation moves it. */
export const STABLE_STATES: readonly InstanceState[] = [
  'draft',
  'stopped',
  'online',
  'degraded',
  'paused',
  'error',
  'unknown',
  'intervention_required',
  'archived',
];
/** A state owned by one in-flight action or command; it must end in another state. */
export const TRANSITIONAL_STATES: readonly InstanceState[] = [
  'installing',
  'starting',
  'stopping',
  'pausing',
  'backup',
  'restore',
  'update',
  'deleting',
  'archiving',
];

export interface Transition {
  to: InstanceState;
  /** The event that triggers it, as recorded in the instance history. */
  event: string;
}

// "any state -> error | unknown | intervention_required" (docs/lifecycle.md "Transition table"). A draft has
// no container and no operation, so it cannot fail or lose one; it can only be
// flagged for an operator (a managed container shows up for a never-installed instance).
const FAILURES: readonly Transition[] = [
  { to: 'error', event: 'fail' },
  { to: 'unknown', event: 'lose_container' },
  { to: 'intervention_required', event: 'require_intervention' },
];

/** The whole machine: from-state → the states it may move to, each with its event. */
export const TRANSITIONS: Readonly<Record<InstanceState, readonly Transition[]>> = {
  draft: [
    { to: 'installing', event: 'install' },
    { to: 'deleting', event: 'delete' },
    { to: 'intervention_required', event: 'require_intervention' },
  ],
  installing: [{ to: 'stopped', event: 'installed' }, { to: 'starting', event: 'installed_then_start' }, ...FAILURES],
  stopped: [
    { to: 'starting', event: 'start' },
    { to: 'backup', event: 'backup' },
    { to: 'restore', event: 'restore' },
    { to: 'update', event: 'update' },
    { to: 'deleting', event: 'delete' },
    { to: 'archiving', event: 'archive' },
    { to: 'installing', event: 'reinstall' },
    ...FAILURES,
  ],
  starting: [
    { to: 'online', event: 'ready' },
    { to: 'degraded', event: 'startup_timeout' },
    { to: 'stopping', event: 'stop' },
    { to: 'stopped', event: 'exited' },
    ...FAILURES,
  ],
  online: [
    { to: 'stopping', event: 'stop' },
    { to: 'pausing', event: 'pause' },
    { to: 'degraded', event: 'probe_failed' },
    { to: 'stopped', event: 'exited' },
    { to: 'backup', event: 'backup' },
    { to: 'restore', event: 'restore' },
    { to: 'update', event: 'update' },
    { to: 'deleting', event: 'delete' },
    { to: 'archiving', event: 'archive' },
    ...FAILURES,
  ],
  degraded: [
    { to: 'online', event: 'recovered' },
    { to: 'stopping', event: 'stop' },
    { to: 'stopped', event: 'exited' },
    { to: 'backup', event: 'backup' },
    { to: 'restore', event: 'restore' },
    { to: 'update', event: 'update' },
    { to: 'deleting', event: 'delete' },
    { to: 'archiving', event: 'archive' },
    ...FAILURES,
  ],
  stopping: [{ to: 'stopped', event: 'exited' }, ...FAILURES],
  pausing: [{ to: 'paused', event: 'paused' }, { to: 'online', event: 'pause_aborted' }, { to: 'stopped', event: 'exited' }, ...FAILURES],
  // Resume goes straight back to online after a quick readiness check; there
  // is no "resuming" state because an unpause takes milliseconds.
  paused: [
    { to: 'online', event: 'resumed' },
    { to: 'degraded', event: 'resumed_not_ready' },
    { to: 'stopping', event: 'stop' },
    { to: 'stopped', event: 'exited' },
    { to: 'deleting', event: 'delete' },
    { to: 'archiving', event: 'archive' },
    ...FAILURES,
  ],
  backup: [
    { to: 'online', event: 'backup_done' },
    { to: 'degraded', event: 'backup_done' },
    { to: 'stopped', event: 'backup_done' },
    { to: 'stopping', event: 'backup_done_then_stop' },
    ...FAILURES,
  ],
  restore: [{ to: 'stopped', event: 'restore_done' }, { to: 'starting', event: 'restore_done_then_start' }, ...FAILURES],
  update: [{ to: 'stopped', event: 'update_done' }, { to: 'starting', event: 'update_done_then_start' }, ...FAILURES],
  error: [
    { to: 'starting', event: 'admin_start' },
    { to: 'stopped', event: 'reset' },
    { to: 'installing', event: 'reinstall' },
    { to: 'restore', event: 'restore' },
    { to: 'deleting', event: 'delete' },
    { to: 'unknown', event: 'lose_container' },
    { to: 'intervention_required', event: 'require_intervention' },
  ],
  unknown: [
    { to: 'stopped', event: 'observed_stopped' },
    { to: 'starting', event: 'observed_running' },
    { to: 'deleting', event: 'delete' },
    { to: 'error', event: 'fail' },
    { to: 'intervention_required', event: 'require_intervention' },
  ],
  intervention_required: [
    { to: 'stopped', event: 'resolved' },
    { to: 'restore', event: 'restore' },
    { to: 'deleting', event: 'delete' },
    { to: 'error', event: 'fail' },
    { to: 'unknown', event: 'lose_container' },
  ],
  // A finished deletion removes the record; a partial one stays visible.
  deleting: FAILURES,
  // The archive tier: save, stop, final backup, remove the container; the world stays on its host.
  archiving: [
    { to: 'archived', event: 'archived' },
    { to: 'online', event: 'archive_aborted' },
    { to: 'starting', event: 'archive_aborted_restart' },
    { to: 'stopped', event: 'archive_aborted_stopped' },
    ...FAILURES,
  ],
  // No container; a start (or a login) re-creates it over the kept world.
  archived: [{ to: 'installing', event: 'unarchive' }, { to: 'deleting', event: 'delete' }, ...FAILURES],
};

/** The event that moves `from` to `to`, or undefined when the move is not allowed. */
export function transitionEvent(from: InstanceState, to: InstanceState): string | undefined {
  return TRANSITIONS[from].find((t) => t.to === to)?.event;
}

/** Throws INVALID_TRANSITION naming both states and what `from` allows instead. */
export function assertTransition(from: InstanceState, to: InstanceState): string {
  const event = transitionEvent(from, to);
  if (event === undefined) {
    const allowed = TRANSITIONS[from].map((t) => t.to).join(', ');
    throw new AppError('INVALID_TRANSITION', `an instance cannot go from ${from} to ${to} (from ${from} it can go to: ${allowed})`, {
      details: { from, to },
    });
  }
  return event;
}

const REGISTRY_BY_STATE: Readonly<Record<InstanceState, RegistryStatus | null>> = {
  online: 'Running',
  starting: 'Starting',
  installing: 'Starting',
  // The container is being changed: hold new logins, never wake or route into it.
  backup: 'Starting',
  restore: 'Starting',
  update: 'Starting',
  paused: 'Paused',
  pausing: 'Paused',
  stopped: 'Stopped',
  stopping: 'Stopped',
  // Running but not answering its probe, or an operator must act: route around it,
  // and never let the router "wake" it with a start.
  degraded: 'Stale',
  error: 'Stale',
  unknown: 'Stale',
  intervention_required: 'Stale',
  // Nothing to route to: absent from the registry.
  draft: null,
  deleting: null,
  // Asleep for good: a login starts it again (re-created on its host).
  archiving: 'Stopped',
  archived: 'Stopped',
};

/**
 * The router's view. Stale comes from the host: an instance on a host that is
 * not ONLINE or MAINTENANCE (or on no host) cannot be reached or trusted.
 * MAINTENANCE only blocks new placements; its instances keep serving.
 */
export function registryStatus(state: InstanceState, hostStatus: HostStatus | null): RegistryStatus | null {
  const byState = REGISTRY_BY_STATE[state];
  if (byState === null) return null;
  if (hostStatus !== 'ONLINE' && hostStatus !== 'MAINTENANCE') return 'Stale';
  return byState;
}
