// Guards the mutually exclusive actions: busy refusals naming the action in
// progress, maintenance with the admin's message, crash-loop/error rules,
// idempotent start/stop, state refusals, and the desired state each records.

import { describe, expect, it } from 'vitest';
import {
  INSTANCE_ACTIONS,
  availableActions,
  checkAction,
  desiredStateFor,
  entryTransitionsAreLegal,
  type ActionContext,
  type ActionInstance,
  type Actor,
  type InstanceAction,
} from '../../src/lifecycle/actions.js';
import type { InstanceState } from '../../src/lifecycle/states.js';

const user: Actor = { kind: 'user', name: 'alice', scopes: ['instances:write'] };
const admin: Actor = { kind: 'user', name: 'root', scopes: ['admin'] };
const manager: Actor = { kind: 'user', name: 'mgr', scopes: ['manager'] };
const system: Actor = { kind: 'system', name: 'crash-restarter', scopes: [] };
const noGlobal: ActionContext = { globalMaintenance: null };

function instance(state: InstanceState, extra: Partial<ActionInstance> = {}): ActionInstance {
  return {
    name: 'survival',
    state,
    desiredState: 'stopped',
    activeAction: null,
    maintenance: null,
    crashLoop: { tripped: false },
    ...extra,
  };
}

type Expect = { noop: string } | { enter: InstanceState | null; desired: string } | { code: string; message?: RegExp };

const cases: [string, ActionInstance, InstanceAction, Actor, ActionContext, Expect][] = [
  [
    'start from stopped enters starting, desired running',
    instance('stopped'),
    'start',
    user,
    noGlobal,
    { enter: 'starting', desired: 'running' },
  ],
  ['start on online is an idempotent no-op', instance('online'), 'start', user, noGlobal, { noop: 'already online' }],
  ['start on starting is an idempotent no-op', instance('starting'), 'start', user, noGlobal, { noop: 'already starting' }],
  [
    'start while a start is in flight is a no-op',
    instance('starting', { activeAction: { kind: 'start' } }),
    'start',
    user,
    noGlobal,
    { noop: 'start already in progress' },
  ],
  [
    'stop while a start is in flight is busy, naming start',
    instance('starting', { activeAction: { kind: 'start', commandId: 'c1' } }),
    'stop',
    user,
    noGlobal,
    { code: 'INSTANCE_BUSY', message: /start is in progress/ },
  ],
  [
    'delete while a backup runs is busy, naming backup',
    instance('backup', { activeAction: { kind: 'backup' } }),
    'delete',
    admin,
    noGlobal,
    { code: 'INSTANCE_BUSY', message: /backup is in progress/ },
  ],
  [
    'a second delete is busy, not a no-op',
    instance('deleting', { activeAction: { kind: 'delete' } }),
    'delete',
    admin,
    noGlobal,
    { code: 'INSTANCE_BUSY' },
  ],
  [
    'instance maintenance refuses a user start with the admin message',
    instance('stopped', { maintenance: { enabled: true, message: 'moving hosts until 17:00' } }),
    'start',
    user,
    noGlobal,
    { code: 'MAINTENANCE', message: /instance survival is in maintenance: moving hosts until 17:00/ },
  ],
  [
    'global maintenance refuses a user start with the admin message',
    instance('stopped'),
    'start',
    user,
    { globalMaintenance: { enabled: true, message: 'upgrade tonight' } },
    { code: 'MAINTENANCE', message: /EnderCloud is in maintenance: upgrade tonight/ },
  ],
  [
    'maintenance refuses an automatic (system) start',
    instance('stopped', { maintenance: { enabled: true, message: 'm' } }),
    'start',
    system,
    noGlobal,
    { code: 'MAINTENANCE' },
  ],
  [
    'maintenance refuses a user resume',
    instance('paused', { maintenance: { enabled: true, message: 'm' } }),
    'resume',
    user,
    noGlobal,
    { code: 'MAINTENANCE' },
  ],
  [
    'maintenance still allows a user stop',
    instance('online', { maintenance: { enabled: true, message: 'm' } }),
    'stop',
    user,
    noGlobal,
    { enter: 'stopping', desired: 'stopped' },
  ],
  [
    'maintenance lets an admin start',
    instance('stopped', { maintenance: { enabled: true, message: 'm' } }),
    'start',
    admin,
    noGlobal,
    { enter: 'starting', desired: 'running' },
  ],
  [
    'maintenance lets a manager start',
    instance('stopped'),
    'start',
    manager,
    { globalMaintenance: { enabled: true, message: 'm' } },
    { enter: 'starting', desired: 'running' },
  ],
  [
    'disabled maintenance does not block',
    instance('stopped', { maintenance: { enabled: false, message: 'old' } }),
    'start',
    user,
    noGlobal,
    { enter: 'starting', desired: 'running' },
  ],
  [
    'tripped crash loop refuses even an admin start',
    instance('error', { crashLoop: { tripped: true } }),
    'start',
    admin,
    noGlobal,
    { code: 'INVALID_TRANSITION', message: /reset-crash-loop/ },
  ],
  [
    'tripped crash loop tells an operator to ask an administrator, never to call reset-crash-loop',
    instance('error', { crashLoop: { tripped: true } }),
    'start',
    user,
    noGlobal,
    { code: 'INVALID_TRANSITION', message: /^(?!.*reset-crash-loop).*ask an administrator \(admin or manager scope\)/ },
  ],
  [
    'error refuses automatic starts after reset',
    instance('error'),
    'start',
    system,
    noGlobal,
    { code: 'INVALID_TRANSITION', message: /automatic starts are disabled/ },
  ],
  ['error refuses an ordinary user start', instance('error'), 'start', user, noGlobal, { code: 'FORBIDDEN' }],
  [
    'error allows an explicit admin start after reset',
    instance('error'),
    'start',
    admin,
    noGlobal,
    { enter: 'starting', desired: 'running' },
  ],
  ['stop on stopped is a no-op', instance('stopped'), 'stop', user, noGlobal, { noop: 'already stopped' }],
  [
    'stop during starting enters stopping',
    instance('starting', { desiredState: 'running' }),
    'stop',
    user,
    noGlobal,
    { enter: 'stopping', desired: 'stopped' },
  ],
  ['stop a paused instance enters stopping', instance('paused'), 'stop', user, noGlobal, { enter: 'stopping', desired: 'stopped' }],
  [
    'restart an online instance stops first, desired running',
    instance('online'),
    'restart',
    user,
    noGlobal,
    { enter: 'stopping', desired: 'running' },
  ],
  ['restart a stopped instance just starts', instance('stopped'), 'restart', user, noGlobal, { enter: 'starting', desired: 'running' }],
  [
    'pause an online instance',
    instance('online', { desiredState: 'running' }),
    'pause',
    system,
    noGlobal,
    { enter: 'pausing', desired: 'paused' },
  ],
  [
    'pause a degraded instance is refused',
    instance('degraded'),
    'pause',
    user,
    noGlobal,
    { code: 'INVALID_TRANSITION', message: /cannot pause instance survival while it is degraded/ },
  ],
  ['pause on paused is a no-op', instance('paused'), 'pause', system, noGlobal, { noop: 'already paused' }],
  [
    'resume keeps paused until the readiness check passes',
    instance('paused', { desiredState: 'paused' }),
    'resume',
    system,
    noGlobal,
    { enter: null, desired: 'running' },
  ],
  ['resume a stopped instance is refused (use start)', instance('stopped'), 'resume', user, noGlobal, { code: 'INVALID_TRANSITION' }],
  [
    'update keeps the prior intent',
    instance('online', { desiredState: 'running' }),
    'update',
    admin,
    noGlobal,
    { enter: 'update', desired: 'running' },
  ],
  [
    'apply-settings on a stopped instance keeps it stopped',
    instance('stopped'),
    'apply-settings',
    user,
    noGlobal,
    { enter: 'update', desired: 'stopped' },
  ],
  [
    'backup an online instance keeps it running',
    instance('online', { desiredState: 'running' }),
    'backup',
    system,
    noGlobal,
    { enter: 'backup', desired: 'running' },
  ],
  ['restore from stopped', instance('stopped'), 'restore', user, noGlobal, { enter: 'restore', desired: 'stopped' }],
  ['restore from error', instance('error'), 'restore', admin, noGlobal, { enter: 'restore', desired: 'stopped' }],
  // The route asks this rule (routes/instance-backups.ts): the agent refuses a restore while the container runs.
  [
    'restore an online instance is refused: stop it first',
    instance('online', { desiredState: 'running' }),
    'restore',
    admin,
    noGlobal,
    {
      code: 'INVALID_TRANSITION',
      message: /cannot restore instance survival while it is online \(allowed from: stopped, error, intervention_required\)/,
    },
  ],
  ['restore a degraded instance is refused', instance('degraded'), 'restore', admin, noGlobal, { code: 'INVALID_TRANSITION' }],
  [
    'restore from intervention_required',
    instance('intervention_required'),
    'restore',
    admin,
    noGlobal,
    { enter: 'restore', desired: 'stopped' },
  ],
  ['delete an online instance', instance('online'), 'delete', admin, noGlobal, { enter: 'deleting', desired: 'deleted' }],
  ['delete during installing is refused', instance('installing'), 'delete', admin, noGlobal, { code: 'INVALID_TRANSITION' }],
  ['start a draft is refused', instance('draft'), 'start', user, noGlobal, { code: 'INVALID_TRANSITION', message: /while it is draft/ }],
  ['start an unknown instance is refused', instance('unknown'), 'start', admin, noGlobal, { code: 'INVALID_TRANSITION' }],
];

describe('checkAction', () => {
  it.each(cases)('%s', (_name, inst, action, actor, context, expected) => {
    const result = checkAction(inst, action, actor, context);
    if ('code' in expected) {
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.error.code).toBe(expected.code);
      if (expected.message) expect(result.error.message).toMatch(expected.message);
      return;
    }
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    if ('noop' in expected) {
      expect(result.value).toEqual({ kind: 'noop', reason: expected.noop });
    } else {
      expect(result.value).toEqual({ kind: 'dispatch', action, desiredState: expected.desired, enterState: expected.enter });
    }
  });

  it('names the action in progress in the busy error details', () => {
    const result = checkAction(instance('online', { activeAction: { kind: 'update', commandId: 'cmd-9' } }), 'start', admin, noGlobal);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.httpStatus).toBe(409);
      expect(result.error.details).toEqual({ inProgress: 'update', commandId: 'cmd-9', requested: 'start' });
    }
  });

  it('enters only states the transition table allows', () => {
    expect(entryTransitionsAreLegal()).toBe(true);
  });

  it('derives the desired state per action', () => {
    const expected: Record<InstanceAction, string | null> = {
      start: 'running',
      stop: 'stopped',
      restart: 'running',
      pause: 'paused',
      resume: 'running',
      update: null,
      delete: 'deleted',
      'apply-settings': null,
      backup: null,
      restore: null,
      archive: 'stopped',
      despawn: 'deleted',
      reinstall: null,
    };
    for (const action of INSTANCE_ACTIONS) expect(desiredStateFor(action)).toBe(expected[action]);
  });
});

// What the instance view offers (`actions`): exactly the power actions checkAction dispatches now.
const offered: [string, ActionInstance, Actor, ActionContext, string[]][] = [
  ['stopped: start and restart', instance('stopped'), user, noGlobal, ['start', 'restart']],
  [
    'online: stop, restart, pause (start is a no-op there)',
    instance('online', { desiredState: 'running' }),
    user,
    noGlobal,
    ['stop', 'restart', 'pause'],
  ],
  ['degraded: stop and restart, no pause', instance('degraded'), user, noGlobal, ['stop', 'restart']],
  ['paused: stop and resume only', instance('paused'), user, noGlobal, ['stop', 'resume']],
  ['starting without an action in flight: stop and restart', instance('starting'), user, noGlobal, ['stop', 'restart']],
  [
    'starting while its start runs: nothing (busy or already in progress)',
    instance('starting', { activeAction: { kind: 'start' } }),
    user,
    noGlobal,
    [],
  ],
  ['stopping: nothing', instance('stopping', { activeAction: { kind: 'stop' } }), user, noGlobal, []],
  ['installing: nothing', instance('installing'), admin, noGlobal, []],
  ['draft: nothing', instance('draft'), admin, noGlobal, []],
  ['archived: start (re-creates it)', instance('archived'), user, noGlobal, ['start']],
  ['error, for an operator: nothing (starting it needs admin or manager)', instance('error'), user, noGlobal, []],
  ['error, for a manager: start and restart', instance('error'), manager, noGlobal, ['start', 'restart']],
  [
    'error after a tripped crash loop: nothing, even for an admin',
    instance('error', { crashLoop: { tripped: true } }),
    admin,
    noGlobal,
    [],
  ],
  [
    'maintenance, for an operator: only stop',
    instance('online', { maintenance: { enabled: true, message: 'm' } }),
    user,
    noGlobal,
    ['stop'],
  ],
  [
    'global maintenance, for an admin: everything the state allows',
    instance('online'),
    admin,
    { globalMaintenance: { enabled: true, message: 'm' } },
    ['stop', 'restart', 'pause'],
  ],
];

describe('availableActions', () => {
  it.each(offered)('%s', (_name, inst, actor, context, expected) => {
    expect(availableActions(inst, actor, context)).toEqual(expected);
  });
});
