// Fleets (docs/provisioning.md): spawn and despawn, allocations from the warm buffer, the
// fleet view of a group (what each instance waits for), per-instance idle
// tiers, and the router's group joins and transfers. Scopes: `spawn:<group>`
// and `allocate:<group>` (or `*`), besides admin/manager/operator.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ContractError, parseGroupJoinRequest, parseRouterTransferRequest } from '../../protocol/registry-contract.js';
import { idleTierText, parseIdleTiers, type IdleTier } from '../../provisioning/index.js';
import { parseDuration } from '../../shared/config.js';
import { AllocationBody, DespawnBody, IdleTiersBody, SpawnBody } from '../../contracts/public-api/bodies.js';
import { AppError } from '../../shared/errors.js';
import { auditEntry, auditTarget } from '../audit.js';
import { assertGroupScope, groupScope, MANAGER_SCOPE, readScope, ROUTER_ACCESS, writeScope } from '../auth/scopes.js';
import type { ServerContext } from '../context.js';
import { userActor } from '../services/lifecycle-service.js';
import { instanceView } from '../views.js';
import { acceptedAction, hiddenForCaller, paramInstance } from './route-helpers.js';

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
/** The body's tiers (null: follow the next level), parsed by the scaling rules; the audit entry names them as text. */
function bodyTiers(req: FastifyRequest, targetId: string): IdleTier[] | null {
  const body = req.body as Static<typeof IdleTiersBody>;
  const tiers = body.idleTiers === null ? null : parseIdleTiers(body.idleTiers, 'body/idleTiers');
  auditTarget(req, targetId, { idleTiers: tiers === null ? null : idleTierText(tiers) });
  return tiers;
}

function durationMs(value: number | string | undefined, field: string): number | undefined {
  if (value === undefined || typeof value === 'number') return value;
  try {
    return parseDuration(value);
  } catch (err) {
    throw new AppError('VALIDATION_FAILED', `body/${field}: ${(err as Error).message}`, { details: { field } });
  }
}

function contract<T>(parse: (v: unknown) => T, body: unknown): T {
  try {
    return parse(body);
  } catch (err) {
    if (err instanceof ContractError) throw new AppError('VALIDATION_FAILED', err.message);
    throw err;
  }
}

export async function fleetRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  api.post(
    '/groups/:id/spawn',
    {
      schema: {
        tags: ['fleets'],
        summary: 'Spawn an instance into the group (caps and placement apply); with wait, answer once it is online',
        params: IdParams,
        body: SpawnBody,
      },
      config: { auth: { scope: groupScope('spawn') }, audit: { action: 'group.spawn', targetKind: 'group' } },
    },
    async (req, reply) => {
      const { id } = req.params as Static<typeof IdParams>;
      const body = req.body as Static<typeof SpawnBody>;
      assertGroupScope(req.principal, 'spawn', id);
      auditTarget(req, id, { ...(body.variantId ? { variantId: body.variantId } : {}), ...(body.name ? { name: body.name } : {}) });
      const waitMs = durationMs(body.wait, 'wait');
      const { instance, commandId } = await ctx.fleet.spawn(
        id,
        {
          ...(body.variantId !== undefined ? { variantId: body.variantId } : {}),
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(waitMs !== undefined ? { waitMs } : {}),
        },
        userActor(req.principal),
        req.id,
      );
      return reply
        .status(waitMs === undefined ? 202 : 200)
        .send({ ...instanceView(instance, undefined, await hiddenForCaller(ctx, req)(instance)), commandId });
    },
  );

  api.post(
    '/instances/:id/despawn',
    {
      schema: {
        tags: ['fleets'],
        summary: 'Despawn: drain, evacuate, wait until empty (bounded; force goes on), delete per the savegame policy',
        params: IdParams,
        body: DespawnBody,
      },
      config: { auth: { scope: groupScope('spawn') }, audit: { action: 'instance.despawn', targetKind: 'instance' } },
    },
    async (req, reply) => {
      const body = (req.body ?? {}) as Static<typeof DespawnBody>;
      const instance = await paramInstance(ctx, req);
      assertGroupScope(req.principal, 'spawn', instance.groupId);
      auditTarget(req, instance.id, { force: body.force === true });
      const timeoutMs = durationMs(body.timeout, 'timeout');
      const result = await ctx.fleet.despawn(
        instance.id,
        { ...(timeoutMs !== undefined ? { timeoutMs } : {}), force: body.force === true },
        userActor(req.principal),
        req.id,
      );
      return acceptedAction(reply, instance.id, { commandId: result.commandId, state: result.instance.state });
    },
  );

  api.post(
    '/groups/:id/allocations',
    {
      schema: {
        tags: ['fleets'],
        summary:
          'Allocate a Ready instance from the warm buffer to a session (one transaction; with wait, spawn one when the buffer is empty)',
        params: IdParams,
        body: AllocationBody,
      },
      config: { auth: { scope: groupScope('allocate') }, audit: { action: 'group.allocate', targetKind: 'group' } },
    },
    async (req, reply) => {
      const { id } = req.params as Static<typeof IdParams>;
      const body = (req.body ?? {}) as Static<typeof AllocationBody>;
      assertGroupScope(req.principal, 'allocate', id);
      const waitMs = durationMs(body.wait, 'wait');
      // The success entry commits with the claim itself (one commit on the hot path); a refusal is audited by the hook.
      const allocation = await ctx.fleet.allocate(
        id,
        {
          ...(body.variantId !== undefined ? { variantId: body.variantId } : {}),
          ...(body.labels ? { labels: body.labels } : {}),
          ...(body.players ? { players: body.players } : {}),
          ...(waitMs !== undefined ? { waitMs } : {}),
          audit: auditEntry(req, ctx.clock, { targetId: id, params: {} }),
        },
        userActor(req.principal),
        req.id,
      );
      req.auditInfo = {
        targetId: id,
        params: { allocationId: allocation.allocationId, instanceId: allocation.instanceId },
        recorded: true,
      };
      return reply.status(201).send({ ...allocation, allocatedAt: new Date(allocation.allocatedAt).toISOString() });
    },
  );

  api.get(
    '/groups/:id/allocations',
    {
      schema: { tags: ['fleets'], summary: "The group's current allocations", params: IdParams },
      config: { auth: { scope: readScope('groups') } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof IdParams>;
      return {
        groupId: id,
        allocations: (await ctx.fleet.listAllocations(id)).map((s) => ({
          allocationId: s.id,
          sessionId: s.id,
          instanceId: s.instanceId,
          metadata: s.metadata,
          allocatedAt: new Date(s.createdAt).toISOString(),
        })),
      };
    },
  );

  api.delete(
    '/allocations/:id',
    {
      schema: { tags: ['fleets'], summary: 'Release an allocation: the instance returns to the buffer', params: IdParams },
      config: { auth: { scope: groupScope('allocate') }, audit: { action: 'allocation.release', targetKind: 'allocation' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof IdParams>;
      auditTarget(req, id, {});
      // The group scope is checked in the release statement itself, and the entry commits with it (one round trip
      // in the common case); an allocation already released, or a refusal, is audited by the hook.
      const { session: released, recorded } = await ctx.fleet.release(id, `released by ${req.principal?.name ?? 'anonymous'}`, {
        principal: req.principal ?? { name: 'anonymous', scopes: [] },
        audit: auditEntry(req, ctx.clock),
      });
      req.auditInfo = { targetId: id, params: { instanceId: released.instanceId }, recorded };
      return {
        allocationId: released.id,
        instanceId: released.instanceId,
        status: released.status,
        releasedAt: released.releasedAt === null ? null : new Date(released.releasedAt).toISOString(),
      };
    },
  );

  api.get(
    '/groups/:id/fleet',
    {
      schema: {
        tags: ['fleets'],
        summary: 'The fleet view: buffer, allocated, min/max, and what each instance waits for ("pauses in 4 min")',
        params: IdParams,
      },
      config: { auth: { scope: readScope('groups') } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof IdParams>;
      return ctx.queries.fleet(await ctx.fleet.group(id), await ctx.idleTiers.tiers(), ctx.clock.now());
    },
  );

  api.put(
    '/instances/:id/idle-tiers',
    {
      schema: {
        tags: ['fleets'],
        summary: "Override the group's idle tiers for this instance ([]: never sleeps; null: follow the group again)",
        params: IdParams,
        body: IdleTiersBody,
      },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'instance.idle-tiers', targetKind: 'instance' } },
    },
    async (req) => {
      const instance = await paramInstance(ctx, req);
      const tiers = bodyTiers(req, instance.id);
      const updated = await ctx.idleTiers.setInstance(instance, tiers, ctx.clock.now());
      return { id: updated.id, idleTiers: updated.fleet?.idleTiers ?? null };
    },
  );

  api.put(
    '/groups/:id/idle-tiers',
    {
      schema: {
        tags: ['fleets'],
        summary: "Set how the group's worlds sleep when empty ([]: never; null: the system's default)",
        params: IdParams,
        body: IdleTiersBody,
      },
      config: { auth: { scope: writeScope('groups') }, audit: { action: 'group.idle-tiers', targetKind: 'group' } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof IdParams>;
      const tiers = bodyTiers(req, id);
      const group = await ctx.idleTiers.setGroup(id, tiers, ctx.clock.now());
      return { id: group.id, idleTiers: group.idleTiers ?? null };
    },
  );

  api.get(
    '/system/idle-tiers',
    {
      schema: { tags: ['fleets'], summary: 'The idle tiers of worlds whose instance and group set none (sleep is on by default)' },
      config: { auth: { scope: readScope('groups') } },
    },
    async () => ctx.idleTiers.system(),
  );

  api.put(
    '/system/idle-tiers',
    {
      schema: {
        tags: ['fleets'],
        summary:
          "Set the system's idle tiers ([]: worlds never sleep unless their group or instance says so; null: the configured default)",
        body: IdleTiersBody,
      },
      config: { auth: { scope: MANAGER_SCOPE }, audit: { action: 'system.idle-tiers', targetKind: 'system' } },
    },
    async (req) => {
      const tiers = bodyTiers(req, 'idle-tiers');
      return ctx.idleTiers.setSystem(tiers, ctx.clock.now());
    },
  );

  api.post(
    '/router/groups/:id/join',
    {
      schema: {
        tags: ['router'],
        summary: "A player's login to a group target: route, wake, start or spawn (router token)",
        params: IdParams,
      },
      config: { auth: { scope: ROUTER_ACCESS } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof IdParams>;
      const join = contract(parseGroupJoinRequest, req.body);
      return ctx.fleet.join(id, join.player, userActor(req.principal), req.id);
    },
  );

  api.post(
    '/router/transfers',
    {
      schema: {
        tags: ['router'],
        summary: 'Move a player to an instance now (the router sending a player back from the fallback); router token',
      },
      config: { auth: { scope: ROUTER_ACCESS } },
    },
    async (req, reply) => {
      const request = contract(parseRouterTransferRequest, req.body);
      const transfer = await ctx.transfers.create({
        player: request.player,
        uuid: request.uuid ?? null,
        target: { kind: 'instance', id: request.instanceId },
        ttlMs: 60_000,
      });
      const move = await ctx.transfers.moveConnected(request.player, request.instanceId);
      return reply.status(201).send({ transferId: transfer.id, move });
    },
  );
}
