// Adoption of an unclaimed container (POST /hosts/:id/unclaimed/:instanceId/adopt):
// checks the live inventory, the labels and the catalog, then — in one
// transaction under the caps lock — reserves memory, writes an instance
// record bound to the existing container and drops it from the host's
// unclaimed set. No agent call changes anything.

import type { Host, Instance } from '../../domain/index.js';
import { unwrap } from '../../lifecycle/result.js';
import { assertRoom } from './instance-limits.js';
import { AppError } from '../../shared/errors.js';
import { assertId } from '../../shared/ids.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { HostDriver } from '../drivers/host-driver.js';
import type { Clock } from '../clock.js';
import {
  adoptedEndpoint,
  adoptedLifecycle,
  adoptedUser,
  checkAdoptionLabels,
  defaultAdoptedName,
  pendingSecrets,
  type ReportedContainer,
} from './adoption-plan.js';
import { buildInstance, memoryFor, revisionConfig } from './instance-config.js';
import { resolveVariant } from './instance-creator.js';

export interface AdoptRequest {
  groupId: string;
  variantId: string;
  name?: string;
}

export interface AdoptionServiceOptions {
  store: Store;
  driver: HostDriver;
  clock: Clock;
  logger: Logger;
  maxTotalInstances: number | undefined;
  endercloudUser: { uid: number; gid: number };
  /** Called after the record is committed (starts readiness probing of a running container). */
  onAdopted: (instance: Instance) => void;
  generateSecret?: () => string;
}

/** A recovery run decides over the same containers; adopting meanwhile could race a cleanup. */
const ADOPTABLE_HOST_STATUSES: readonly Host['status'][] = ['ONLINE', 'MAINTENANCE'];

export class AdoptionService {
  constructor(private readonly deps: AdoptionServiceOptions) {}

  async adopt(
    hostId: string,
    instanceId: string,
    req: AdoptRequest,
    actor: string,
    requestId: string,
  ): Promise<{ instance: Instance; container: ReportedContainer }> {
    const { store, clock } = this.deps;
    const host = await store.hosts.get(hostId);
    if (!host) throw new AppError('HOST_NOT_FOUND', `host ${hostId} is not registered`);
    if (!ADOPTABLE_HOST_STATUSES.includes(host.status)) {
      throw new AppError(
        'HOST_UNAVAILABLE',
        `host ${hostId} is ${host.status}; containers can be adopted once it is ONLINE or in MAINTENANCE`,
        { retryable: host.status === 'RECOVERING' },
      );
    }
    await this.assertNotStored(instanceId);
    const container = await this.reported(host, instanceId, requestId);
    await this.assertNoQueuedCleanup(hostId, instanceId);
    unwrap(checkAdoptionLabels(container, req.groupId, req.variantId));

    const { group, variant, template } = await resolveVariant(store, req.groupId, req.variantId);
    const user = unwrap(adoptedUser(container.user, this.deps.endercloudUser, template.spec.user));
    const name = assertId('name', req.name ?? defaultAdoptedName(group.id, instanceId));
    const memoryMb = memoryFor(variant, template.spec);

    const instance = await store.transaction(async (tx) => {
      // Under the caps lock (held to commit): a concurrent adopt or create can neither pass a cap nor write the same id.
      await assertRoom(tx, group, template, this.deps.maxTotalInstances);
      const existing = await tx.instances.get(instanceId);
      if (existing) throw alreadyManaged(existing);
      if (await tx.instances.getByName(name))
        throw new AppError('CONFLICT', `an instance named ${name} already exists; choose another with name (ectl: --name)`);
      if (!(await tx.hosts.reserveMemory(hostId, memoryMb, { statuses: [...ADOPTABLE_HOST_STATUSES] }))) {
        throw new AppError(
          'NO_CAPACITY',
          `host ${hostId} has not ${memoryMb} MiB left to reserve for instance ${instanceId} (variant ${variant.id}); free memory on it or raise its reported memory`,
        );
      }
      const now = clock.now();
      const draft = buildInstance({
        id: instanceId,
        name,
        group,
        variant,
        template,
        hostId,
        now,
        desiredState: 'stopped',
        user,
        ...(this.deps.generateSecret ? { generateSecret: this.deps.generateSecret } : {}),
      });
      const lifecycle = adoptedLifecycle(container, now);
      const created = await tx.instances.create({
        ...draft,
        ...pendingSecrets(draft.secretSettings, now),
        ...lifecycle,
        stateReason: `adopted from host ${hostId}`,
        sessionId: container.sessionId ?? null,
        hostPort: container.hostPort,
        endpoint: adoptedEndpoint(host.gameAddress, container.hostPort),
        // Recorded as the container runs, so reconciliation sees no drift.
        containerConfig: {
          ...draft.containerConfig,
          image: container.image ?? draft.containerConfig.image,
          labels: container.labels ?? draft.containerConfig.labels,
        },
      });
      await tx.revisions.append({
        instanceId,
        revision: 1,
        createdAt: now,
        actor,
        reason: 'adopted',
        config: revisionConfig(created, template.spec),
      });
      // Leaves the host's unclaimed set with the commit (or not at all).
      const wasListed = await tx.unclaimed.remove(hostId, instanceId);
      await tx.history.append({
        instanceId,
        at: now,
        from: null,
        to: created.state,
        actor,
        commandId: null,
        reason: `adopted: existing container ${container.containerName} (${container.state}) on host ${hostId}; container and data unchanged`,
        details: {
          hostId,
          containerId: container.containerId,
          containerState: container.state,
          hostPort: container.hostPort,
          memoryMb,
          image: created.containerConfig.image,
          templateImage: template.spec.image,
          wasListedUnclaimed: wasListed,
        },
      });
      return created;
    });
    this.deps.logger.info(
      { hostId, instanceId, groupId: group.id, variantId: variant.id, actor, state: instance.state, requestId },
      'unclaimed container adopted',
    );
    this.deps.onAdopted(instance);
    return { instance, container };
  }

  private async assertNotStored(instanceId: string): Promise<void> {
    const existing = await this.deps.store.instances.get(instanceId);
    if (existing) throw alreadyManaged(existing);
  }

  /** The live inventory, not the last recovery's list: the container must exist now. */
  private async reported(host: Host, instanceId: string, requestId: string): Promise<ReportedContainer> {
    const inventory = await this.deps.driver.inventory(host, { requestId });
    const found = inventory.find((c) => c.instanceId === instanceId);
    if (!found) throw new AppError('NOT_FOUND', `host ${host.id} reports no unclaimed container for instance ${instanceId}`);
    return found;
  }

  /** An operator's queued delete of this container would remove it under the new record. */
  private async assertNoQueuedCleanup(hostId: string, instanceId: string): Promise<void> {
    const open = await this.deps.store.commands.list({ hostId, statuses: ['pending', 'dispatched'], limit: 1000 });
    const cleanup = open.find(
      (c) => c.kind === 'cleanup' && Array.isArray(c.payload.instanceIds) && c.payload.instanceIds.includes(instanceId),
    );
    if (cleanup)
      throw new AppError(
        'CONFLICT',
        `a removal of the container of instance ${instanceId} is queued (command ${cleanup.id}); wait for it to finish`,
      );
  }
}

function alreadyManaged(existing: Instance): AppError {
  return new AppError(
    'CONFLICT',
    `instance ${existing.id} is already managed by the store (${existing.name} on host ${existing.hostId ?? '(none)'}); it cannot be adopted again`,
    {
      details: { instanceId: existing.id, hostId: existing.hostId },
    },
  );
}
