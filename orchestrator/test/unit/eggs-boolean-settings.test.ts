// An egg boolean keeps the egg's own spelling on every path that sets a value:
// creation (creationValues) and the settings PATCH (planSettingsPatch) store
// `1`/`0` for an egg that tests "$BATTLE_EYE" == "1", whatever spelling is given.

import { describe, expect, it } from 'vitest';
import type { Instance } from '../../src/domain/index.js';
import { creationValues } from '../../src/server/services/instance-config.js';
import { planSettingsPatch } from '../../src/server/services/pending-changes.js';
import { instance as fixtureInstance, templateSpec } from '../store/fixtures.js';

const template = templateSpec({
  variables: [
    {
      name: 'BATTLE_EYE',
      env: 'BATTLE_EYE',
      type: 'enum',
      default: '1',
      validation: { values: ['1', '0'] },
      booleanValues: { true: '1', false: '0' },
      apply: 'restart_required',
    },
    {
      name: 'PVP',
      env: 'PVP',
      type: 'enum',
      default: 'true',
      validation: { values: ['true', 'false'] },
      booleanValues: { true: 'true', false: 'false' },
      apply: 'immediate',
    },
  ],
});

describe('creationValues: egg booleans stored as the egg spells them', () => {
  const table: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ['JSON true for a 1/0 egg', { BATTLE_EYE: true }, { BATTLE_EYE: '1' }],
    ['"false" for a 1/0 egg', { BATTLE_EYE: 'false' }, { BATTLE_EYE: '0' }],
    ['"0" for a true/false egg', { PVP: '0' }, { PVP: 'false' }],
    ["the egg's own spelling unchanged", { BATTLE_EYE: '1', PVP: 'true' }, { BATTLE_EYE: '1', PVP: 'true' }],
  ];
  for (const [name, given, stored] of table) it(name, () => expect(creationValues(template, given).settings).toEqual(stored));

  it("refuses a value that is no boolean, naming the egg's values", () => {
    expect(() => creationValues(template, { BATTLE_EYE: 'yes' })).toThrow(/settings\/BATTLE_EYE must be one of 1, 0/);
  });
});

describe('planSettingsPatch: egg booleans stored as the egg spells them', () => {
  const live = (): Instance => ({ ...fixtureInstance('i1', { settings: { BATTLE_EYE: '1', PVP: 'true' } }), version: 1 });
  it('true given for a 1/0 egg equals the applied 1: nothing pending', () => {
    expect(planSettingsPatch(live(), template, { settings: { BATTLE_EYE: true } }, 5).patch.pendingChanges).toEqual([]);
  });
  it('false given for a 1/0 egg is pending as 0', () => {
    expect(planSettingsPatch(live(), template, { settings: { BATTLE_EYE: false } }, 5).patch.pendingChanges).toEqual([
      { key: 'settings.BATTLE_EYE', value: '0', mode: 'restart_required', requestedAt: 5 },
    ]);
  });
  it('0 given for a true/false egg is applied as false', () => {
    const plan = planSettingsPatch(live(), template, { settings: { PVP: 0 } }, 5);
    expect(plan.applied).toEqual(['PVP']);
    expect(plan.patch.settings).toMatchObject({ PVP: 'false' });
  });
});
