// planRecovery, pure: which reported containers a recovery removes, leaves
// unclaimed for an operator, or leaves to a removal already queued.

import { describe, expect, it } from 'vitest';
import type { GroupKind } from '../../src/domain/index.js';
import { planRecovery, type InventoryContainer, type RecoveryFacts } from '../../src/server/services/recovery-plan.js';

const T0 = 1_700_000_000_000;
const c = (instanceId: string, groupId: string | null = 'eph'): InventoryContainer => ({
  instanceId,
  containerId: `c-${instanceId}`,
  containerName: `endercloud-v-${instanceId}`,
  groupId,
  variantId: 'v',
  hostPort: null,
  state: 'running',
});
const facts = (over: Partial<RecoveryFacts>): RecoveryFacts => ({
  hostId: 'h',
  inventory: [],
  stored: [],
  hostKnown: true,
  storedElsewhere: new Map(),
  groupKinds: new Map<string, GroupKind>([
    ['eph', 'ephemeral'],
    ['per', 'persistent'],
  ]),
  listedUnclaimed: new Map(),
  removalQueued: new Set(),
  ...over,
});

describe('planRecovery', () => {
  it('a host the store knows nothing of loses nothing: every unknown container is unclaimed', () => {
    const plan = planRecovery(facts({ hostKnown: false, inventory: [c('a'), c('b', 'per'), c('x', null)] }));
    expect(plan.remove).toEqual([]);
    expect(plan.unclaimed.map((u) => u.instanceId)).toEqual(['a', 'b', 'x']);
  });

  it("a container listed as unclaimed stays unclaimed on a known host, even an ephemeral group's; unlisted orphans are still removed", () => {
    const plan = planRecovery(
      facts({
        inventory: [c('kept-eph'), c('kept-per', 'per'), c('orphan'), c('stored')],
        stored: [{ id: 'stored', state: 'online' }],
        listedUnclaimed: new Map([
          ['kept-eph', T0],
          ['kept-per', T0],
          ['stored', T0],
        ]),
      }),
    );
    expect(plan.remove).toEqual(['orphan']);
    expect(plan.keepDataFor).toEqual([]);
    expect(plan.unclaimed.map((u) => u.instanceId)).toEqual(['kept-eph', 'kept-per']);
    expect(plan.unclaimed[0]!.reason).toBe(
      `listed as unclaimed since ${new Date(T0).toISOString()}: kept until an operator adopts or deletes it`,
    );
  });

  it('a container whose removal is already queued is left to that command: neither removed again nor unclaimed', () => {
    const plan = planRecovery(
      facts({
        inventory: [c('going'), c('going-listed', 'per')],
        removalQueued: new Set(['going', 'going-listed']),
        listedUnclaimed: new Map([['going-listed', T0]]),
      }),
    );
    expect(plan).toEqual({ remove: [], keepDataFor: [], unclaimed: [], missing: [] });
  });
});
