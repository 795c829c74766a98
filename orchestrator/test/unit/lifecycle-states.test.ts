// Guards the lifecycle transition table: every one of the 18×18 (from, to)
// pairs is checked against the expected matrix written out by hand below.

import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/shared/errors.js';
import {
  INSTANCE_STATES,
  STABLE_STATES,
  TRANSITIONAL_STATES,
  TRANSITIONS,
  assertTransition,
  registryStatus,
  transitionEvent,
  type HostStatus,
  type InstanceState,
} from '../../src/lifecycle/states.js';

// Columns, in this order: draft installing stopped starting online degraded stopping
// pausing paused backup restore update error unknown intervention_required deleting
// archiving archived (the archive idle tier, docs/provisioning.md; stopped → installing and
// installing → starting are the egg reinstall).
// 'x' = allowed, '.' = refused. Written from docs/lifecycle.md "Transition table", not from the code.
const EXPECTED: Record<InstanceState, string> = {
  draft: '. x . . . . . . . . . . . . x x . .',
  installing: '. . x x . . . . . . . . x x x . . .',
  stopped: '. x . x . . . . . x x x x x x x x .',
  starting: '. . x . x x x . . . . . x x x . . .',
  online: '. . x . . x x x . x x x x x x x x .',
  degraded: '. . x . x . x . . x x x x x x x x .',
  stopping: '. . x . . . . . . . . . x x x . . .',
  pausing: '. . x . x . . . x . . . x x x . . .',
  paused: '. . x . x x x . . . . . x x x x x .',
  backup: '. . x . x x x . . . . . x x x . . .',
  restore: '. . x x . . . . . . . . x x x . . .',
  update: '. . x x . . . . . . . . x x x . . .',
  error: '. x x x . . . . . . x . . x x x . .',
  unknown: '. . x x . . . . . . . . x . x x . .',
  intervention_required: '. . x . . . . . . . x . x x . x . .',
  deleting: '. . . . . . . . . . . . x x x . . .',
  archiving: '. . x x x . . . . . . . x x x . . x',
  archived: '. x . . . . . . . . . . x x x x . .',
};

const COLUMNS: InstanceState[] = [
  'draft',
  'installing',
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
  'error',
  'unknown',
  'intervention_required',
  'deleting',
  'archiving',
  'archived',
];

const pairs: [InstanceState, InstanceState, boolean][] = [];
for (const from of COLUMNS) {
  const cells = EXPECTED[from].split(' ');
  COLUMNS.forEach((to, i) => pairs.push([from, to, cells[i] === 'x']));
}

describe('lifecycle transition table', () => {
  it('has exactly the 16 user-visible lifecycle states plus the warm-sleep pair and the archive pair', () => {
    expect([...INSTANCE_STATES].sort()).toEqual([...COLUMNS].sort());
    expect(pairs).toHaveLength(324);
  });

  it.each(pairs)('%s → %s allowed=%s', (from, to, allowed) => {
    expect(transitionEvent(from, to) !== undefined).toBe(allowed);
    if (allowed) {
      expect(assertTransition(from, to)).toMatch(/^[a-z_]+$/);
    } else {
      expect(() => assertTransition(from, to)).toThrow(AppError);
    }
  });

  it('names both states in INVALID_TRANSITION', () => {
    let error: unknown;
    try {
      assertTransition('stopped', 'online');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('INVALID_TRANSITION');
    expect((error as AppError).message).toContain('from stopped to online');
    expect((error as AppError).httpStatus).toBe(409);
  });

  it('gives every allowed transition a triggering event and no duplicate targets', () => {
    for (const from of COLUMNS) {
      const targets = TRANSITIONS[from].map((t) => t.to);
      expect(new Set(targets).size).toBe(targets.length);
      for (const t of TRANSITIONS[from]) expect(t.event.length).toBeGreaterThan(0);
    }
    expect(transitionEvent('starting', 'online')).toBe('ready');
    expect(transitionEvent('starting', 'degraded')).toBe('startup_timeout');
    expect(transitionEvent('paused', 'online')).toBe('resumed');
  });

  it('partitions the states into stable and transitional', () => {
    expect([...STABLE_STATES, ...TRANSITIONAL_STATES].sort()).toEqual([...COLUMNS].sort());
    expect(STABLE_STATES.filter((s) => TRANSITIONAL_STATES.includes(s))).toEqual([]);
  });

  it('never lets a transitional state stay without an exit', () => {
    for (const s of TRANSITIONAL_STATES) expect(TRANSITIONS[s].length).toBeGreaterThan(0);
  });
});

describe('registryStatus', () => {
  const cases: [InstanceState, HostStatus | null, string | null][] = [
    ['online', 'ONLINE', 'Running'],
    ['starting', 'ONLINE', 'Starting'],
    ['installing', 'ONLINE', 'Starting'],
    ['paused', 'ONLINE', 'Paused'],
    ['pausing', 'ONLINE', 'Paused'],
    ['stopped', 'ONLINE', 'Stopped'],
    ['stopping', 'ONLINE', 'Stopped'],
    ['backup', 'ONLINE', 'Starting'],
    ['restore', 'ONLINE', 'Starting'],
    ['update', 'ONLINE', 'Starting'],
    ['degraded', 'ONLINE', 'Stale'],
    ['error', 'ONLINE', 'Stale'],
    ['unknown', 'ONLINE', 'Stale'],
    ['intervention_required', 'ONLINE', 'Stale'],
    ['draft', 'ONLINE', null],
    ['deleting', 'ONLINE', null],
    ['online', 'MAINTENANCE', 'Running'],
    ['paused', 'MAINTENANCE', 'Paused'],
    ['online', 'OFFLINE', 'Stale'],
    ['paused', 'OFFLINE', 'Stale'],
    ['stopped', 'RECOVERING', 'Stale'],
    ['online', null, 'Stale'],
    ['draft', null, null],
  ];
  it.each(cases)('%s on a %s host → %s', (state, host, expected) => {
    expect(registryStatus(state, host)).toBe(expected);
  });
});
