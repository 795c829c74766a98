// Transfers: POST /transfers (record + RCON move when connected), the router's
// POST /transfers/claim (consumed atomically), GET /transfers, and
// POST /instances/:id/evacuate (everyone off an instance).

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { TRANSFER_STATUSES, type Transfer, type TransferTarget } from '../../domain/index.js';
import { ContractError, parseTransferClaimRequest } from '../../protocol/registry-contract.js';
import { AppError } from '../../shared/errors.js';
import { ROUTER_ACCESS, readScope, writeScope } from '../auth/scopes.js';
import { actorOf, type ServerContext } from '../context.js';
import type { RegistryFeed } from '../registry/registry-feed.js';
import { DEFAULT_DRAIN_MS, DEFAULT_TRANSFER_TTL_MS, type TransferService } from '../registry/transfer-service.js';
import { IdString } from '../schemas/common.js';
import { found } from './route-helpers.js';

const PlayerName = Type.String({
  minLength: 1,
  maxLength: 16,
  pattern: '^[^\\s\\x00-\\x1f]+$',
  description: 'name as sent in Login Start',
});
const Uuid = Type.String({ pattern: '^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$' });
const Target = Type.Object(
  { instance: Type.Optional(IdString), group: Type.Optional(IdString), session: Type.Optional(IdString) },
  { additionalProperties: false, minProperties: 1, maxProperties: 1, description: 'exactly one of instance, group, session' },
);
const CreateBody = Type.Object(
  {
    player: PlayerName,
    uuid: Type.Optional(Uuid),
    target: Target,
    ttlSeconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 3600, description: 'how long the transfer waits for the login (default 60)' }),
    ),
    move: Type.Optional(Type.Boolean({ description: 'RCON-transfer the player now when connected (default true)' })),
  },
  { additionalProperties: false },
);
const ListQuery = Type.Object({
  player: Type.Optional(PlayerName),
  status: Type.Optional(Type.Union(TRANSFER_STATUSES.map((s) => Type.Literal(s)))),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
});
const EvacuateBody = Type.Object(
  {
    target: Type.Optional(Target),
    ttlSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
    drainSeconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 86_400, description: 'how long the instance takes no initial joins (default 300)' }),
    ),
  },
  { additionalProperties: false },
);
const InstanceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });

function toTarget(t: Static<typeof Target>): TransferTarget {
  if (t.instance !== undefined) return { kind: 'instance', id: t.instance };
  if (t.group !== undefined) return { kind: 'group', id: t.group };
  return { kind: 'session', id: t.session! };
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function transferView(t: Transfer) {
  return {
    id: t.id,
    player: t.player,
    uuid: t.playerUuid,
    target: { [t.target.kind]: t.target.id },
    status: t.status,
    resolvedInstanceId: t.resolvedInstanceId,
    createdAt: iso(t.createdAt),
    expiresAt: iso(t.expiresAt),
    consumedAt: iso(t.consumedAt),
  };
}

export interface TransferRouteDeps {
  transfers: TransferService;
  feed: RegistryFeed;
}

export async function transferRoutes(api: FastifyInstance, ctx: ServerContext, deps: TransferRouteDeps): Promise<void> {
  const audit = (
    req: { id: string; principal?: { name: string } },
    action: string,
    targetKind: string,
    targetId: string,
    params: Record<string, string | number | boolean | null>,
  ) =>
    ctx.auditLog.append({
      at: ctx.clock.now(),
      actor: actorOf(req),
      action,
      targetKind,
      targetId,
      params,
      result: 'ok',
      errorCode: null,
      requestId: req.id,
    });

  api.post(
    '/transfers',
    {
      schema: { tags: ['transfers'], summary: 'Record where a player goes next; move them now with RCON when connected', body: CreateBody },
      config: { auth: { scope: writeScope('instances') } },
    },
    async (req, reply) => {
      const body = req.body as Static<typeof CreateBody>;
      const transfer = await deps.transfers.create({
        player: body.player,
        uuid: body.uuid ?? null,
        target: toTarget(body.target),
        ttlMs: (body.ttlSeconds ?? DEFAULT_TRANSFER_TTL_MS / 1000) * 1000,
      });
      const target = await deps.transfers.resolve(transfer.target);
      const move =
        body.move === false
          ? { moved: false, fromInstanceId: null, reason: 'not requested' }
          : await deps.transfers.moveConnected(body.player, target?.id);
      await audit(req, 'transfer.create', 'transfer', transfer.id, {
        player: body.player,
        target: `${transfer.target.kind}:${transfer.target.id}`,
        moved: move.moved,
      });
      return reply.status(201).send({ transfer: transferView(transfer), move });
    },
  );

  api.post(
    '/transfers/claim',
    {
      schema: {
        tags: ['transfers', 'router'],
        summary: "The router claims a player's pending transfer (consumed atomically; 404 when none)",
      },
      config: { auth: { scope: ROUTER_ACCESS } },
    },
    async (req) => {
      let request;
      try {
        request = parseTransferClaimRequest(req.body);
      } catch (err) {
        if (err instanceof ContractError) throw new AppError('VALIDATION_FAILED', err.message);
        throw err;
      }
      const claim = found(
        await deps.transfers.claim(request.player, request.uuid),
        'NOT_FOUND',
        `no pending transfer for ${request.player}`,
      );
      return claim;
    },
  );

  api.get(
    '/transfers',
    {
      schema: { tags: ['transfers'], summary: 'Recent transfers, newest first', querystring: ListQuery },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const q = req.query as Static<typeof ListQuery>;
      const list = await deps.transfers.recent({
        ...(q.player ? { player: q.player } : {}),
        ...(q.status ? { status: q.status as Transfer['status'] } : {}),
        limit: q.limit ?? 100,
      });
      return { transfers: list.map(transferView) };
    },
  );

  api.post(
    '/instances/:id/evacuate',
    {
      schema: {
        tags: ['transfers', 'instances'],
        summary: 'Transfer every connected player off an instance',
        params: InstanceParams,
        body: Type.Optional(EvacuateBody),
      },
      config: { auth: { scope: writeScope('instances') } },
    },
    async (req) => {
      const { id } = req.params as Static<typeof InstanceParams>;
      const body = (req.body ?? {}) as Static<typeof EvacuateBody>;
      const instance = found(await deps.transfers.instanceByIdOrName(id), 'INSTANCE_NOT_FOUND', `instance ${id} does not exist`);
      const target = body.target ? toTarget(body.target) : undefined;
      if (target?.kind === 'instance' && (target.id === instance.id || target.id === instance.name))
        throw new AppError('VALIDATION_FAILED', 'body/target must not be the instance being evacuated');
      const result = await deps.transfers.evacuate(instance.id, target, {
        ttlMs: (body.ttlSeconds ?? DEFAULT_TRANSFER_TTL_MS / 1000) * 1000,
        drainMs: (body.drainSeconds ?? DEFAULT_DRAIN_MS / 1000) * 1000,
      });
      await audit(req, 'instance.evacuate', 'instance', instance.id, {
        players: result.players.length,
        moved: result.players.filter((p) => p.moved).length,
        target: target ? `${target.kind}:${target.id}` : null,
      });
      return { instanceId: instance.id, draining: true, ...result };
    },
  );
}
