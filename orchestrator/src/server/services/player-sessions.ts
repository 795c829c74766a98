// Player presence from the routers' session reports: login, denied and
// disconnect batches applied idempotently on (routerId, id, type) — the router
// retries batches — and who is on an instance now (reports and the last probe).

import type { Instance, PlayerSession } from '../../domain/index.js';
import type { RouterSessionEvent, RouterSessionsBatch } from '../../protocol/registry-contract.js';
import { isAppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { idleSince, startIdleClock } from '../../provisioning/index.js';

/** Store key of a router's session: router ids are unique per router, session ids per router. */
export const playerSessionKey = (routerId: string, id: string): string => `${routerId}/${id}`;

/** A duplicate insert means the event was applied before (a retried batch): not an error. */
async function openOnce(store: Store, session: PlayerSession): Promise<void> {
  try {
    await store.playerSessions.open(session);
  } catch (err) {
    if (!(isAppError(err) && err.code === 'CONFLICT')) throw err;
  }
}

async function applyEvent(store: Store, routerId: string, e: RouterSessionEvent): Promise<void> {
  const id = playerSessionKey(routerId, e.id);
  const at = Date.parse(e.at);
  if (e.type === 'disconnect') {
    // Closing an already closed (or never seen) session changes nothing: idempotent.
    await store.playerSessions.close(id, at, e.reason ?? null);
    return;
  }
  await openOnce(store, {
    id,
    routerId,
    playerName: e.player,
    playerUuid: e.uuid,
    instanceId: e.instanceId,
    clientAddress: null,
    status: e.type === 'login' ? 'active' : 'denied',
    reason: e.reason ?? null,
    connectedAt: at,
    disconnectedAt: e.type === 'denied' ? at : null,
  });
}

/**
 * Applies one batch: `reset` first closes every open session of the router (it
 * restarted) — except the logins this very batch carries, since a retried reset
 * batch whose first delivery was applied must not close them for good.
 */
async function applySessionsBatch(store: Store, batch: RouterSessionsBatch, now: number): Promise<{ closed: number }> {
  let closed = 0;
  if (batch.reset) {
    const carried = new Set(batch.events.filter((e) => e.type === 'login').map((e) => playerSessionKey(batch.routerId, e.id)));
    for (const s of await store.playerSessions.listActive({ routerId: batch.routerId })) {
      if (carried.has(s.id)) continue;
      await store.playerSessions.close(s.id, now, 'router restarted');
      closed += 1;
    }
  }
  for (const e of batch.events) await applyEvent(store, batch.routerId, e);
  return { closed };
}

export interface InstancePlayers {
  online: number;
  routerReported: number;
  probe: Instance['players'];
  sessions: PlayerSession[];
}

export class PlayerSessions {
  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  /**
   * Applies one router batch; returns how many stale sessions a router reset
   * closed. Each instance's idle clock then restarts at its logins and counts
   * from its last logout (docs/provisioning.md "Idle semantics": idle means zero logged-in players in a row).
   */
  async applyBatch(batch: RouterSessionsBatch): Promise<{ closed: number }> {
    const now = this.deps.clock.now();
    const result = await applySessionsBatch(this.deps.store, batch, now);
    const touched = new Map<string, { logins: number[]; logouts: number[] }>();
    for (const e of batch.events) {
      const instanceId =
        e.instanceId ??
        (e.type === 'disconnect' ? (await this.deps.store.playerSessions.get(playerSessionKey(batch.routerId, e.id)))?.instanceId : null);
      if (!instanceId || e.type === 'denied') continue;
      const entry = touched.get(instanceId) ?? { logins: [], logouts: [] };
      (e.type === 'login' ? entry.logins : entry.logouts).push(Date.parse(e.at));
      touched.set(instanceId, entry);
    }
    for (const [instanceId, events] of touched) await this.advanceIdleClock(instanceId, events, now);
    return result;
  }

  private async advanceIdleClock(instanceId: string, events: { logins: number[]; logouts: number[] }, now: number): Promise<void> {
    const { store } = this.deps;
    const instance = await store.instances.get(instanceId);
    if (!instance) return;
    const active = (await store.playerSessions.listActive({ instanceId })).length;
    const prev = instance.fleet?.idle ?? startIdleClock(instance.stateChangedAt);
    const idle = idleSince(prev, { router: { at: now, playersOnline: active, ...events } }, now);
    await store.instances.update(instanceId, { fleet: { ...(instance.fleet ?? {}), idle } }, { now });
  }

  /** The larger of the router-reported logins and the probe's count: a player either source sees is there. */
  async onInstance(instance: Instance): Promise<InstancePlayers> {
    const sessions = await this.deps.store.playerSessions.listActive({ instanceId: instance.id });
    return {
      online: Math.max(sessions.length, instance.players?.online ?? 0),
      routerReported: sessions.length,
      probe: instance.players,
      sessions,
    };
  }
}
