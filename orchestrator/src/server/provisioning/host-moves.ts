// Executes the pure host-moves plans (src/provisioning/host-moves.ts): when a
// host goes OFFLINE its instances become `unknown` (so their fleet replaces the
// scaled ephemeral ones), and when it returns those fleet instances still
// `unknown` are despawned through the one command pipeline. Both are audited. Per host they
// run one after the other, and a loss handled after the host already came
// back does nothing (its recovery run and the supervisor re-check it).

import type { Instance, JsonObject } from '../../domain/index.js';
import { planHostLoss, planHostReturn, type HostMoveInstance } from '../../provisioning/index.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { moveInstance } from '../lifecycle-engine/instance-transitions.js';
import type { FleetService } from './fleet-service.js';
import { PROVISIONER_ACTOR } from './provisioner.js';

export interface HostMovesDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  fleet: FleetService;
}

export class HostMoves {
  private readonly chains = new Map<string, Promise<void>>();

  constructor(private readonly deps: HostMovesDeps) {}

  /** The host just went OFFLINE. */
  lost(hostId: string): Promise<void> {
    return this.serial(hostId, () => this.markLost(hostId));
  }

  /** The host's recovery run found it back (before it turns ONLINE). */
  returned(hostId: string): Promise<void> {
    return this.serial(hostId, () => this.despawnLost(hostId));
  }

  private serial(hostId: string, fn: () => Promise<void>): Promise<void> {
    const next = (this.chains.get(hostId) ?? Promise.resolve()).then(fn);
    const settled = next.catch(() => undefined);
    this.chains.set(hostId, settled);
    void settled.then(() => {
      if (this.chains.get(hostId) === settled) this.chains.delete(hostId);
    });
    return next;
  }

  private async markLost(hostId: string): Promise<void> {
    const { store, clock, logger } = this.deps;
    const instances = await store.instances.list({ hostId });
    const byId = new Map(instances.map((i) => [i.id, i]));
    const decisions = planHostLoss(hostId, await this.view(instances));
    const moved: typeof decisions = [];
    for (const d of decisions) {
      // A heartbeat may have brought the host back meanwhile: then its recovery decides.
      if ((await store.hosts.get(hostId))?.status !== 'OFFLINE') break;
      try {
        if (await moveInstance(store, byId.get(d.instanceId)!, d.to, { now: clock.now(), reason: d.reason, details: { hostId } }))
          moved.push(d);
      } catch (err) {
        logger.warn({ hostId, instanceId: d.instanceId, err: (err as Error).message }, 'marking an instance of a lost host failed');
      }
    }
    if (moved.length === 0) return;
    await this.audit(
      'host.lost',
      hostId,
      moved.map((d) => ({ instanceId: d.instanceId, lost: d.lost })),
      clock.now(),
    );
    logger.warn(
      {
        hostId,
        unknown: moved.filter((d) => !d.lost).map((d) => d.instanceId),
        lostFleet: moved.filter((d) => d.lost).map((d) => d.instanceId),
      },
      'host lost: its instances are unknown; fleet instances are replaced elsewhere',
    );
  }

  private async despawnLost(hostId: string): Promise<void> {
    const { store, clock, logger } = this.deps;
    const decisions = planHostReturn(hostId, await this.view(await store.instances.list({ hostId })));
    const now = clock.now();
    const results: { instanceId: string; commandId?: string | null; refused?: string }[] = [];
    for (const d of decisions) {
      try {
        const { commandId } = await this.deps.fleet.despawn(
          d.instanceId,
          { reason: d.reason, force: true },
          PROVISIONER_ACTOR,
          `host-return-${hostId}-${now}`,
        );
        results.push({ instanceId: d.instanceId, commandId });
      } catch (err) {
        results.push({ instanceId: d.instanceId, refused: (err as Error).message });
      }
    }
    if (results.length === 0) return;
    await this.audit('host.returned', hostId, results, now);
    logger.info({ hostId, despawned: results }, 'host returned: its lost fleet instances are despawned');
  }

  private async view(instances: readonly Instance[]): Promise<HostMoveInstance[]> {
    const groups = new Map((await this.deps.store.groups.list()).map((g) => [g.id, g]));
    return instances.map((i) => {
      const group = groups.get(i.groupId);
      return { id: i.id, state: i.state, groupKind: group?.kind, scaled: group?.scaling != null, activeAction: i.activeAction !== null };
    });
  }

  private async audit(action: string, hostId: string, instances: { instanceId: string }[], now: number): Promise<void> {
    await this.deps.store.audit.append({
      at: now,
      actor: 'system',
      action,
      targetKind: 'host',
      targetId: hostId,
      params: { instances: instances as unknown as JsonObject[] },
      result: 'ok',
      errorCode: null,
      requestId: `${action}-${hostId}-${now}`,
    });
  }
}
