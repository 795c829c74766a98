// Guards the host-moves planners and the maintenance drain of planFleet: a
// lost host's instances become unknown (nothing a command owns is touched),
// a returning host's fleet instances still unknown are despawned, and an ephemeral group moves its instances off a host in
// MAINTENANCE only once their replacements are Ready (persistent ones stay).

import { describe, expect, it } from 'vitest';
import { planFleet, type FleetInput } from '../../src/provisioning/autoscaler.js';
import type { FleetInstance } from '../../src/provisioning/buffer.js';
import { planHostLoss, planHostReturn, type HostMoveInstance } from '../../src/provisioning/host-moves.js';
import { parseScalingPolicy } from '../../src/provisioning/scaling-policy.js';

const NOW = 1_700_000_000_000;
const m = (id: string, over: Partial<HostMoveInstance> = {}): HostMoveInstance => ({
  id,
  state: 'online',
  groupKind: 'persistent',
  scaled: false,
  activeAction: false,
  ...over,
});
const e = (id: string, over: Partial<HostMoveInstance> = {}): HostMoveInstance => m(id, { groupKind: 'ephemeral', scaled: true, ...over });

describe('planHostLoss', () => {
  it.each<[string, HostMoveInstance, { lost: boolean } | null]>([
    ['a persistent online world becomes unknown, not lost', m('p'), { lost: false }],
    ['a persistent stopped world becomes unknown (its container may still be there)', m('p', { state: 'stopped' }), { lost: false }],
    ['a scaled ephemeral online instance is lost (replaced by its fleet)', e('e'), { lost: true }],
    ['a scaled ephemeral paused instance is lost', e('e', { state: 'paused' }), { lost: true }],
    ['an ephemeral instance without a scaling policy is not lost (nothing would replace it)', e('e', { scaled: false }), { lost: false }],
    ['an instance of a deleted group is treated as persistent', m('x', { groupKind: undefined }), { lost: false }],
    ['a command owns it: left to the command', m('c', { activeAction: true }), null],
    ['installing belongs to its command', m('i', { state: 'installing' }), null],
    ['a backup belongs to its command', m('b', { state: 'backup' }), null],
    ['archived has no container', e('a', { state: 'archived' }), null],
    ['already unknown', m('u', { state: 'unknown' }), null],
    ['error is sticky', m('r', { state: 'error' }), null],
    ['a draft has no container', m('d', { state: 'draft' }), null],
  ])('%s', (_name, instance, expected) => {
    const decisions = planHostLoss('h1', [instance]);
    if (expected === null) expect(decisions).toEqual([]);
    else
      expect(decisions).toEqual([
        {
          instanceId: instance.id,
          to: 'unknown',
          lost: expected.lost,
          reason: expect.stringContaining('host h1 is OFFLINE') as unknown as string,
        },
      ]);
  });

  it('says why a persistent world is never started elsewhere', () => {
    expect(planHostLoss('h1', [m('p')])[0]!.reason).toMatch(/never started elsewhere/);
  });
});

describe('planHostReturn', () => {
  it.each<[string, HostMoveInstance, boolean]>([
    ['a fleet instance still unknown (lost with the host) is despawned', e('e', { state: 'unknown' }), true],
    ['a fleet instance that is not unknown stays', e('e', { state: 'online' }), false],
    ['an ephemeral instance without a scaling policy stays (nothing replaced it)', e('e', { state: 'unknown', scaled: false }), false],
    ['a persistent world is never despawned', m('p', { state: 'unknown' }), false],
    ['one already being deleted', e('e', { state: 'deleting' }), false],
    ['one a command owns', e('e', { state: 'unknown', activeAction: true }), false],
  ])('%s', (_name, instance, despawn) => {
    expect(planHostReturn('h1', [instance]).map((d) => d.instanceId)).toEqual(despawn ? [instance.id] : []);
  });
});

const inst = (id: string, hostId: string, over: Partial<FleetInstance> = {}): FleetInstance => ({
  id,
  hostId,
  state: 'online',
  allocated: false,
  playersOnline: 0,
  maxPlayers: 10,
  emptySince: null,
  ...over,
});
const HOSTS = [
  { id: 'h1', instanceCount: 1, status: 'MAINTENANCE' as const },
  { id: 'h2', instanceCount: 1, status: 'ONLINE' as const },
];
function drainInput(instances: FleetInstance[], kind: 'ephemeral' | 'persistent' = 'ephemeral'): FleetInput {
  return {
    group: { id: 'g', kind, placement: 'distributed', scaling: parseScalingPolicy({ minInstances: 2 }), caps: {} },
    instances,
    hosts: HOSTS,
    now: NOW,
    lastScaleUpAt: null,
    lastScaleDownAt: null,
    capsRemaining: { group: 100, template: 100, global: 100 },
  };
}

describe('planFleet: maintenance drain', () => {
  it('an instance on a host in MAINTENANCE does not count: its replacement is spawned first', () => {
    const plan = planFleet(drainInput([inst('a', 'h1'), inst('b', 'h2')]));
    expect(plan.spawn.count).toBe(1);
    expect(plan.despawn).toEqual([]);
  });

  it('while the replacement starts, nothing is despawned', () => {
    const plan = planFleet(drainInput([inst('a', 'h1'), inst('b', 'h2'), inst('c', 'h2', { state: 'starting' })]));
    expect(plan.spawn.count).toBe(0);
    expect(plan.despawn).toEqual([]);
  });

  it('once the replacement is Ready, the instance on the maintenance host is despawned', () => {
    const plan = planFleet(drainInput([inst('a', 'h1'), inst('b', 'h2'), inst('c', 'h2')]));
    expect(plan.spawn.count).toBe(0);
    expect(plan.despawn).toEqual([{ instanceId: 'a', reason: expect.stringContaining('host h1 is in MAINTENANCE') as unknown as string }]);
  });

  it.each<[string, FleetInstance]>([
    ['an allocated one finishes its session first', inst('a', 'h1', { allocated: true })],
    ['one already being despawned', inst('a', 'h1', { draining: true })],
    ['an archived world has no container to move', inst('a', 'h1', { state: 'archived' })],
  ])('not despawned: %s', (_name, onMaintenance) => {
    expect(planFleet(drainInput([onMaintenance, inst('b', 'h2'), inst('c', 'h2')])).despawn).toEqual([]);
  });

  it('a persistent group keeps its instances on a host in maintenance', () => {
    const plan = planFleet(drainInput([inst('a', 'h1'), inst('b', 'h2')], 'persistent'));
    expect(plan.spawn.count).toBe(0);
    expect(plan.despawn).toEqual([]);
  });

  it('sleepers on a maintenance host are not woken there', () => {
    const plan = planFleet(drainInput([inst('a', 'h1', { state: 'paused' }), inst('b', 'h2')]));
    expect(plan.wake).toEqual([]);
    expect(plan.spawn.count).toBe(1);
  });
});
