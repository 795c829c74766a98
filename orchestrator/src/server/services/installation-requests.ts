// Installation requests (docs/orchestrator.md "Installation requests"): a user
// with `instances:request` asks for an instance; an administrator approves
// (the normal creation path: validation, caps, placement) or rejects. A request
// never creates anything by itself. Approving creates the instance and decides
// the request in one transaction: two concurrent approvals make one instance,
// and a refused creation leaves the request pending.

import { randomBytes } from 'node:crypto';
import type { Command, Instance, InstallationRequest, InstallationRequestStatus, JsonObject } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { InstanceCreator } from './instance-creator.js';

export interface InstallationRequestServiceOptions {
  store: Store;
  clock: Clock;
  creator: InstanceCreator;
}

export interface AskInput {
  requestedBy: string;
  groupId: string;
  variantId: string;
  name?: string;
  suggested: { settings?: JsonObject; note?: string };
}

function stillPending(r: InstallationRequest): void {
  if (r.status !== 'pending')
    throw new AppError('CONFLICT', `installation request ${r.id} was already ${r.status}${r.decidedBy ? ` by ${r.decidedBy}` : ''}`);
}

export class InstallationRequestService {
  constructor(private readonly deps: InstallationRequestServiceOptions) {}

  /** Stores a pending request for an existing group and variant. */
  async ask(input: AskInput): Promise<InstallationRequest> {
    const { store, clock } = this.deps;
    const group = await store.groups.get(input.groupId);
    if (!group) throw new AppError('GROUP_NOT_FOUND', `group ${input.groupId} does not exist`);
    if (!group.variants.some((v) => v.id === input.variantId)) {
      throw new AppError(
        'VALIDATION_FAILED',
        `body/variantId: group ${group.id} has no variant ${input.variantId} (it has ${group.variants.map((v) => v.id).join(', ')})`,
        { details: { field: 'variantId' } },
      );
    }
    return store.installationRequests.create({
      id: `ir-${randomBytes(6).toString('hex')}`,
      requestedBy: input.requestedBy,
      groupId: group.id,
      variantId: input.variantId,
      name: input.name ?? null,
      suggested: input.suggested,
      createdAt: clock.now(),
    });
  }

  get(id: string): Promise<InstallationRequest | undefined> {
    return this.deps.store.installationRequests.get(id);
  }

  list(filter: { requestedBy?: string; status?: InstallationRequestStatus }): Promise<InstallationRequest[]> {
    return this.deps.store.installationRequests.list(filter);
  }

  /**
   * Creates the instance through the normal creation path and marks the request
   * approved in the same transaction. A request decided meanwhile (another
   * approval, a rejection) is CONFLICT and nothing is created; a refused
   * creation (caps, capacity, name taken) leaves the request pending.
   */
  async approve(
    id: string,
    decision: { decidedBy: string; name?: string; note?: string; requestId: string },
  ): Promise<{ request: InstallationRequest; instance: Instance; command: Command }> {
    const request = await this.found(id);
    stillPending(request);
    const name = decision.name ?? request.name ?? undefined;
    let decided: InstallationRequest | undefined;
    const { instance, command } = await this.deps.creator.create(
      { groupId: request.groupId, variantId: request.variantId, ...(name !== undefined ? { name } : {}) },
      decision.decidedBy,
      decision.requestId,
      undefined,
      async (tx, created) => {
        decided = await tx.installationRequests.decide(id, {
          status: 'approved',
          decidedBy: decision.decidedBy,
          note: decision.note ?? null,
          instanceId: created.instance.id,
          now: this.deps.clock.now(),
        });
        if (!decided) stillPending((await tx.installationRequests.get(id)) ?? request);
        if (!decided) throw new AppError('CONFLICT', `installation request ${id} was decided concurrently`);
      },
    );
    return { request: decided!, instance, command };
  }

  /** Marks a pending request rejected with the note; nothing is created. */
  async reject(id: string, decision: { decidedBy: string; note: string }): Promise<InstallationRequest> {
    stillPending(await this.found(id));
    const decided = await this.deps.store.installationRequests.decide(id, {
      status: 'rejected',
      decidedBy: decision.decidedBy,
      note: decision.note,
      now: this.deps.clock.now(),
    });
    if (!decided) stillPending((await this.deps.store.installationRequests.get(id))!);
    if (!decided) throw new AppError('CONFLICT', `installation request ${id} was decided concurrently`);
    return decided;
  }

  private async found(id: string): Promise<InstallationRequest> {
    const r = await this.deps.store.installationRequests.get(id);
    if (!r) throw new AppError('NOT_FOUND', `installation request ${id} does not exist`);
    return r;
  }
}
