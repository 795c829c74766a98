// Mutually exclusive instance actions: whether one may run now (busy,
// maintenance, crash loop, state), and the desired state and first state it sets.

import { INSTANCE_ACTIONS, type DesiredState, type InstanceAction } from '../domain/index.js';
import { AppError } from '../shared/errors.js';
import { fail, ok, type Checked } from './result.js';
import { TRANSITIONS, type InstanceState } from './states.js';

export { INSTANCE_ACTIONS, type DesiredState, type InstanceAction } from '../domain/index.js';

/** Scopes that keep access during maintenance and may start an instance in error. */
export const PRIVILEGED_SCOPES: readonly string[] = ['admin', 'manager'];

export interface Actor {
  /** `user`: an explicit API call; `system`: scheduler, crash restart, router wake, idle policy. */
  kind: 'user' | 'system';
  name: string;
  scopes: readonly string[];
}

export interface Maintenance {
  enabled: boolean;
  message: string;
}

/** What checkAction reads from an instance (structural; the domain type has more). */
export interface ActionInstance {
  name: string;
  state: InstanceState;
  desiredState: DesiredState;
  activeAction: { kind: string; commandId?: string } | null;
  maintenance: Maintenance | null;
  crashLoop: { tripped: boolean };
}

export interface ActionContext {
  globalMaintenance: Maintenance | null;
}

export type ActionPlan =
  | { kind: 'noop'; reason: string }
  | {
      kind: 'dispatch';
      action: InstanceAction;
      desiredState: DesiredState;
      /** State entered when the action is persisted; null = unchanged until it completes (resume). */
      enterState: InstanceState | null;
    };

// The state each action enters from each state it is allowed in. Every pair
// here is also an allowed transition in states.ts (a unit test checks it).
const ENTER: Readonly<Record<InstanceAction, Partial<Record<InstanceState, InstanceState | null>>>> = {
  start: { stopped: 'starting', error: 'starting', archived: 'installing' },
  stop: { starting: 'stopping', online: 'stopping', degraded: 'stopping', paused: 'stopping' },
  restart: { stopped: 'starting', error: 'starting', starting: 'stopping', online: 'stopping', degraded: 'stopping' },
  pause: { online: 'pausing' },
  resume: { paused: null },
  update: { stopped: 'update', online: 'update', degraded: 'update' },
  'apply-settings': { stopped: 'update', online: 'update', degraded: 'update' },
  backup: { stopped: 'backup', online: 'backup', degraded: 'backup' },
  // Never from a running container: the agent refuses a restore while it runs (docs/lifecycle.md, backups and restore).
  restore: { stopped: 'restore', error: 'restore', intervention_required: 'restore' },
  delete: {
    draft: 'deleting',
    stopped: 'deleting',
    online: 'deleting',
    degraded: 'deleting',
    paused: 'deleting',
    error: 'deleting',
    unknown: 'deleting',
    intervention_required: 'deleting',
    archived: 'deleting',
  },
  archive: { online: 'archiving', degraded: 'archiving', paused: 'archiving', stopped: 'archiving' },
  // A running server is stopped first (the runner then enters installing, and starts it again afterwards).
  reinstall: { stopped: 'installing', error: 'installing', online: 'stopping', degraded: 'stopping' },
  // Drains first (the state stays until the deletion at its end).
  despawn: {
    starting: null,
    online: null,
    degraded: null,
    paused: null,
    stopped: null,
    archived: null,
    error: null,
    unknown: null,
    intervention_required: null,
  },
};

// Repeating an action whose effect already holds is a no-op, not an error.
const ALREADY: Readonly<Partial<Record<InstanceAction, Partial<Record<InstanceState, string>>>>> = {
  start: { online: 'already online', starting: 'already starting', degraded: 'already running (degraded); use restart' },
  stop: { stopped: 'already stopped', stopping: 'already stopping' },
  pause: { paused: 'already paused', pausing: 'already pausing' },
  resume: { online: 'already online' },
};

const IDEMPOTENT: readonly InstanceAction[] = ['start', 'stop', 'pause', 'resume'];
// Maintenance blocks everything but a stop for unprivileged actors: a stop only saves and halts.
const ALLOWED_IN_MAINTENANCE: readonly InstanceAction[] = ['stop'];

/** The desired state an action records before dispatch; null keeps the current one. */
export function desiredStateFor(action: InstanceAction): DesiredState | null {
  switch (action) {
    case 'start':
    case 'restart':
    case 'resume':
      return 'running';
    case 'stop':
      return 'stopped';
    case 'pause':
      return 'paused';
    case 'delete':
    case 'despawn':
      return 'deleted';
    case 'archive':
      return 'stopped';
    default:
      // update, apply-settings, backup, restore restore the prior intent when done.
      return null;
  }
}

export function isPrivileged(actor: Actor): boolean {
  return actor.kind === 'user' && actor.scopes.some((s) => PRIVILEGED_SCOPES.includes(s));
}

/**
 * Decides whether `action` may run on `instance` now. Checks, in order:
 * another action in flight (INSTANCE_BUSY, or a no-op for the same idempotent
 * action), maintenance (MAINTENANCE with the administrator's message), the
 * crash-loop/error rules, idempotent no-ops, then the state (INVALID_TRANSITION).
 */
export function checkAction(instance: ActionInstance, action: InstanceAction, actor: Actor, context: ActionContext): Checked<ActionPlan> {
  const active = instance.activeAction;
  if (active) {
    if (active.kind === action && IDEMPOTENT.includes(action)) {
      return ok({ kind: 'noop', reason: `${action} already in progress` });
    }
    return fail(
      new AppError(
        'INSTANCE_BUSY',
        `instance ${instance.name} is busy: ${active.kind} is in progress; try ${action} again when it finishes`,
        {
          details: { inProgress: active.kind, ...(active.commandId ? { commandId: active.commandId } : {}), requested: action },
        },
      ),
    );
  }

  const maintenance = instance.maintenance?.enabled
    ? instance.maintenance
    : context.globalMaintenance?.enabled
      ? context.globalMaintenance
      : null;
  if (maintenance && !isPrivileged(actor) && !ALLOWED_IN_MAINTENANCE.includes(action)) {
    const where = maintenance === instance.maintenance ? `instance ${instance.name} is` : 'EnderCloud is';
    return fail(new AppError('MAINTENANCE', `${where} in maintenance: ${maintenance.message}`, { details: { action } }));
  }

  const startsFromError = (action === 'start' || action === 'restart') && instance.state === 'error';
  if (startsFromError) {
    if (instance.crashLoop.tripped) {
      // Never point a token at an endpoint it cannot call: reset-crash-loop needs admin or manager.
      const next = isPrivileged(actor)
        ? 'reset it (POST /instances/:id/reset-crash-loop) after diagnosis, then start it'
        : 'ask an administrator (admin or manager scope) to reset the crash loop after diagnosis, then start it';
      return fail(
        new AppError('INVALID_TRANSITION', `instance ${instance.name} is in error after a crash loop: ${next}`, {
          details: { from: 'error', action },
        }),
      );
    }
    if (!isPrivileged(actor)) {
      const who = actor.kind === 'system' ? 'automatic starts are disabled' : 'starting it needs the admin or manager scope';
      return fail(
        new AppError(actor.kind === 'system' ? 'INVALID_TRANSITION' : 'FORBIDDEN', `instance ${instance.name} is in error: ${who}`, {
          details: { from: 'error', action },
        }),
      );
    }
  }

  const already = ALREADY[action]?.[instance.state];
  if (already !== undefined) return ok({ kind: 'noop', reason: already });

  const entries = ENTER[action];
  if (!(instance.state in entries)) {
    const allowedFrom = Object.keys(entries).join(', ');
    return fail(
      new AppError(
        'INVALID_TRANSITION',
        `cannot ${action} instance ${instance.name} while it is ${instance.state} (allowed from: ${allowedFrom})`,
        {
          details: { from: instance.state, action },
        },
      ),
    );
  }
  const enterState = entries[instance.state] ?? null;
  return ok({ kind: 'dispatch', action, desiredState: desiredStateFor(action) ?? instance.desiredState, enterState });
}

/** The power actions a user runs by hand (the panel's buttons, `ectl start|stop|…`). */
export const POWER_ACTIONS = ['start', 'stop', 'restart', 'pause', 'resume'] as const satisfies readonly InstanceAction[];
export type PowerAction = (typeof POWER_ACTIONS)[number];

/**
 * The power actions `actor` could run on `instance` now: those checkAction
 * would dispatch (not refuse, and not answer with a no-op because their effect
 * already holds or the same action is in flight). The instance view carries
 * them, so clients draw exactly these buttons instead of a second copy of ENTER.
 */
export function availableActions(instance: ActionInstance, actor: Actor, context: ActionContext): PowerAction[] {
  return POWER_ACTIONS.filter((action) => {
    const plan = checkAction(instance, action, actor, context);
    return plan.ok && plan.value.kind === 'dispatch';
  });
}

/** States whose action in progress stops the container: a kill there ends that stop (server/services/instance-kill.ts). */
export const KILL_ENDS_ACTION_IN: readonly InstanceState[] = ['stopping', 'deleting', 'archiving', 'update'];

/**
 * Whether a kill applies now: a stop would dispatch (it then runs as a stop whose method is
 * SIGKILL), or an action that stops the container is in progress (the kill ends it).
 */
export function killApplies(instance: ActionInstance, actor: Actor, context: ActionContext): boolean {
  if (instance.activeAction) return KILL_ENDS_ACTION_IN.includes(instance.state);
  const plan = checkAction(instance, 'stop', actor, context);
  return plan.ok && plan.value.kind === 'dispatch';
}

/** Sanity helper for tests and docs: every ENTER pair is a legal transition. */
export function entryTransitionsAreLegal(): boolean {
  return INSTANCE_ACTIONS.every((action) =>
    Object.entries(ENTER[action]).every(([from, to]) => to === null || TRANSITIONS[from as InstanceState].some((t) => t.to === to)),
  );
}
