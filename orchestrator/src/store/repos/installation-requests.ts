// Installation requests: pending asks an administrator decides once
// (see InstallationRequestRepository); the decision is a conditional update.

import type { Selectable } from 'kysely';
import type { EpochMs, InstallationRequest, InstallationRequestStatus, InstallationSuggestion } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { affected, isUniqueViolation, type StoreContext } from '../context.js';
import { fromJson, toJson } from '../json.js';
import type { InstallationRequestsTable } from '../schema.js';
import type { InstallationRequestRepository } from '../store.js';

function toRequest(r: Selectable<InstallationRequestsTable>): InstallationRequest {
  return {
    id: r.id,
    requestedBy: r.requested_by,
    groupId: r.group_id,
    variantId: r.variant_id,
    name: r.name,
    suggested: fromJson<InstallationSuggestion>(r.suggested),
    status: r.status as InstallationRequestStatus,
    decidedBy: r.decided_by,
    decisionNote: r.decision_note,
    instanceId: r.instance_id,
    createdAt: Number(r.created_at),
    decidedAt: r.decided_at === null ? null : Number(r.decided_at),
  };
}

export class KyselyInstallationRequestRepository implements InstallationRequestRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(
    req: Omit<InstallationRequest, 'status' | 'decidedBy' | 'decisionNote' | 'instanceId' | 'decidedAt'>,
  ): Promise<InstallationRequest> {
    try {
      await this.ctx.db
        .insertInto('installation_requests')
        .values({
          id: req.id,
          requested_by: req.requestedBy,
          group_id: req.groupId,
          variant_id: req.variantId,
          name: req.name,
          suggested: toJson(req.suggested),
          status: 'pending',
          decided_by: null,
          decision_note: null,
          instance_id: null,
          created_at: req.createdAt,
          decided_at: null,
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('CONFLICT', `installation request ${req.id} already exists`, { cause: err });
      throw err;
    }
    return (await this.get(req.id))!;
  }

  async get(id: string): Promise<InstallationRequest | undefined> {
    const row = await this.ctx.db.selectFrom('installation_requests').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRequest(row);
  }

  async list(filter: { requestedBy?: string; status?: InstallationRequestStatus } = {}): Promise<InstallationRequest[]> {
    let q = this.ctx.db.selectFrom('installation_requests').selectAll();
    if (filter.requestedBy !== undefined) q = q.where('requested_by', '=', filter.requestedBy);
    if (filter.status !== undefined) q = q.where('status', '=', filter.status);
    return (await q.orderBy('created_at').orderBy('id').execute()).map(toRequest);
  }

  async decide(
    id: string,
    d: { status: 'approved' | 'rejected'; decidedBy: string; note?: string | null; instanceId?: string | null; now: EpochMs },
  ): Promise<InstallationRequest | undefined> {
    const result = await this.ctx.db
      .updateTable('installation_requests')
      .set({
        status: d.status,
        decided_by: d.decidedBy,
        decision_note: d.note ?? null,
        instance_id: d.instanceId ?? null,
        decided_at: d.now,
      })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    if (affected(result) > 0) return this.get(id);
    if (!(await this.get(id))) throw new AppError('NOT_FOUND', `installation request ${id} does not exist`);
    return undefined;
  }
}
