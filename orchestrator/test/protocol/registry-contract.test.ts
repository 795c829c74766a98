import { describe, expect, it } from 'vitest';
import { groupJoinPath, parseGroupJoinAnswer, parseRegistryBackend, parseWakeAccepted } from '../../src/protocol/registry-contract.js';

describe('parseWakeAccepted', () => {
  it('accepts a queued command id', () => expect(parseWakeAccepted({ commandId: 'c-1' })).toEqual({ commandId: 'c-1' }));
  it('accepts null for a no-op wake of an instance that is already running', () =>
    expect(parseWakeAccepted({ commandId: null })).toEqual({ commandId: null }));
  it.each([{}, { commandId: 7 }, { commandId: '' }, null])('refuses %j naming the field', (body) =>
    expect(() => parseWakeAccepted(body)).toThrow(/body/),
  );
});

describe('group joins and Draining', () => {
  it('accepts each join action and a null command id', () => {
    for (const action of ['route', 'wake', 'start', 'spawn'] as const) {
      expect(parseGroupJoinAnswer({ instanceId: 'ev-1', action, commandId: action === 'route' ? null : 'c-1' })).toEqual({
        instanceId: 'ev-1',
        action,
        commandId: action === 'route' ? null : 'c-1',
      });
    }
  });
  it.each([
    {},
    { instanceId: 'x', action: 'teleport', commandId: null },
    { instanceId: '', action: 'route', commandId: null },
    { instanceId: 'x', action: 'route' },
  ])('refuses %j naming the field', (body) => expect(() => parseGroupJoinAnswer(body)).toThrow(/^join\./));
  it('builds the join path with the group id encoded', () => expect(groupJoinPath('a/b')).toBe('/api/v1/router/groups/a%2Fb/join'));
  it('accepts Draining as a registry status', () =>
    expect(
      parseRegistryBackend({
        instanceId: 'i',
        name: 'i',
        groupId: 'g',
        sessionId: null,
        status: 'Draining',
        address: '10.0.0.1:25565',
        players: null,
        maintenance: false,
        full: false,
        acceptsTransfers: true,
        expectedStartMs: null,
      }).status,
    ).toBe('Draining'));
});
