// Guards reconciliation: missing or altered managed containers are never
// recreated or adopted, starts resume, crashes take the crash path, drift is
// brought back to the desired state, and unknown containers are ignored.

import { describe, expect, it } from 'vitest';
import type { DesiredState } from '../../src/lifecycle/actions.js';
import {
  reconcileHost,
  reconcileInstance,
  type ObservedContainer,
  type ReconcileOptions,
  type StoredInstance,
} from '../../src/lifecycle/reconcile.js';
import { INSTANCE_STATES, transitionEvent, type HostStatus, type InstanceState } from '../../src/lifecycle/states.js';

const labels = { 'orchestrator.managed': 'true', 'orchestrator.instance': 'i1', 'orchestrator.host': 'h1' };
const opts: ReconcileOptions = { now: 1_000_000, unknownGraceMs: 600_000 };
const stored = (state: InstanceState, desiredState: DesiredState, stateChangedAt = 999_000): StoredInstance => ({
  id: 'i1',
  state,
  desiredState,
  stateChangedAt,
  expectedLabels: labels,
});
const seen = (status: ObservedContainer['status'], extra: Partial<ObservedContainer> = {}): ObservedContainer => ({
  status,
  labels,
  ...extra,
});

const cases: [string, StoredInstance, ObservedContainer | null, HostStatus, object][] = [
  ['missing container → unknown, never recreated', stored('online', 'running'), null, 'ONLINE', { action: 'set_state', to: 'unknown' }],
  [
    'missing container of a stopped instance → unknown',
    stored('stopped', 'stopped'),
    null,
    'RECOVERING',
    { action: 'set_state', to: 'unknown' },
  ],
  ['still missing within the grace → stays unknown', stored('unknown', 'running', 900_000), null, 'ONLINE', { action: 'none' }],
  [
    'still missing after the grace → intervention_required',
    stored('unknown', 'running', 100_000),
    null,
    'ONLINE',
    { action: 'set_state', to: 'intervention_required' },
  ],
  [
    'labels altered → intervention_required, not adopted',
    stored('online', 'running'),
    seen('running', { labels: { ...labels, 'orchestrator.instance': 'i2' } }),
    'ONLINE',
    { action: 'set_state', to: 'intervention_required' },
  ],
  [
    'a label removed → intervention_required',
    stored('stopped', 'stopped'),
    seen('exited', { labels: { 'orchestrator.managed': 'true' } }),
    'ONLINE',
    { action: 'set_state', to: 'intervention_required' },
  ],
  [
    'starting with the container running → continue readiness',
    stored('starting', 'running'),
    seen('running'),
    'RECOVERING',
    { action: 'await_readiness' },
  ],
  [
    'starting with the container only created → continue the start',
    stored('starting', 'running'),
    seen('created'),
    'ONLINE',
    { action: 'start' },
  ],
  [
    'online + exited unexpectedly → crash path with exit details',
    stored('online', 'running'),
    seen('exited', { exitCode: 137, oomKilled: true }),
    'ONLINE',
    { action: 'handle_crash', exitCode: 137, oomKilled: true },
  ],
  [
    'starting + exited → crash path',
    stored('starting', 'running'),
    seen('dead', { exitCode: 1 }),
    'ONLINE',
    { action: 'handle_crash', exitCode: 1 },
  ],
  ['online + running → nothing', stored('online', 'running'), seen('running'), 'ONLINE', { action: 'none' }],
  ['degraded + running → nothing (probes continue)', stored('degraded', 'running'), seen('running'), 'MAINTENANCE', { action: 'none' }],
  [
    'stored stopped but running → graceful stop (desired stopped wins)',
    stored('stopped', 'stopped'),
    seen('running'),
    'ONLINE',
    { action: 'stop' },
  ],
  [
    'stored stopped, desired running, running → verify readiness via starting',
    stored('stopped', 'running'),
    seen('running'),
    'ONLINE',
    { action: 'await_readiness', to: 'starting' },
  ],
  [
    'stopping + exited → stopped',
    stored('stopping', 'stopped'),
    seen('exited', { exitCode: 0 }),
    'ONLINE',
    { action: 'set_state', to: 'stopped' },
  ],
  ['stopping + running → keep stopping', stored('stopping', 'stopped'), seen('running'), 'ONLINE', { action: 'stop' }],
  [
    'restart half done (stopping, desired running) → finish the stop',
    stored('stopping', 'running'),
    seen('running'),
    'ONLINE',
    { action: 'stop' },
  ],
  ['stopped + exited as desired → nothing', stored('stopped', 'stopped'), seen('exited'), 'ONLINE', { action: 'none' }],
  [
    'stopped + desired running + exited → start (subject to backoff)',
    stored('stopped', 'running'),
    seen('exited'),
    'ONLINE',
    { action: 'start' },
  ],
  ['pausing + paused → paused', stored('pausing', 'paused'), seen('paused'), 'ONLINE', { action: 'set_state', to: 'paused' }],
  ['paused + paused → nothing', stored('paused', 'paused'), seen('paused'), 'ONLINE', { action: 'none' }],
  [
    'resume in flight (paused, desired running) + running → readiness check',
    stored('paused', 'running'),
    seen('running'),
    'ONLINE',
    { action: 'await_readiness' },
  ],
  [
    'paused + unpaused behind our back, desired paused → pause again',
    stored('paused', 'paused'),
    seen('running'),
    'ONLINE',
    { action: 'pause' },
  ],
  ['online but paused behind our back → resume', stored('online', 'running'), seen('paused'), 'ONLINE', { action: 'resume' }],
  [
    'drift: stopped but started outside EnderCloud → stop directly (drift)',
    stored('stopped', 'stopped'),
    seen('running'),
    'ONLINE',
    { action: 'stop', drift: true },
  ],
  [
    'drift: paused but unpaused outside EnderCloud → pause directly (drift)',
    stored('paused', 'paused'),
    seen('running'),
    'ONLINE',
    { action: 'pause', drift: true },
  ],
  [
    'drift: online but paused outside EnderCloud → resume directly (drift)',
    stored('online', 'running'),
    seen('paused'),
    'ONLINE',
    { action: 'resume', drift: true },
  ],
  [
    'drift: degraded but paused outside → resume directly',
    stored('degraded', 'running'),
    seen('paused'),
    'ONLINE',
    { action: 'resume', drift: true },
  ],
  [
    'drift: stopped but paused outside → intervention_required with the observation',
    stored('stopped', 'stopped'),
    seen('paused'),
    'ONLINE',
    { action: 'set_state', to: 'intervention_required', reason: expect.stringContaining('paused') },
  ],
  [
    'unknown + reappeared running → starting to re-verify',
    stored('unknown', 'running'),
    seen('running'),
    'RECOVERING',
    { action: 'await_readiness', to: 'starting' },
  ],
  ['unknown + reappeared exited → stopped', stored('unknown', 'running'), seen('exited'), 'ONLINE', { action: 'set_state', to: 'stopped' }],
  [
    'failed create: error, no container ever created → stays error (never unknown)',
    { ...stored('error', 'stopped'), containerCreated: false },
    null,
    'ONLINE',
    { action: 'none' },
  ],
  [
    'failed create stays error even long after',
    { ...stored('error', 'running', 0), containerCreated: false },
    null,
    'RECOVERING',
    { action: 'none' },
  ],
  [
    'error whose created container vanished → unknown (it existed once)',
    { ...stored('error', 'stopped'), containerCreated: true },
    null,
    'ONLINE',
    { action: 'set_state', to: 'unknown' },
  ],
  ['error is sticky', stored('error', 'stopped'), seen('running'), 'ONLINE', { action: 'none' }],
  [
    'intervention_required waits for an operator, even when missing',
    stored('intervention_required', 'running'),
    null,
    'ONLINE',
    { action: 'none' },
  ],
  ['update owns a missing container (replacement in flight)', stored('update', 'running'), null, 'ONLINE', { action: 'await_command' }],
  ['installing resumes its command, never creates here', stored('installing', 'stopped'), null, 'ONLINE', { action: 'await_command' }],
  ['deleting resumes its command', stored('deleting', 'deleted'), seen('exited'), 'ONLINE', { action: 'await_command' }],
  ['draft without a container → nothing', stored('draft', 'stopped'), null, 'ONLINE', { action: 'none' }],
  ['offline host → nothing decided', stored('online', 'running'), null, 'OFFLINE', { action: 'none' }],
];

describe('reconcileInstance', () => {
  it.each(cases)('%s', (_name, s, observed, host, expected) => {
    expect(reconcileInstance(s, observed, host, opts)).toMatchObject(expected);
  });

  it('marks only corrections the ordinary actions cannot make as drift', () => {
    expect(reconcileInstance(stored('online', 'paused'), seen('running'), 'ONLINE', opts)).not.toHaveProperty('drift');
    expect(reconcileInstance(stored('paused', 'stopped'), seen('running'), 'ONLINE', opts)).not.toHaveProperty('drift');
    expect(reconcileInstance(stored('paused', 'running'), seen('paused'), 'ONLINE', opts)).not.toHaveProperty('drift');
  });

  it('only ever decides transitions the state table allows', () => {
    const desired: DesiredState[] = ['running', 'stopped', 'paused', 'deleted'];
    const observations: (ObservedContainer | null)[] = [
      null,
      ...(['created', 'running', 'paused', 'restarting', 'exited', 'dead'] as const).map((s) => seen(s)),
      seen('running', { labels: {} }),
    ];
    let checked = 0;
    for (const state of INSTANCE_STATES) {
      for (const d of desired) {
        for (const o of observations) {
          for (const when of [999_000, 0]) {
            const decision = reconcileInstance(stored(state, d, when), o, 'ONLINE', opts);
            if (
              (decision.action === 'set_state' || decision.action === 'await_readiness') &&
              'to' in decision &&
              decision.to !== undefined
            ) {
              expect(
                transitionEvent(state, decision.to) !== undefined,
                `${state} → ${decision.to} (desired ${d}, observed ${o?.status ?? 'missing'})`,
              ).toBe(true);
              checked += 1;
            }
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
  });
});

describe('reconcileHost', () => {
  it('decides per stored instance and ignores unknown containers', () => {
    const result = reconcileHost(
      [stored('online', 'running'), { ...stored('stopped', 'stopped'), id: 'i9', expectedLabels: { 'orchestrator.instance': 'i9' } }],
      [
        { instanceId: 'i1', ...seen('running') },
        { instanceId: 'stranger', status: 'running', labels: { 'orchestrator.managed': 'true' } },
      ],
      'RECOVERING',
      opts,
    );
    expect(result.ignored).toEqual(['stranger']);
    expect(result.decisions).toEqual([
      { instanceId: 'i1', decision: expect.objectContaining({ action: 'none' }) },
      { instanceId: 'i9', decision: expect.objectContaining({ action: 'set_state', to: 'unknown' }) },
    ]);
  });
});
