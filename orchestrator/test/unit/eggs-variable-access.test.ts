import { describe, expect, it } from 'vitest';
import type { TemplateSpec } from '../../src/domain/template.js';
import { assertVariablesSettable } from '../../src/eggs/variable-access.js';

const template = { variables: [{ name: 'MOTD', type: 'string' }, { name: 'MAX_PLAYERS', type: 'integer', operatorOnly: true }] } as unknown as TemplateSpec;
const narrow = { name: 'player-ops', scopes: ['instances:write'] };

describe('operator-only variables (egg user_editable: false)', () => {
  it('a narrow token may set the others', () => expect(() => assertVariablesSettable(narrow, template, { MOTD: 'x' })).not.toThrow());
  it('a narrow token may not set an operator-only one', () => {
    expect(() => assertVariablesSettable(narrow, template, { MOTD: 'x', MAX_PLAYERS: 5 })).toThrow(/may not set MAX_PLAYERS: operator-only variable/);
  });
  for (const scope of ['admin', 'manager', 'operator']) {
    it(`${scope} may`, () => expect(() => assertVariablesSettable({ name: 'o', scopes: [scope] }, template, { MAX_PLAYERS: 5 })).not.toThrow());
  }
});
