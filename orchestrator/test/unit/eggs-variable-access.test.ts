// The one rule every path that sets a variable value calls (create, PATCH settings,
// a group variant's env, ectl apply): operator-only and hidden variables need an
// admin, manager or operator token.

import { describe, expect, it } from 'vitest';
import type { TemplateSpec } from '../../src/domain/template.js';
import { assertVariablesSettable, type SetValues } from '../../src/eggs/variable-access.js';

const template = {
  variables: [
    { name: 'MOTD', type: 'string' },
    { name: 'MAX_PLAYERS', type: 'integer', operatorOnly: true },
    { name: 'DL_TOKEN', env: 'DOWNLOAD_TOKEN', type: 'string', hidden: true },
    { name: 'LICENSE', type: 'string', secret: true, operatorOnly: true },
  ],
} as unknown as TemplateSpec;
const narrow = { name: 'player-ops', scopes: ['read', 'instances:write', 'groups:write'] };

const refused: [string, SetValues, RegExp][] = [
  [
    'an operator-only setting',
    { settings: { MOTD: 'x', MAX_PLAYERS: 5 } },
    /^token player-ops may not set MAX_PLAYERS: operator-only variable of this template \(needs scope admin, manager or operator\)$/,
  ],
  ['a hidden setting (hidden is operator-only too)', { settings: { DL_TOKEN: 'x' } }, /may not set DL_TOKEN: operator-only variable/],
  ['an operator-only secret', { secrets: { LICENSE: 'x' } }, /may not set LICENSE:/],
  [
    'two at once, both named',
    { settings: { MAX_PLAYERS: 5, DL_TOKEN: 'x' } },
    /may not set MAX_PLAYERS, DL_TOKEN: operator-only variables/,
  ],
  ['an env entry by the env name a variable is passed as', { env: { DOWNLOAD_TOKEN: 'x' } }, /may not set DL_TOKEN \(env DOWNLOAD_TOKEN\)/],
  ['an env entry named as the variable', { env: { MAX_PLAYERS: '5' } }, /may not set MAX_PLAYERS:/],
];
const allowed: [string, SetValues][] = [
  ['other settings', { settings: { MOTD: 'x' } }],
  ['nothing', {}],
  ['an env entry of no locked variable (DL_TOKEN is passed as DOWNLOAD_TOKEN)', { env: { DL_TOKEN: 'x', JAVA_OPTS: '-Xmx1G' } }],
];

describe('operator-only and hidden variables (egg user_editable / user_viewable: false)', () => {
  for (const [what, values, message] of refused) {
    it(`a narrow token may not set ${what}`, () => {
      expect(() => assertVariablesSettable(narrow, template, values)).toThrow(message);
      expect(() => assertVariablesSettable(undefined, template, values)).toThrow(/^token anonymous may not set/);
    });
    for (const scope of ['admin', 'manager', 'operator']) {
      it(`${scope} may set ${what}`, () =>
        expect(() => assertVariablesSettable({ name: 'o', scopes: [scope] }, template, values)).not.toThrow());
    }
  }
  for (const [what, values] of allowed) {
    it(`a narrow token may set ${what}`, () => expect(() => assertVariablesSettable(narrow, template, values)).not.toThrow());
  }
  it('the refusal is FORBIDDEN, names the field and carries the variables and the scopes', () => {
    let err: unknown;
    try {
      assertVariablesSettable(narrow, template, { env: { DOWNLOAD_TOKEN: 'x' } }, 'body/variants/0/env');
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringMatching(/^body\/variants\/0\/env: token player-ops/),
      details: { variables: ['DL_TOKEN'], requiredScopes: ['admin', 'manager', 'operator'] },
    });
  });
});
