// What a player hears when a router join can neither find nor spawn a world:
// the refused limit in a player's words (the caps check's own errors as input),
// and the router's `{reason}` in messages.capacity.
import { describe, expect, it } from 'vitest';
import { checkCaps } from '../../src/placement/placement.js';
import { joinRefusalMessage } from '../../src/provisioning/join-refusal.js';
import { DEFAULT_CAPACITY_REASON, fillReason } from '../../src/router/login-runner.js';
import { DEFAULT_MESSAGES } from '../../src/router/config.js';
import type { AppError } from '../../src/shared/errors.js';

/** The error checkCaps (the creator's atomic check) refuses with. */
function capError(...args: Parameters<typeof checkCaps>): AppError {
  const checked = checkCaps(...args);
  if (checked.ok) throw new Error('expected a refusal');
  return checked.error;
}

describe('joinRefusalMessage', () => {
  it.each<[string, { code: string; details?: Record<string, unknown> }, string]>([
    [
      'the group cap, as checkCaps refuses it',
      capError('survival', { maxInstances: 4 }, { group: 4, total: 9 }),
      'survival is full (4 of 4 worlds).',
    ],
    ['a cap of one world', capError('survival', { maxInstances: 1 }, { group: 1, total: 1 }), 'survival is full (1 of 1 world).'],
    ['a cap of zero', capError('survival', { maxInstances: 0 }, { group: 0, total: 0 }), 'survival is full (0 of 0 worlds).'],
    [
      'the system-wide cap',
      capError('survival', { maxTotalInstances: 20 }, { group: 2, total: 20 }),
      'The network is full (20 of 20 worlds).',
    ],
    [
      'the template cap',
      capError('survival', {}, { group: 1, total: 1 }, { name: 'paper', maxInstances: 3, current: 3 }),
      'survival is full (its template paper runs 3 of 3 worlds across all groups).',
    ],
    [
      'a scaling cap named another way, with limit and current',
      { code: 'CAP_REACHED', details: { cap: 'scaling.maxInstances', limit: 5, current: 5 } },
      'survival is full (5 of 5 worlds).',
    ],
    ['a cap without numbers', { code: 'CAP_REACHED' }, 'survival is full.'],
    ['no host has room', { code: 'NO_CAPACITY', details: {} }, 'No host has room for another survival world.'],
    ['anything else', { code: 'INTERNAL' }, 'survival cannot take another world right now.'],
  ])('%s', (_name, refusal, expected) => {
    expect(joinRefusalMessage('survival', refusal)).toBe(expected);
  });
});

describe("messages.capacity's {reason}", () => {
  it.each<[string, string | undefined, string]>([
    [DEFAULT_MESSAGES.capacity, 'survival is full (4 of 4 worlds).', 'survival is full (4 of 4 worlds). Please try again in a minute.'],
    [DEFAULT_MESSAGES.capacity, undefined, `${DEFAULT_CAPACITY_REASON} Please try again in a minute.`],
    ['All arenas busy', 'survival is full (4 of 4 worlds).', 'All arenas busy'],
    ['{reason} / {reason}', 'x.', 'x. / x.'],
  ])('%j with %j', (template, reason, expected) => {
    expect(fillReason(template, reason)).toBe(expected);
  });

  it('the default reads as before when the orchestrator gives no reason', () => {
    expect(fillReason(DEFAULT_MESSAGES.capacity, undefined)).toBe('Every world of this kind is busy. Please try again in a minute.');
  });
});
