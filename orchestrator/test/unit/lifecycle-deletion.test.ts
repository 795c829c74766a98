// Guards deletion scopes: defaults, typed-name confirmation for player data and
// backups, audit flag, ordered steps, and path checks that never let a
// technical deletion reach player data or escape the instance root.

import { describe, expect, it } from 'vitest';
import { planDeletion, validateRelativePath, type DeletionRequest } from '../../src/lifecycle/deletion.js';
import type { InstanceState } from '../../src/lifecycle/states.js';

const paths = { playerData: ['world', 'world_nether', 'usercache.json'], technical: ['logs', 'cache', 'libraries/'] };
const inst = (state: InstanceState = 'stopped') => ({ name: 'survival', state });

describe('planDeletion', () => {
  it.each([
    [
      'defaults to container + technical, not audited',
      inst(),
      {},
      { scopes: ['container', 'technical'], audited: false, retained: ['player_data', 'backups'] },
      ['remove_container', 'delete_paths', 'forget_instance'],
    ],
    [
      'container only',
      inst(),
      { scopes: ['container'] },
      { scopes: ['container'], audited: false },
      ['remove_container', 'forget_instance'],
    ],
    [
      'technical implies container',
      inst(),
      { scopes: ['technical'] },
      { scopes: ['container', 'technical'] },
      ['remove_container', 'delete_paths', 'forget_instance'],
    ],
    [
      'player_data with the typed name is audited',
      inst(),
      { scopes: ['player_data'], confirm: 'survival' },
      { scopes: ['container', 'player_data'], audited: true, retained: ['technical', 'backups'] },
      ['remove_container', 'delete_paths', 'forget_instance'],
    ],
    [
      'everything deletes the instance root and backups',
      inst(),
      { scopes: ['technical', 'player_data', 'backups'], confirm: 'survival' },
      { audited: true, retained: [] },
      ['remove_container', 'delete_instance_root', 'delete_backups', 'forget_instance'],
    ],
    [
      'an online instance is stopped gracefully first',
      inst('online'),
      {},
      {},
      ['stop_container', 'remove_container', 'delete_paths', 'forget_instance'],
    ],
    [
      'a paused instance is unpaused, then stopped',
      inst('paused'),
      { scopes: ['container'] },
      {},
      ['unpause_container', 'stop_container', 'remove_container', 'forget_instance'],
    ],
  ])('%s', (_name, instance, request: DeletionRequest, expected, steps) => {
    const result = planDeletion(instance, request, paths);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value).toMatchObject(expected);
    expect(result.value.steps.map((s) => s.kind)).toEqual(steps);
  });

  it('lists the normalised relative paths per scope', () => {
    const result = planDeletion(inst(), { scopes: ['technical'] }, paths);
    expect(result.ok && result.value.steps).toContainEqual({
      kind: 'delete_paths',
      scope: 'technical',
      paths: ['logs', 'cache', 'libraries'],
    });
    const player = planDeletion(inst(), { scopes: ['player_data'], confirm: 'survival' }, paths);
    expect(player.ok && player.value.steps).toContainEqual({
      kind: 'delete_paths',
      scope: 'player_data',
      paths: ['world', 'world_nether', 'usercache.json'],
    });
  });

  it.each([
    [{ scopes: ['player_data'] }, 'CONFIRMATION_REQUIRED'],
    [{ scopes: ['backups'], confirm: 'Survival' }, 'CONFIRMATION_REQUIRED'],
    [{ scopes: ['player_data'], confirm: 'other' }, 'CONFIRMATION_REQUIRED'],
    [{ scopes: [] }, 'VALIDATION_FAILED'],
    [{ scopes: ['everything'] }, 'VALIDATION_FAILED'],
    [{ scopes: 'container' }, 'VALIDATION_FAILED'],
  ])('refuses %j with %s', (request, code) => {
    const result = planDeletion(inst(), request, paths);
    expect(result.ok || result.error.code).toBe(code);
  });

  it('names the instance in the confirmation error', () => {
    const result = planDeletion(inst(), { scopes: ['backups'] }, paths);
    expect(result.ok || result.error.message).toMatch(/confirm" equal to the instance name "survival"/);
  });

  it('refuses a technical path that contains player data unless player_data is deleted too', () => {
    const overlapping = { playerData: ['data/world'], technical: ['data'] };
    const result = planDeletion(inst(), { scopes: ['technical'] }, overlapping);
    expect(result.ok || result.error.code).toBe('UNSAFE_PATH');
    expect(planDeletion(inst(), { scopes: ['technical', 'player_data'], confirm: 'survival' }, overlapping).ok).toBe(true);
  });

  it('refuses unsafe template paths', () => {
    const result = planDeletion(inst(), {}, { playerData: ['world'], technical: ['../other-instance'] });
    expect(result.ok || result.error.code).toBe('UNSAFE_PATH');
  });
});

describe('validateRelativePath', () => {
  it.each([
    ['world', 'world'],
    ['./world', 'world'],
    ['plugins/x/data/', 'plugins/x/data'],
    ['a.b', 'a.b'],
  ])('accepts %j as %j', (input, out) => {
    const result = validateRelativePath(input, 'p');
    expect(result.ok && result.value).toBe(out);
  });
  it.each(['', '/etc', '..', 'a/../b', 'a//b', 'a/./b', '.', './', 'C:/x', 'a\\b', 'a\0b', 7])('refuses %j', (input) => {
    const result = validateRelativePath(input, 'p');
    expect(result.ok || result.error.code).toBe('UNSAFE_PATH');
  });
});
