// Hosts: heartbeats (the hot path: one upsert), the recovery run of a new or
// returning host (RECOVERING → inventory → cleanup/unclaimed/missing → ONLINE),
// operator maintenance, and the host's durable set of unclaimed containers.

import { randomUUID } from 'node:crypto';
import type { GroupKind, Host } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { HeartbeatAuth, Store } from '../../store/store.js';
import type { HostDriver } from '../drivers/host-driver.js';
import type { Clock } from '../clock.js';
import { toHostHeartbeat, type HeartbeatBody } from './heartbeat-input.js';
import { planRecovery, type RecoveryPlan, type UnclaimedContainer } from './recovery-plan.js';
import { CONTAINER_EXPECTED } from '../../lifecycle/reconcile.js';
import { moveInstance } from '../lifecycle-engine/instance-transitions.js';

export interface HostServiceOptions {
  store: Store;
  driver: HostDriver;
  clock: Clock;
  logger: Logger;
  /** Wakes the command worker after commands were queued. */
  onCommandsQueued: () => void;
  /** ENDERCLOUD_COMMAND_MAX_ATTEMPTS: the cleanup commands a recovery or removal queues retry as often as every other command. */
  commandMaxAttempts: number;
  /** Called by a recovery run before the host turns ONLINE again (host-moves.ts: despawn its lost fleet instances). */
  onReturned?: (hostId: string) => Promise<void>;
  /** Called once a recovery run made the host ONLINE or MAINTENANCE (the supervisor re-verifies its instances at once). */
  onRecovered?: (hostId: string) => void;
}

export interface RecoveryOutcome extends RecoveryPlan {
  hostId: string;
  at: number;
  cleanupCommandId: string | null;
  status: Host['status'];
}

export class HostService {
  private readonly recovering = new Map<string, Promise<void>>();
  readonly lastRecovery = new Map<string, RecoveryOutcome>();

  constructor(private readonly deps: HostServiceOptions) {}

  /** `auth.hostCredential`: the beat came with the host's own credential (the route checked it names this agentId). */
  async heartbeat(agentId: string, body: HeartbeatBody, auth: HeartbeatAuth = {}): Promise<{ hostId: string; status: Host['status'] }> {
    const { host, created, startedRecovery } = await this.deps.store.hosts.upsertHeartbeat(
      toHostHeartbeat(agentId, body),
      this.deps.clock.now(),
      auth,
    );
    // Heartbeats themselves are logged at debug (request-log.ts); a status change is news.
    if (startedRecovery) {
      this.deps.logger.info(
        { hostId: host.id, controlUrl: host.controlUrl, reason: host.statusReason },
        created ? 'new host registered: RECOVERING' : 'host returned: RECOVERING',
      );
    }
    // A failed recovery is retried by the next heartbeat: the host stays RECOVERING.
    if (host.status === 'RECOVERING') this.startRecovery(host.id);
    return { hostId: host.id, status: host.status };
  }

  private startRecovery(hostId: string): void {
    if (this.recovering.has(hostId)) return;
    const run = this.recover(hostId)
      .then(
        () => undefined,
        (err: unknown) =>
          this.deps.logger.warn({ hostId, err: (err as Error).message }, 'host recovery failed; retrying on the next heartbeat'),
      )
      .finally(() => this.recovering.delete(hostId));
    this.recovering.set(hostId, run);
  }

  /** Resolves when no recovery run is in flight (tests, shutdown). */
  async whenIdle(): Promise<void> {
    while (this.recovering.size > 0) await Promise.all([...this.recovering.values()]);
  }

  /** One recovery run; leaves the host RECOVERING (and throws) when the agent cannot be inventoried. */
  async recover(hostId: string): Promise<RecoveryOutcome | undefined> {
    const { store, clock, logger } = this.deps;
    const host = await store.hosts.get(hostId);
    if (!host || host.status !== 'RECOVERING') return undefined;
    const requestId = `recovery-${randomUUID()}`;
    const inventory = await this.deps.driver.inventory(host, { requestId });
    const stored = await store.instances.list({ hostId });
    const hostKnown = stored.length > 0 || (await store.commands.list({ hostId, limit: 1 })).length > 0;
    const storedElsewhere = new Map<string, string | null>();
    const storedIds = new Set(stored.map((i) => i.id));
    for (const c of inventory) {
      if (storedIds.has(c.instanceId)) continue;
      const other = await store.instances.get(c.instanceId);
      if (other) storedElsewhere.set(c.instanceId, other.hostId);
    }
    const groupKinds = new Map<string, GroupKind>((await store.groups.list()).map((g) => [g.id, g.kind]));
    const listedUnclaimed = new Map((await store.unclaimed.listForHost(hostId)).map((r) => [r.instanceId, r.firstSeenAt]));
    const removalQueued = await this.removalQueued(hostId);
    const plan = planRecovery({ hostId, inventory, stored, hostKnown, storedElsewhere, groupKinds, listedUnclaimed, removalQueued });
    const now = clock.now();

    for (const instance of stored.filter((i) => plan.missing.includes(i.id) && CONTAINER_EXPECTED.includes(i.state))) {
      await moveInstance(store, instance, 'unknown', {
        now,
        reason: `container missing from host ${hostId} inventory during recovery`,
        details: { hostId, requestId },
      });
    }
    const cleanupCommandId = plan.remove.length > 0 ? `cmd-${randomUUID()}` : null;
    // One unit: the set a later run relies on, and the removals decided against it.
    // Containers no longer reported drop out of the set here.
    await store.transaction(async (tx) => {
      await tx.unclaimed.replaceForHost(
        hostId,
        plan.unclaimed.map((u) => ({ instanceId: u.instanceId, groupId: u.groupId, variantId: u.variantId })),
        now,
      );
      if (cleanupCommandId) {
        await tx.commands.create(
          {
            id: cleanupCommandId,
            kind: 'cleanup',
            hostId,
            payload: { instanceIds: plan.remove, keepDataFor: plan.keepDataFor },
            requestId,
            maxAttempts: this.deps.commandMaxAttempts,
          },
          now,
        );
      }
    });
    if (cleanupCommandId) this.deps.onCommandsQueued();
    await this.deps.onReturned?.(hostId);
    const target = host.maintenance?.enabled ? 'MAINTENANCE' : 'ONLINE';
    const summary = `recovery finished: ${inventory.length} reported, ${plan.remove.length} orphan(s) queued for removal (${plan.keepDataFor.length} keeping their data), ${plan.unclaimed.length} unclaimed, ${plan.missing.length} missing`;
    const updated = await store.hosts.setStatus(hostId, target, { from: ['RECOVERING'], reason: summary, now: clock.now() });
    const outcome: RecoveryOutcome = { ...plan, hostId, at: now, cleanupCommandId, status: updated?.status ?? host.status };
    if (updated) this.deps.onRecovered?.(hostId);
    this.lastRecovery.set(hostId, outcome);
    await store.audit.append({
      at: now,
      actor: 'system',
      action: 'host.recover',
      targetKind: 'host',
      targetId: hostId,
      params: {
        removed: plan.remove,
        dataKept: plan.keepDataFor,
        unclaimed: plan.unclaimed.map((u) => u.instanceId),
        missing: plan.missing,
      },
      result: 'ok',
      errorCode: null,
      requestId,
    });
    logger.info(
      {
        hostId,
        requestId,
        removed: plan.remove,
        dataKept: plan.keepDataFor,
        unclaimed: plan.unclaimed.length,
        missing: plan.missing,
        status: outcome.status,
      },
      summary,
    );
    return outcome;
  }

  async setMaintenance(hostId: string, enabled: boolean, message: string, actor: string): Promise<Host> {
    const { store, clock } = this.deps;
    const now = clock.now();
    await store.hosts.setMaintenance(hostId, enabled ? { enabled: true, message, since: now } : null, now);
    // RECOVERING and OFFLINE keep their status; recovery ends in MAINTENANCE while the flag is set.
    if (enabled)
      await store.hosts.setStatus(hostId, 'MAINTENANCE', { from: ['ONLINE'], reason: message || `maintenance by ${actor}`, now });
    else await store.hosts.setStatus(hostId, 'ONLINE', { from: ['MAINTENANCE'], reason: `maintenance ended by ${actor}`, now });
    const host = await store.hosts.get(hostId);
    if (!host) throw new AppError('HOST_NOT_FOUND', `host ${hostId} is not registered`);
    this.deps.logger.info({ hostId, actor, enabled, status: host.status }, enabled ? 'host maintenance enabled' : 'host maintenance ended');
    return host;
  }

  /**
   * An operator's explicit delete of one unclaimed container (checked against
   * the live inventory first): queues a cleanup command and, in the same
   * transaction, drops the container from the host's unclaimed set; the
   * runtime directory goes only with `deleteData`.
   */
  async deleteUnclaimed(
    hostId: string,
    instanceId: string,
    deleteData: boolean,
    actor: string,
    requestId: string,
  ): Promise<{ commandId: string; deleteData: boolean }> {
    const { store, clock } = this.deps;
    const host = await this.reachableHost(hostId);
    const inventory = await this.deps.driver.inventory(host, { requestId });
    const stored = await store.instances.get(instanceId);
    if (stored?.hostId === hostId)
      throw new AppError(
        'CONFLICT',
        `instance ${instanceId} is managed by the store on host ${hostId}; delete it through /instances/${instanceId}`,
      );
    // Any reported container no stored instance claims here: listed, or appeared since the last recovery.
    if (!inventory.some((c) => c.instanceId === instanceId))
      throw new AppError('NOT_FOUND', `host ${hostId} reports no unclaimed container for instance ${instanceId}`);
    const commandId = `cmd-${randomUUID()}`;
    const payload = { instanceIds: [instanceId], keepDataFor: deleteData ? [] : [instanceId] };
    const wasListed = await store.transaction(async (tx) => {
      await tx.commands.create(
        { id: commandId, kind: 'cleanup', hostId, payload, requestId, maxAttempts: this.deps.commandMaxAttempts },
        clock.now(),
      );
      return tx.unclaimed.remove(hostId, instanceId);
    });
    this.deps.onCommandsQueued();
    this.deps.logger.info({ hostId, instanceId, deleteData, actor, commandId, wasListed }, 'unclaimed container deletion queued');
    return { commandId, deleteData };
  }

  /**
   * The host's persisted unclaimed set joined with the live inventory: an
   * entry is listed while the agent still reports its container and no stored
   * instance claims it on this host, with the container as reported now.
   * Entries the agent no longer reports are left out (the next recovery drops
   * them); containers that appeared since the last recovery are not listed
   * until a recovery classifies them.
   */
  async unclaimed(hostId: string, requestId: string): Promise<UnclaimedView[]> {
    const { store } = this.deps;
    const host = await this.reachableHost(hostId);
    const listed = await store.unclaimed.listForHost(hostId);
    if (listed.length === 0) return [];
    const inventory = new Map((await this.deps.driver.inventory(host, { requestId })).map((c) => [c.instanceId, c]));
    const out: UnclaimedView[] = [];
    for (const entry of listed) {
      const c = inventory.get(entry.instanceId);
      if (!c) continue;
      const stored = await store.instances.get(c.instanceId);
      if (stored?.hostId === hostId) continue;
      const since = new Date(entry.firstSeenAt).toISOString();
      out.push({
        instanceId: c.instanceId,
        containerId: c.containerId,
        containerName: c.containerName,
        groupId: c.groupId,
        variantId: c.variantId,
        hostPort: c.hostPort,
        state: c.state,
        firstSeenAt: since,
        reason: stored
          ? `the store places instance ${c.instanceId} on host ${stored.hostId ?? '(none)'}`
          : `no stored instance has this id; listed as unclaimed since ${since}, kept until an operator adopts or deletes it`,
      });
    }
    return out;
  }

  /** Instance ids an unfinished cleanup command on this host will remove (an operator's delete, an earlier run). */
  private async removalQueued(hostId: string): Promise<Set<string>> {
    const open = await this.deps.store.commands.list({ hostId, statuses: ['pending', 'dispatched'], limit: 1000 });
    const ids = new Set<string>();
    for (const c of open) {
      if (c.kind !== 'cleanup' || !Array.isArray(c.payload.instanceIds)) continue;
      for (const id of c.payload.instanceIds) if (typeof id === 'string') ids.add(id);
    }
    return ids;
  }

  private async reachableHost(hostId: string): Promise<Host> {
    const host = await this.deps.store.hosts.get(hostId);
    if (!host) throw new AppError('HOST_NOT_FOUND', `host ${hostId} is not registered`);
    if (host.status === 'OFFLINE') throw new AppError('HOST_UNAVAILABLE', `host ${hostId} is OFFLINE; its containers cannot be listed`);
    return host;
  }
}

/** One entry of GET /hosts/:id/unclaimed. */
export interface UnclaimedView extends UnclaimedContainer {
  /** When a recovery first listed it (ISO). */
  firstSeenAt: string;
}
