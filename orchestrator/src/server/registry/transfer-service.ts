// Transfers: record where a player goes next (the router claims it on the
// player's next login), move a connected player there with RCON `transfer`
// through the agent (1.20.5+, accepts-transfers), and evacuate an instance.

import { randomUUID } from 'node:crypto';
import type { Instance, PlayerSession, Transfer, TransferTarget } from '../../domain/index.js';
import type { TransferClaim } from '../../protocol/registry-contract.js';
import { AppError, isAppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import { capability, type HostDriver } from '../drivers/host-driver.js';
import type { Clock } from '../clock.js';
import type { RegistryFeed } from './registry-feed.js';
import { canRconTransfer, formatAddress, pickGroupMember } from './registry-view.js';
import type { RouterPublicAddress } from './router-address.js';
import { templateOf } from '../services/template-of.js';

/** Names that are safe inside a console command (vanilla names; offline mode may send others). */
const RCON_SAFE_NAME = /^[A-Za-z0-9_]{1,16}$/;
export const DEFAULT_TRANSFER_TTL_MS = 60_000;
export const DEFAULT_DRAIN_MS = 5 * 60_000;

export interface MoveResult {
  /** The RCON `transfer` was accepted by the server. */
  moved: boolean;
  /** The instance the player was on, when connected. */
  fromInstanceId: string | null;
  reason?: string;
}

export interface TransferServiceOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  feed: RegistryFeed;
  driver: Pick<HostDriver, 'rcon'>;
  routerAddress: RouterPublicAddress | undefined;
}

export class TransferService {
  constructor(private readonly deps: TransferServiceOptions) {}

  /** Recent transfers, newest first; pending ones past their expiry are marked expired first. */
  async recent(filter: { player?: string; status?: Transfer['status']; limit: number }): Promise<Transfer[]> {
    await this.deps.store.transfers.expire(this.deps.clock.now());
    return this.deps.store.transfers.list(filter);
  }

  /** Checks that the target exists now; the instance a group resolves to is chosen at claim time. */
  async assertTarget(target: TransferTarget): Promise<void> {
    const { store } = this.deps;
    if (target.kind === 'instance' && !(await this.instanceByIdOrName(target.id)))
      throw new AppError('INSTANCE_NOT_FOUND', `target instance ${target.id} does not exist`);
    if (target.kind === 'group' && !(await store.groups.get(target.id)))
      throw new AppError('GROUP_NOT_FOUND', `target group ${target.id} does not exist`);
    if (target.kind === 'session') {
      const session = await store.sessions.get(target.id);
      if (!session || session.status !== 'allocated')
        throw new AppError('NOT_FOUND', `target session ${target.id} does not exist or is released`);
    }
  }

  async create(input: { player: string; uuid: string | null; target: TransferTarget; ttlMs: number }): Promise<Transfer> {
    await this.assertTarget(input.target);
    const now = this.deps.clock.now();
    const target =
      input.target.kind === 'instance'
        ? { kind: 'instance' as const, id: (await this.instanceByIdOrName(input.target.id))!.id }
        : input.target;
    return this.deps.store.transfers.create({
      id: `tr-${randomUUID()}`,
      player: input.player,
      playerUuid: input.uuid,
      target,
      status: 'pending',
      resolvedInstanceId: null,
      reason: null,
      createdAt: now,
      expiresAt: now + input.ttlMs,
      consumedAt: null,
    });
  }

  /**
   * The router's claim: the newest pending transfer, resolved to an instance
   * first and consumed only then, so an unresolvable one is not lost (it stays
   * pending until it expires). Undefined: nothing to honour.
   */
  async claim(player: string, uuid: string | undefined): Promise<TransferClaim | undefined> {
    const now = this.deps.clock.now();
    const [pending] = (await this.deps.store.transfers.list({ player, status: 'pending', limit: 10 })).filter((t) => t.expiresAt > now);
    if (!pending) return undefined;
    if (uuid !== undefined && pending.playerUuid !== null && pending.playerUuid.toLowerCase() !== uuid.toLowerCase()) return undefined;
    const instance = await this.resolve(pending.target);
    if (!instance) return undefined;
    const consumed = await this.deps.store.transfers.consumePending(player, now, instance.id);
    if (!consumed) return undefined;
    // A newer transfer raced in between: honour what was consumed.
    const target = consumed.id === pending.id ? instance : await this.resolve(consumed.target);
    if (!target) return undefined;
    this.deps.logger.info({ transfer: consumed.id, player, instance: target.id }, 'transfer claimed');
    return {
      transferId: consumed.id,
      instanceId: target.id,
      address:
        this.deps.feed.get(target.id)?.address ?? (target.endpoint ? formatAddress(target.endpoint.host, target.endpoint.port) : null),
    };
  }

  /** Where a target points now; a group picks its best member from the registry view. */
  async resolve(target: TransferTarget): Promise<Instance | undefined> {
    const { store, feed } = this.deps;
    if (target.kind === 'instance') return this.instanceByIdOrName(target.id);
    if (target.kind === 'session') {
      const session = await store.sessions.get(target.id);
      return session && session.status === 'allocated' ? store.instances.get(session.instanceId) : undefined;
    }
    const backends = feed.listenerCount > 0 ? feed.backends() : (await feed.snapshot()).backends;
    const best = pickGroupMember(backends.filter((b) => b.groupId === target.id));
    return best ? store.instances.get(best.instanceId) : undefined;
  }

  /** The player's open router session (names compare case-insensitively), newest first. */
  async connectedSession(player: string): Promise<PlayerSession | undefined> {
    const lower = player.toLowerCase();
    const active = (await this.deps.store.playerSessions.listActive()).filter(
      (s) => s.playerName.toLowerCase() === lower && s.instanceId !== null,
    );
    return active.sort((a, b) => b.connectedAt - a.connectedAt)[0];
  }

  /** Sends RCON `transfer <router host> <router port> <player>` to the server the player is on. */
  async moveConnected(player: string, excludeInstanceId?: string): Promise<MoveResult> {
    const session = await this.connectedSession(player);
    if (!session?.instanceId) return { moved: false, fromInstanceId: null, reason: 'the player is not connected through a router' };
    if (session.instanceId === excludeInstanceId)
      return { moved: false, fromInstanceId: session.instanceId, reason: 'the player is already on the target instance' };
    return this.rconTransfer(session.instanceId, session.playerName);
  }

  private async rconTransfer(instanceId: string, player: string): Promise<MoveResult> {
    const base = { moved: false, fromInstanceId: instanceId };
    const router = this.deps.routerAddress;
    if (!router) return { ...base, reason: 'ENDERCLOUD_ROUTER_PUBLIC_ADDRESS is not set' };
    if (!RCON_SAFE_NAME.test(player)) return { ...base, reason: `player name ${JSON.stringify(player)} cannot be used in an RCON command` };
    const instance = await this.deps.store.instances.get(instanceId);
    if (!instance) return { ...base, reason: `instance ${instanceId} no longer exists` };
    const template = await templateOf(this.deps.store, instance);
    if (!canRconTransfer(instance, template))
      return { ...base, reason: `instance ${instance.name} does not declare RCON and accepts-transfers` };
    if (instance.state !== 'online' && instance.state !== 'degraded')
      return { ...base, reason: `instance ${instance.name} is ${instance.state}` };
    const host = instance.hostId ? await this.deps.store.hosts.get(instance.hostId) : undefined;
    if (!host) return { ...base, reason: `instance ${instance.name} has no host` };
    const rcon = template!.stop.rcon!;
    const command = `transfer ${router.host.includes(':') ? `[${router.host}]` : router.host} ${router.port} ${player}`;
    try {
      const { response } = await capability(this.deps.driver.rcon, 'rcon', host).command(host, instance.id, {
        port: rcon.port,
        password: instance.secretSettings[rcon.passwordVariable]!,
        command,
      });
      // Vanilla and the test server answer "Transferring …"; anything else is the server's refusal.
      if (!/^transferring/i.test(response.trim())) return { ...base, reason: `server answered: ${response.trim().slice(0, 200)}` };
      this.deps.logger.info({ instance: instance.id, player }, 'player moved with RCON transfer');
      return { moved: true, fromInstanceId: instanceId };
    } catch (err) {
      const reason = isAppError(err) ? `${err.code}: ${err.message}` : (err as Error).message;
      this.deps.logger.warn({ instance: instance.id, player, reason }, 'RCON transfer failed');
      return { ...base, reason };
    }
  }

  /**
   * Everyone off `instanceId`: with a target, a pending transfer each; without,
   * the router routes them as initial joins over its fallback list, and the
   * registry marks the instance `maintenance` (draining) so they do not land on it again.
   */
  async evacuate(
    instanceId: string,
    target: TransferTarget | undefined,
    opts: { ttlMs: number; drainMs: number },
  ): Promise<{ players: Array<{ player: string; transferId: string | null } & MoveResult> }> {
    if (target) await this.assertTarget(target);
    const now = this.deps.clock.now();
    this.deps.feed.drain(instanceId, now + opts.drainMs);
    const sessions = await this.deps.store.playerSessions.listActive({ instanceId });
    const seen = new Set<string>();
    const players: Array<{ player: string; transferId: string | null } & MoveResult> = [];
    for (const s of sessions) {
      const key = s.playerName.toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
      const transfer = target ? await this.create({ player: s.playerName, uuid: s.playerUuid, target, ttlMs: opts.ttlMs }) : undefined;
      players.push({ player: s.playerName, transferId: transfer?.id ?? null, ...(await this.rconTransfer(instanceId, s.playerName)) });
    }
    return { players };
  }

  async instanceByIdOrName(idOrName: string): Promise<Instance | undefined> {
    return (await this.deps.store.instances.get(idOrName)) ?? (await this.deps.store.instances.getByName(idOrName));
  }
}
