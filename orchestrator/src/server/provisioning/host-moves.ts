// Executes the pure host-moves plans (src/provisioning/host-moves.ts): when a
// host goes OFFLINE its instances become `unknown` (ephemeral ones marked
// lost, so their fleet replaces them), and when it returns its lost fleet
// instances are despawned through the one command pipeline. Every decision
// is audited; a failure is logged and retried by the next event (the next
// sweep never sees the host again, so `lost` is idempotent per instance).

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
  constructor(private readonly deps: HostMovesDeps) {}

  /** The host just went OFFLINE. */
  async lost(hostId: string): Promise<void> {
    const { store, clock, logger } = this.deps;
    const instances = await store.instances.list({ hostId });
    const byId = new Map(instances.map((i) => [i.id, i]));
    const decisions = planHostLoss(hostId, await this.view(instances));
    const now = clock.now();
    for (const d of decisions) {
      const instance = byId.get(d.instanceId)!;
      const patch = d.lost ? { fleet: { ...(instance.fleet ?? {}), lost: { at: now, hostId } } } : undefined;
      try {
        await moveInstance(store, instance, d.to, { now, reason: d.reason, details: { hostId }, ...(patch ? { patch } : {}) });
      } catch (err) {
        logger.warn({ hostId, instanceId: d.instanceId, err: (err as Error).message }, 'marking an instance of a lost host failed');
      }
    }
    if (decisions.length === 0) return;
    await this.audit('host.lost', hostId, decisions.map((d) => ({ instanceId: d.instanceId, lost: d.lost })), now);
    logger.warn({ hostId, unknown: decisions.filter((d) => !d.lost).map((d) => d.instanceId), lostFleet: decisions.filter((d) => d.lost).map((d) => d.instanceId) }, 'host lost: its instances are unknown; fleet instances are replaced elsewhere');
  }

  /** The host's recovery run found it back (before it turns ONLINE). */
  async returned(hostId: string): Promise<void> {
    const { store, clock, logger } = this.deps;
    const decisions = planHostReturn(hostId, await this.view(await store.instances.list({ hostId })));
    const now = clock.now();
    const results: { instanceId: string; commandId?: string | null; refused?: string }[] = [];
    for (const d of decisions) {
      try {
        const { commandId } = await this.deps.fleet.despawn(d.instanceId, { reason: d.reason, force: true }, PROVISIONER_ACTOR, `host-return-${hostId}-${now}`);
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
    const kinds = new Map((await this.deps.store.groups.list()).map((g) => [g.id, g.kind]));
    return instances.map((i) => ({
      id: i.id, state: i.state, groupKind: kinds.get(i.groupId), activeAction: i.activeAction !== null,
      ...(i.fleet?.lost ? { lostAt: i.fleet.lost.at } : {}),
    }));
  }

  private async audit(action: string, hostId: string, instances: { instanceId: string }[], now: number): Promise<void> {
    await this.deps.store.audit.append({
      at: now, actor: 'system', action, targetKind: 'host', targetId: hostId,
      params: { instances: instances as unknown as JsonObject[] }, result: 'ok', errorCode: null, requestId: `${action}-${hostId}-${now}`,
    });
  }
}
