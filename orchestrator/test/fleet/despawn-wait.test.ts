// FleetActions.despawn's wait until empty, without Docker: the supervisor does
// not probe an instance under an active action, so the wait must count players
// from a fresh status ping each poll (the reading from before the drain stays
// stale forever). A store fake holds one instance; the clock advances with sleep.

import { describe, expect, it } from 'vitest';
import type { Instance, JsonObject } from '../../src/domain/index.js';
import { ManualClock } from '../../src/server/clock.js';
import type { HostDriver } from '../../src/server/drivers/host-driver.js';
import { FleetActions, type FleetActionsDeps } from '../../src/server/lifecycle-engine/fleet-actions.js';
import type { RunContext } from '../../src/server/lifecycle-engine/run-context.js';
import type { Store } from '../../src/store/store.js';

function harness(opts: {
  probe: () => { online: number; max: number } | undefined;
  routerPlayers?: number;
  force?: boolean;
  timeoutMs?: number;
}) {
  const clock = new ManualClock(1_000_000);
  let instance = {
    id: 'i-1',
    name: 'w-1',
    groupId: 'g',
    state: 'online',
    version: 1,
    hostId: 'h',
    memoryMb: 256,
    fleet: {},
    players: { online: 1, max: 20, at: clock.now() - 60_000 },
    stateChangedAt: clock.now() - 120_000,
  } as unknown as Instance;
  const history: JsonObject[] = [];
  const removed: string[] = [];
  const store = {
    instances: {
      get: async () => instance,
      update: async (_id: string, patch: Partial<Instance>) => (instance = { ...instance, ...patch }),
      transition: async (_id: string, to: string, o: { patch?: Partial<Instance> }) =>
        (instance = { ...instance, ...(o.patch ?? {}), state: to } as Instance),
    },
    history: { append: async (h: JsonObject) => void history.push(h) },
  } as unknown as Store;
  const deps: FleetActionsDeps = {
    store,
    clock,
    driver: {} as HostDriver,
    backups: () => {
      throw new Error('no backups here');
    },
    evacuate: async () => ({ players: 1 }),
    playersOn: async (i) => Math.max(opts.routerPlayers ?? 0, i.players?.online ?? 0),
    probePlayers: async () => opts.probe(),
    remove: async (i) => {
      removed.push(i.id);
      return { deleted: true };
    },
    sleep: async (ms) => clock.advance(ms),
    emptyPollMs: 500,
  };
  const ctx = {
    cmd: { id: 'cmd-1', payload: { timeoutMs: opts.timeoutMs ?? 10_000, force: opts.force === true, savegame: 'discard' } },
    host: { id: 'h' },
    template: undefined,
    ids: {},
    actor: 'test',
    log: {},
  } as unknown as RunContext;
  return { actions: new FleetActions(deps), ctx, clock, removed, history, current: () => instance };
}

describe('despawn wait until empty (fresh probe each poll)', () => {
  it('a stale probe reading from before the drain does not hold the despawn: the fresh ping says empty → deleted', async () => {
    let pings = 0;
    const h = harness({ probe: () => ({ online: pings++ < 2 ? 1 : 0, max: 20 }) });
    const started = h.clock.now();
    await expect(h.actions.despawn(h.current(), h.ctx)).resolves.toMatchObject({ despawned: true, deleted: true });
    expect(h.removed).toEqual(['i-1']);
    expect(h.clock.now() - started).toBeLessThan(2000);
    expect(h.current().players).toMatchObject({ online: 0, at: h.clock.now() });
    expect(h.history.map((e) => (e.details as JsonObject).despawn)).toEqual(['drain', 'evacuate', 'wait', 'delete']);
  });

  it('a player the probe still sees (around the router) keeps the world until the timeout: CONFLICT, or deleted with force', async () => {
    const h = harness({ probe: () => ({ online: 1, max: 20 }), timeoutMs: 3000 });
    await expect(h.actions.despawn(h.current(), h.ctx)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(h.removed).toEqual([]);
    const forced = harness({ probe: () => ({ online: 1, max: 20 }), timeoutMs: 3000, force: true });
    await expect(forced.actions.despawn(forced.current(), forced.ctx)).resolves.toMatchObject({ despawned: true });
    expect(forced.removed).toEqual(['i-1']);
  });

  it('no probe answer keeps the last reading (the despawn waits); a fresh zero at the first look skips evacuation and wait', async () => {
    const silent = harness({ probe: () => undefined, timeoutMs: 2000 });
    await expect(silent.actions.despawn(silent.current(), silent.ctx)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(silent.current().players?.online).toBe(1);
    const noPlayers = harness({ probe: () => ({ online: 0, max: 20 }) });
    await expect(noPlayers.actions.despawn(noPlayers.current(), noPlayers.ctx)).resolves.toMatchObject({ despawned: true });
    // Empty at the first look: no evacuation, no wait.
    expect(noPlayers.history.map((e) => (e.details as JsonObject).despawn)).toEqual(['drain', 'delete']);
  });
});
