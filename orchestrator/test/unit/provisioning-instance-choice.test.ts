// The one instance chooser (provisioning/instance-choice.ts) that the router
// join, the autoscaler's wake and allocation follow: packed fills the busiest
// host, distributed the host with the fewest of the group in use; hosts that
// are down are skipped (MAINTENANCE still serves, is not placeable); ties by
// host id, then instance id; hostless candidates last.

import { describe, expect, it } from 'vitest';
import type { FleetInstance } from '../../src/provisioning/buffer.js';
import { chooseInstances, type FleetHost, type HostUse } from '../../src/provisioning/instance-choice.js';
import type { PlacementStrategy } from '../../src/domain/index.js';

const inst = (id: string, hostId: string | null, extra: Partial<FleetInstance> = {}): FleetInstance => ({
  id,
  hostId,
  state: 'online',
  allocated: false,
  playersOnline: 0,
  maxPlayers: 20,
  emptySince: null,
  ...extra,
});
const hosts: FleetHost[] = [
  { id: 'big', instanceCount: 8, status: 'ONLINE' },
  { id: 'mid', instanceCount: 5, status: 'ONLINE' },
  { id: 'small', instanceCount: 2, status: 'ONLINE' },
];
const withStatus = (id: string, status: FleetHost['status']): FleetHost[] => hosts.map((h) => (h.id === id ? { ...h, status } : h));

describe('chooseInstances', () => {
  it.each<[string, FleetInstance[], PlacementStrategy, HostUse, FleetHost[], string[]]>([
    [
      'packed: the busiest host first',
      [inst('s', 'small'), inst('b', 'big'), inst('m', 'mid')],
      'packed',
      'serving',
      hosts,
      ['b', 'm', 's'],
    ],
    ['packed ties on a host: by instance id', [inst('b2', 'big'), inst('b1', 'big')], 'packed', 'serving', hosts, ['b1', 'b2']],
    [
      'distributed: the host with the fewest of the group in use, then the least busy',
      [
        inst('b', 'big'),
        inst('s', 'small'),
        inst('s-alloc', 'small', { allocated: true }),
        inst('m', 'mid'),
        inst('m-players', 'mid', { playersOnline: 4 }),
      ],
      'distributed',
      'serving',
      hosts,
      ['b', 's', 's-alloc', 'm', 'm-players'],
    ],
    [
      'distributed, nothing in use: the least busy host',
      [inst('b', 'big'), inst('m', 'mid'), inst('s', 'small')],
      'distributed',
      'serving',
      hosts,
      ['s', 'm', 'b'],
    ],
    ['an OFFLINE host is skipped', [inst('b', 'big'), inst('s', 'small')], 'packed', 'serving', withStatus('big', 'OFFLINE'), ['s']],
    ['a RECOVERING host is skipped', [inst('b', 'big'), inst('s', 'small')], 'packed', 'placeable', withStatus('big', 'RECOVERING'), ['s']],
    [
      'MAINTENANCE still serves a login',
      [inst('b', 'big'), inst('s', 'small')],
      'packed',
      'serving',
      withStatus('big', 'MAINTENANCE'),
      ['b', 's'],
    ],
    [
      'MAINTENANCE takes no new session',
      [inst('b', 'big'), inst('s', 'small')],
      'packed',
      'placeable',
      withStatus('big', 'MAINTENANCE'),
      ['s'],
    ],
    [
      'a host whose status is not given counts as usable',
      [inst('x', 'unlisted'), inst('s', 'small')],
      'packed',
      'placeable',
      hosts,
      ['s', 'x'],
    ],
    [
      'equal hosts: by host id',
      [inst('z', 'h2'), inst('y', 'h1')],
      'packed',
      'serving',
      [
        { id: 'h1', instanceCount: 1 },
        { id: 'h2', instanceCount: 1 },
      ],
      ['y', 'z'],
    ],
    ['a candidate without a host comes last', [inst('n', null), inst('s', 'small')], 'packed', 'serving', hosts, ['s', 'n']],
  ])('%s', (_name, candidates, placement, use, hs, expected) => {
    expect(chooseInstances(candidates, { placement, hosts: hs, groupInstances: candidates }, use).map((i) => i.id)).toEqual(expected);
  });

  it('counts the whole group, not only the candidates (a sleeper goes where the group is least in use)', () => {
    const group = [
      inst('s-busy', 'small', { allocated: true }),
      inst('s-sleep', 'small', { state: 'paused' }),
      inst('b-sleep', 'big', { state: 'paused' }),
    ];
    const sleepers = group.filter((i) => i.state === 'paused');
    expect(chooseInstances(sleepers, { placement: 'distributed', hosts, groupInstances: group }, 'serving').map((i) => i.id)).toEqual([
      'b-sleep',
      's-sleep',
    ]);
  });
});
