// Hosts: heartbeats (the hot path: one upsert), the recovery run of a new or
// returning host (RECOVERING → inventory → cleanup/unclaimed/missing → ONLINE),
// operator maintenance, and the live list of unclaimed containers.

import { randomUUID } from 'node:crypto';
import type { GroupKind, Host } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { AgentClient } from '../agent-client.js';
import type { Clock } from '../clock.js';
import { toHostHeartbeat, type HeartbeatBody } from './heartbeat-input.js';
import { planRecovery, type RecoveryPlan, type UnclaimedContainer } from './recovery-plan.js';

export interface HostServiceOptions {
  store: Store;
  agents: AgentClient;
  clock: Clock;
  logger: Logger;
  /** Wakes the command worker after commands were queued. */
  onCommandsQueued: () => void;
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

  constructor(private readonly o: HostServiceOptions) {}

  async heartbeat(agentId: string, body: HeartbeatBody): Promise<{ hostId: string; status: Host['status'] }> {
    const { host, created, startedRecovery } = await this.o.store.hosts.upsertHeartbeat(toHostHeartbeat(agentId, body), this.o.clock.now());
    // Heartbeats themselves are logged at debug (request-log.ts); a status change is news.
    if (startedRecovery) {
      this.o.logger.info({ hostId: host.id, controlUrl: host.controlUrl, reason: host.statusReason }, created ? 'new host registered: RECOVERING' : 'host returned: RECOVERING');
    }
    // A failed recovery is retried by the next heartbeat: the host stays RECOVERING.
    if (host.status === 'RECOVERING') this.startRecovery(host.id);
    return { hostId: host.id, status: host.status };
  }

  private startRecovery(hostId: string): void {
    if (this.recovering.has(hostId)) return;
    const run = this.recover(hostId)
      .then(() => undefined, (err: unknown) => this.o.logger.warn({ hostId, err: (err as Error).message }, 'host recovery failed; retrying on the next heartbeat'))
      .finally(() => this.recovering.delete(hostId));
    this.recovering.set(hostId, run);
  }

  /** Resolves when no recovery run is in flight (tests, shutdown). */
  async whenIdle(): Promise<void> {
    while (this.recovering.size > 0) await Promise.all([...this.recovering.values()]);
  }

  /** One recovery run; leaves the host RECOVERING (and throws) when the agent cannot be inventoried. */
  async recover(hostId: string): Promise<RecoveryOutcome | undefined> {
    const { store, clock, logger } = this.o;
    const host = await store.hosts.get(hostId);
    if (!host || host.status !== 'RECOVERING') return undefined;
    const requestId = `recovery-${randomUUID()}`;
    const inventory = await this.o.agents.inventory(host.controlUrl, { requestId });
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
    const plan = planRecovery({ hostId, inventory, stored, hostKnown, storedElsewhere, groupKinds });
    const now = clock.now();

    for (const id of plan.missing) {
      await store.instances.transition(id, 'unknown', {
        now, reason: `container missing from host ${hostId} inventory during recovery`, actor: 'system', details: { hostId, requestId },
        from: ['stopped', 'starting', 'online', 'degraded', 'stopping', 'pausing', 'paused', 'backup', 'restore', 'update'],
      });
    }
    let cleanupCommandId: string | null = null;
    if (plan.remove.length > 0) {
      cleanupCommandId = `cmd-${randomUUID()}`;
      await store.commands.create({ id: cleanupCommandId, kind: 'cleanup', hostId, payload: { instanceIds: plan.remove, keepDataFor: plan.keepDataFor }, requestId }, now);
      this.o.onCommandsQueued();
    }
    const target = host.maintenance?.enabled ? 'MAINTENANCE' : 'ONLINE';
    const summary = `recovery finished: ${inventory.length} reported, ${plan.remove.length} orphan(s) queued for removal (${plan.keepDataFor.length} keeping their data), ${plan.unclaimed.length} unclaimed, ${plan.missing.length} missing`;
    const updated = await store.hosts.setStatus(hostId, target, { from: ['RECOVERING'], reason: summary, now: clock.now() });
    const outcome: RecoveryOutcome = { ...plan, hostId, at: now, cleanupCommandId, status: updated?.status ?? host.status };
    this.lastRecovery.set(hostId, outcome);
    await store.audit.append({
      at: now, actor: 'system', action: 'host.recover', targetKind: 'host', targetId: hostId,
      params: { removed: plan.remove, dataKept: plan.keepDataFor, unclaimed: plan.unclaimed.map((u) => u.instanceId), missing: plan.missing },
      result: 'ok', errorCode: null, requestId,
    });
    logger.info({ hostId, requestId, removed: plan.remove, dataKept: plan.keepDataFor, unclaimed: plan.unclaimed.length, missing: plan.missing, status: outcome.status }, summary);
    return outcome;
  }

  async setMaintenance(hostId: string, enabled: boolean, message: string, actor: string): Promise<Host> {
    const { store, clock } = this.o;
    const now = clock.now();
    await store.hosts.setMaintenance(hostId, enabled ? { enabled: true, message, since: now } : null, now);
    // RECOVERING and OFFLINE keep their status; recovery ends in MAINTENANCE while the flag is set.
    if (enabled) await store.hosts.setStatus(hostId, 'MAINTENANCE', { from: ['ONLINE'], reason: message || `maintenance by ${actor}`, now });
    else await store.hosts.setStatus(hostId, 'ONLINE', { from: ['MAINTENANCE'], reason: `maintenance ended by ${actor}`, now });
    const host = await store.hosts.get(hostId);
    if (!host) throw new AppError('HOST_NOT_FOUND', `host ${hostId} is not registered`);
    this.o.logger.info({ hostId, actor, enabled, status: host.status }, enabled ? 'host maintenance enabled' : 'host maintenance ended');
    return host;
  }

  /**
   * An operator's explicit delete of one unclaimed container (checked against
   * the live inventory first): queues a cleanup command; the runtime directory
   * goes only with `deleteData`.
   */
  async deleteUnclaimed(hostId: string, instanceId: string, deleteData: boolean, actor: string, requestId: string): Promise<{ commandId: string; deleteData: boolean }> {
    const listed = await this.unclaimed(hostId, requestId);
    if (!listed.some((u) => u.instanceId === instanceId)) {
      const stored = await this.o.store.instances.get(instanceId);
      if (stored?.hostId === hostId) throw new AppError('CONFLICT', `instance ${instanceId} is managed by the store on host ${hostId}; delete it through /instances/${instanceId}`);
      throw new AppError('NOT_FOUND', `host ${hostId} reports no unclaimed container for instance ${instanceId}`);
    }
    const commandId = `cmd-${randomUUID()}`;
    const payload = { instanceIds: [instanceId], keepDataFor: deleteData ? [] : [instanceId] };
    await this.o.store.commands.create({ id: commandId, kind: 'cleanup', hostId, payload, requestId }, this.o.clock.now());
    this.o.onCommandsQueued();
    this.o.logger.info({ hostId, instanceId, deleteData, actor, commandId }, 'unclaimed container deletion queued');
    return { commandId, deleteData };
  }

  /** Managed containers the host reports that the store does not place there (asks the agent now). */
  async unclaimed(hostId: string, requestId: string): Promise<UnclaimedContainer[]> {
    const host = await this.o.store.hosts.get(hostId);
    if (!host) throw new AppError('HOST_NOT_FOUND', `host ${hostId} is not registered`);
    if (host.status === 'OFFLINE') throw new AppError('HOST_UNAVAILABLE', `host ${hostId} is OFFLINE; its containers cannot be listed`);
    const inventory = await this.o.agents.inventory(host.controlUrl, { requestId });
    const out: UnclaimedContainer[] = [];
    for (const c of inventory) {
      const stored = await this.o.store.instances.get(c.instanceId);
      if (stored?.hostId === hostId) continue;
      out.push({
        instanceId: c.instanceId, containerId: c.containerId, containerName: c.containerName, groupId: c.groupId, variantId: c.variantId,
        hostPort: c.hostPort, state: c.state,
        reason: stored ? `the store places instance ${c.instanceId} on host ${stored.hostId ?? '(none)'}` : 'no stored instance has this id',
      });
    }
    return out;
  }
}
