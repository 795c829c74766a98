import { describe, expect, it } from 'vitest';
import { parseWakeAccepted } from '../../src/protocol/registry-contract.js';

describe('parseWakeAccepted', () => {
  it('accepts a queued command id', () => expect(parseWakeAccepted({ commandId: 'c-1' })).toEqual({ commandId: 'c-1' }));
  it('accepts null for a no-op wake of an instance that is already running', () =>
    expect(parseWakeAccepted({ commandId: null })).toEqual({ commandId: null }));
  it.each([{}, { commandId: 7 }, { commandId: '' }, null])('refuses %j naming the field', (body) =>
    expect(() => parseWakeAccepted(body)).toThrow(/body/));
});
