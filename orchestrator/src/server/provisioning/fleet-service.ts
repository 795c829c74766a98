// Fleets (docs/provisioning.md): spawn into a group, despawn (the durable drain →
// evacuate → wait → delete action), allocation of a Ready buffer instance to
// a session in one transaction (never twice), release, and the router's
// group joins. Decisions are the pure provisioning core's; caps and placement
// are the instance creator's atomic path.

import { randomUUID } from 'node:crypto';
import type { AuditEvent, Group, Instance, Session } from '../../domain/index.js';
import type { Actor } from '../../lifecycle/actions.js';
import {
  chooseInstances,
  explainNoMatch,
  loginExpected,
  rankAllocatable,
  startIdleClock,
  type FleetHost,
  type FleetInstance,
} from '../../provisioning/index.js';
import { joinRefusalMessage } from '../../provisioning/join-refusal.js';
import type { GroupJoinAnswer } from '../../protocol/registry-contract.js';
import { AppError } from '../../shared/errors.js';
import { assertGroupScope, groupsInScope } from '../auth/scopes.js';
import type { Logger } from '../../shared/logger.js';
import type { AllocationRow, ClaimCandidate, Store } from '../../store/store.js';
import type { ChangePort } from '../changes/change-port.js';
import type { Clock } from '../clock.js';
import type { InstanceCreator } from '../services/instance-creator.js';
import type { LifecycleService } from '../services/lifecycle-service.js';
import { DEFAULT_DESPAWN_TIMEOUT_MS } from '../lifecycle-engine/fleet-actions.js';
import { fleetInstance, readGroup } from './fleet-view.js';
import { KeptReads } from '../../shared/kept-reads.js';
import { sleep } from '../../shared/timers.js';

export interface SpawnRequest {
  variantId?: string;
  name?: string;
  /** Answer once the instance is online, waiting at most this long (ms); absent: answer at once. */
  waitMs?: number;
}

export interface AllocationRequest {
  variantId?: string;
  labels?: Record<string, string>;
  /** Players expected in the session (kept with the allocation). */
  players?: string[];
  /** With an empty buffer, spawn one and answer when it is online, waiting at most this long (ms). */
  waitMs?: number;
  /** The request's audit entry: committed with the claim (params get allocationId and instanceId). */
  audit?: Omit<AuditEvent, 'id'>;
}

export interface Allocation {
  allocationId: string;
  sessionId: string;
  instanceId: string;
  groupId: string;
  endpoint: string | null;
  allocatedAt: number;
}

export interface DespawnRequest {
  /** How long players get to leave after the drain (ms). */
  timeoutMs?: number;
  /** Delete even when players are still on after the timeout. */
  force?: boolean;
  reason?: string;
}

export interface FleetServiceDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  creator: InstanceCreator;
  lifecycle: LifecycleService;
  sleep?: (ms: number) => Promise<void>;
  /** How often a waiting spawn or allocation looks again. */
  pollMs?: number;
  /** When given, a waiting spawn looks again as soon as its instance changes, not only every pollMs. */
  changes?: ChangePort;
}

/** Fresh reads of the group per allocation when concurrent allocators took every candidate of the previous one. */
const ALLOCATION_READS = 3;
/** Candidates offered to one claim statement, best first (the store takes the first still free). */
const CLAIM_BATCH = 16;

/**
 * How long an allocation may reuse a group it read: allocations are the hot
 * path, a group changes rarely, every change to it (on any replica, through
 * the change port) drops it at once, and the claim re-checks the instance
 * itself atomically. The bound covers a change notification that was lost.
 */
const GROUP_CACHE_MS = 1000;

/**
 * How long allocations share one read of the hosts' status and instance
 * counts. The count only orders candidates (packed or distributed), and every
 * host change (status, maintenance, a new or deleted host; on any replica,
 * through the change port) drops the read at once, so the bound only covers
 * instances created or deleted since: a preference, never a correctness
 * condition (the claim re-checks the instance atomically). Counting per
 * allocation cost a scan of every instance at 10,000 of them.
 */
const HOST_VIEW_MS = 1000;

/**
 * How long allocations may choose from a group's rows as last read (and as
 * this process's own claims and releases have changed them since) instead
 * of reading them again. The rows only order and offer candidates: the claim
 * takes a candidate only at the version it was read at and still
 * unallocated, so a row another writer changed since (a claim on another
 * replica, a stop, a drain) is skipped, never taken. What a stale view can
 * miss is an instance that became free or online meanwhile: it is offered
 * at the next read, and no allocation concludes the buffer is exhausted
 * without a fresh read.
 */
const GROUP_ROWS_MS = 1000;

/** A group's allocation rows as last read, kept current with this process's own claims and releases. */
interface GroupRows {
  rows: AllocationRow[];
  /** Row index by instance id. */
  index: ReadonlyMap<string, number>;
}

export class FleetService {
  private readonly groups: KeptReads<string, Group>;
  /** Every host's status and instance count, under one key. */
  private readonly hosts: KeptReads<'all', ReadonlyMap<string, FleetHost>>;
  private readonly rows: KeptReads<string, GroupRows>;
  /** The last router join per group, settled or not: the next one waits for it (FleetService.join). */
  private readonly joins = new Map<string, Promise<void>>();

  constructor(private readonly deps: FleetServiceDeps) {
    const now = () => deps.clock.now();
    this.groups = new KeptReads({ ttlMs: GROUP_CACHE_MS, now });
    this.hosts = new KeptReads({ ttlMs: HOST_VIEW_MS, now });
    this.rows = new KeptReads({ ttlMs: GROUP_ROWS_MS, now });
    deps.changes?.subscribe((c) => {
      if (c.kind === 'host' || c.kind === 'system') this.hosts.dropAll();
      if (c.kind === 'group' && c.id !== undefined) {
        this.groups.drop(c.id);
        this.rows.drop(c.id);
      } else if (c.kind === 'group' || c.kind === 'system') {
        // a resync, or a change without an id
        this.groups.dropAll();
        this.rows.dropAll();
      }
    });
  }

  private get now(): number {
    return this.deps.clock.now();
  }

  async group(groupId: string): Promise<Group> {
    const group = await this.deps.store.groups.get(groupId);
    if (!group) throw new AppError('GROUP_NOT_FOUND', `group ${groupId} does not exist`);
    return group;
  }

  /** The group as read at most GROUP_CACHE_MS ago and not changed since (allocations). */
  private recentGroup(groupId: string): Promise<Group> {
    return this.groups.get(groupId, () => this.group(groupId));
  }

  /** Every host's status and instance count as read at most HOST_VIEW_MS ago and not changed since (allocations). */
  private recentHosts(): Promise<ReadonlyMap<string, FleetHost>> {
    const { store } = this.deps;
    return this.hosts.get('all', async () => {
      const [hosts, counts] = await Promise.all([store.hosts.list(), store.instances.countByHost()]);
      return new Map(hosts.map((h): [string, FleetHost] => [h.id, { id: h.id, instanceCount: counts[h.id] ?? 0, status: h.status }]));
    });
  }

  /** The group's allocation rows: as kept (GROUP_ROWS_MS) when `kept` allows it, else read now (and kept). */
  private async groupRows(groupId: string, kept: boolean): Promise<{ rows: AllocationRow[]; fresh: boolean }> {
    const hit = kept ? this.rows.peek(groupId) : undefined;
    if (hit) return { rows: hit.rows, fresh: false };
    const read = await this.rows.read(groupId, async () => {
      const rows = await this.deps.store.instances.allocationRows(groupId);
      return { rows, index: new Map(rows.map((r, n) => [r.id, n])) };
    });
    return { rows: read.rows, fresh: true };
  }

  /** Records this process's own claim or release in the kept rows (a newer version only: answers may arrive out of order). */
  private keepRow(groupId: string | null, instanceId: string, version: number, allocated: boolean): void {
    if (groupId === null) return;
    this.rows.update(groupId, (kept) => {
      const at = kept.index.get(instanceId);
      if (at === undefined || kept.rows[at]!.version >= version) return kept;
      // A new array: an allocation ranking the previous one meanwhile keeps what it read.
      const rows = [...kept.rows];
      rows[at] = { ...rows[at]!, version, allocated };
      return { rows, index: kept.index };
    });
  }

  /** Creates and starts one instance in the group through the normal caps and placement (the buffer fills with it once online). */
  async spawn(groupId: string, req: SpawnRequest, actor: Actor, requestId: string): Promise<{ instance: Instance; commandId: string }> {
    const group = await this.group(groupId);
    const variantId = req.variantId ?? group.variants[0]?.id;
    if (!variantId) throw new AppError('VALIDATION_FAILED', `group ${groupId} has no variant to spawn`);
    const { instance, command } = await this.deps.creator.create(
      { groupId, variantId, ...(req.name !== undefined ? { name: req.name } : {}), start: true },
      actor.name,
      requestId,
    );
    this.deps.logger.info({ groupId, instanceId: instance.id, actor: actor.name }, 'spawned');
    if (req.waitMs === undefined) return { instance, commandId: command.id };
    return { instance: await this.waitOnline(instance.id, req.waitMs), commandId: command.id };
  }

  /** Despawn: one durable action (drain, evacuate, wait until empty, delete per the group's savegame policy). */
  async despawn(
    idOrName: string,
    req: DespawnRequest,
    actor: Actor,
    requestId: string,
  ): Promise<{ instance: Instance; commandId: string | null }> {
    const instance = await this.deps.lifecycle.find(idOrName);
    const group = await this.group(instance.groupId);
    const timeoutMs = req.timeoutMs ?? DEFAULT_DESPAWN_TIMEOUT_MS;
    const result = await this.deps.lifecycle.request(instance.id, 'despawn', actor, {
      requestId,
      reason: req.reason ?? `despawn requested by ${actor.name}`,
      payload: {
        timeoutMs,
        force: req.force === true,
        savegame: group.scaling?.savegame.mode ?? 'archive',
        reason: req.reason ?? `despawn by ${actor.name}`,
      },
    });
    return { instance: await this.deps.lifecycle.find(instance.id), commandId: result.commandId };
  }

  /** Takes a Ready, unallocated instance of the group for a session, in one transaction. */
  async allocate(groupId: string, req: AllocationRequest, actor: Actor, requestId: string): Promise<Allocation> {
    const group = await this.recentGroup(groupId);
    if (req.variantId !== undefined && !group.variants.some((v) => v.id === req.variantId)) {
      throw new AppError('VALIDATION_FAILED', `body/variantId: group ${groupId} has no variant ${req.variantId}`);
    }
    const first = await this.tryAllocate(group, req, actor);
    if (first) return first;
    if (req.waitMs === undefined) {
      throw new AppError('CAPACITY_EXHAUSTED', `${await this.noMatch(group, req)}${req.labels ? '' : ' (ask with wait to spawn one)'}`, {
        details: { groupId },
      });
    }
    const deadline = this.now + req.waitMs;
    try {
      await this.ensureComing(group, req, actor, requestId);
    } catch (err) {
      // At a limit (or without host capacity): the refusal names it, after what the allocation missed.
      if (err instanceof AppError && (err.code === 'CAP_REACHED' || err.code === 'NO_CAPACITY')) {
        throw new AppError(err.code, `${await this.noMatch(group, req)}, and none can be spawned: ${err.message}`, {
          retryable: err.retryable,
          details: { groupId, ...(err.details ?? {}) },
        });
      }
      throw err;
    }
    while (this.now < deadline) {
      await this.sleep(Math.min(this.deps.pollMs ?? 100, Math.max(1, deadline - this.now)));
      const got = await this.tryAllocate(group, req, actor);
      if (got) return got;
    }
    throw new AppError(
      'TIMEOUT',
      `no instance of group ${groupId} became allocatable within ${req.waitMs} ms (one is being spawned): ${await this.noMatch(group, req)}`,
    );
  }

  /** What the allocation's last (fresh) read of the group had, and which asked labels no Ready instance has (explainNoMatch). */
  private async noMatch(group: Group, req: AllocationRequest): Promise<string> {
    const [{ rows }, hosts] = await Promise.all([this.groupRows(group.id, true), this.recentHosts()]);
    const snap = allocationSnapshot(rows, hosts);
    return explainNoMatch(group.id, snap.fleet, snap.hosts, {
      ...(req.variantId !== undefined ? { variantId: req.variantId } : {}),
      ...(req.labels ? { labels: req.labels } : {}),
    });
  }

  /**
   * Ends an allocation: the instance returns to the buffer (if still online)
   * and may be scaled down again. One atomic store call (with `audit`, the
   * entry commits with it: `recorded`); with `principal`,
   * only in the groups it may allocate in (checked in the same statement):
   * FORBIDDEN for another group's allocation, NOT_FOUND for an unknown one.
   * An allocation already released is answered as it is.
   */
  async release(
    allocationId: string,
    reason: string,
    opts: { principal?: { name: string; scopes: readonly string[] }; audit?: Omit<AuditEvent, 'id'> } = {},
  ): Promise<{ session: Session; recorded: boolean }> {
    const { store } = this.deps;
    const { principal, audit } = opts;
    const allowed = principal ? groupsInScope(principal, 'allocate') : 'all';
    const released = await store.instances.releaseSession(allocationId, this.now, {
      ...(allowed === 'all' ? {} : { groupIds: allowed }),
      ...(audit ? { audit } : {}),
    });
    if (!released) {
      const session = await store.sessions.get(allocationId);
      if (!session) throw new AppError('NOT_FOUND', `allocation ${allocationId} does not exist`);
      if (principal) assertGroupScope(principal, 'allocate', session.groupId ?? '');
      if (session.status === 'allocated')
        throw new AppError('CONFLICT', `allocation ${allocationId} changed concurrently; retry`, {
          // A race with a concurrent allocator, not a refusal: the caller's retry reads the new rows.
          retryable: true,
        });
      return { session, recorded: false }; // already released
    }
    if (released.freedVersion !== undefined)
      this.keepRow(released.session.groupId, released.session.instanceId, released.freedVersion, false);
    this.deps.logger.info({ allocationId, instanceId: released.session.instanceId, reason }, 'allocation released');
    return { session: released.session, recorded: audit !== undefined };
  }

  async listAllocations(groupId: string): Promise<Session[]> {
    await this.group(groupId);
    return this.deps.store.sessions.list({ groupId, status: 'allocated' });
  }

  /**
   * A player's login to a `group:` router target: a Running instance with
   * room (route), else a paused one (wake), a stopped or archived one (start),
   * else a new one within the caps (spawn) — also for a fleet scaled to zero.
   * CAPACITY_EXHAUSTED when none, with the limit in a player's words
   * (`details.playerMessage`). Joins to one group take turns in this process,
   * so a crowd arriving at an empty fleet spawns one world, not one each.
   */
  join(groupId: string, player: string, actor: Actor, requestId: string): Promise<GroupJoinAnswer> {
    const previous = this.joins.get(groupId) ?? Promise.resolve();
    const turn = previous.then(() => this.joinNow(groupId, player, actor, requestId));
    const settled = turn.then(
      () => undefined,
      () => undefined,
    );
    this.joins.set(groupId, settled);
    void settled.then(() => {
      if (this.joins.get(groupId) === settled) this.joins.delete(groupId);
    });
    return turn;
  }

  private async joinNow(groupId: string, player: string, actor: Actor, requestId: string): Promise<GroupJoinAnswer> {
    const group = await this.group(groupId);
    const snap = await readGroup(this.deps.store, groupId);
    // An instance on a host that is down is Stale to the router: never the answer (a world elsewhere is);
    // the chooser's 'serving' hosts (ONLINE, MAINTENANCE) are the ones a login may go to.
    const usable = snap.instances.filter((i) => !i.fleet?.draining && i.sessionId === null && snap.hostsById.has(i.hostId ?? ''));
    const room = (i: Instance) =>
      i.players === null || i.players.max === 0 || fleetInstance(i, snap.routerPlayers).playersOnline < i.players.max;
    // Which world of a state: the one chooser (provisioning/instance-choice.ts), per the group's placement.
    const choose = (instances: readonly Instance[]): Instance | undefined => {
      const ids = new Set(instances.map((i) => i.id));
      const best = chooseInstances(
        snap.fleet.filter((f) => ids.has(f.id)),
        { placement: group.placement, hosts: snap.hosts, groupInstances: snap.fleet },
        'serving',
      )[0];
      return best && instances.find((i) => i.id === best.id);
    };
    const online = choose(usable.filter((i) => i.state === 'online' && room(i)));
    if (online) {
      await this.expectLogin(online);
      return { instanceId: online.id, action: 'route', commandId: null };
    }
    const waking = choose(usable.filter((i) => i.state === 'starting' || i.state === 'installing'));
    if (waking) {
      await this.expectLogin(waking);
      return { instanceId: waking.id, action: 'start', commandId: waking.activeAction?.commandId ?? null };
    }
    for (const [state, action, kind] of [
      ['paused', 'resume', 'wake'],
      ['stopped', 'start', 'start'],
      ['archived', 'start', 'start'],
    ] as const) {
      const candidate = choose(usable.filter((i) => i.state === state));
      if (!candidate) continue;
      const res = await this.deps.lifecycle.request(candidate.id, action, actor, {
        requestId,
        reason: `login of ${player} through the router (group ${groupId})`,
      });
      await this.expectLogin(candidate);
      return { instanceId: candidate.id, action: kind, commandId: res.commandId };
    }
    // Maintenance stops a router's spawn as it stops its wakes (the lifecycle refuses those for automatic actors).
    const maintenance = actor.kind === 'system' ? await this.deps.lifecycle.globalMaintenance() : null;
    if (maintenance)
      throw new AppError('MAINTENANCE', `EnderCloud is in maintenance: ${maintenance.message}`, { details: { action: 'spawn' } });
    try {
      const { instance, commandId } = await this.spawn(group.id, {}, actor, requestId);
      this.deps.logger.info({ groupId, instanceId: instance.id, player }, 'spawned for a router join');
      return { instanceId: instance.id, action: 'spawn', commandId };
    } catch (err) {
      if (err instanceof AppError && (err.code === 'CAP_REACHED' || err.code === 'NO_CAPACITY')) {
        const playerMessage = joinRefusalMessage(groupId, err);
        this.deps.logger.info(
          { groupId, player, cause: err.code, reason: err.message },
          'router join refused: no world with room and none can be spawned',
        );
        throw new AppError('CAPACITY_EXHAUSTED', `group ${groupId} has no instance with room and cannot spawn one: ${err.message}`, {
          details: { cause: err.code, playerMessage, ...limitOf(err) },
        });
      }
      throw err;
    }
  }

  /**
   * The join's answer names this instance: its empty run restarts now
   * (loginExpected), so the idle tiers and the scale-down leave it be until
   * the router reports the login. Written only while it counts as empty.
   */
  private async expectLogin(instance: Instance): Promise<void> {
    const now = this.deps.clock.now();
    const latest = (await this.deps.store.instances.get(instance.id)) ?? instance;
    const prev = latest.fleet?.idle ?? startIdleClock(latest.stateChangedAt);
    const next = loginExpected(prev, now);
    if (latest.fleet?.idle && next.emptySince === prev.emptySince) return;
    await this.deps.store.instances.update(latest.id, { fleet: { ...(latest.fleet ?? {}), idle: next } }, { now });
  }

  /**
   * The group's rows (as kept, GROUP_ROWS_MS), then one claim of the best
   * CLAIM_BATCH candidates of rankAllocatable: the store takes the first of
   * them still free, skipping those concurrent allocators hold or took, so a
   * crowd spreads over the buffer instead of all contending for the best
   * one. When every one of them was taken, the next batch of the same rows
   * is tried; then the rows are read again, up to ALLOCATION_READS times.
   * Undefined (exhausted) only after a fresh read.
   */
  private async tryAllocate(group: Group, req: AllocationRequest, actor: Actor): Promise<Allocation | undefined> {
    const filter = { ...(req.variantId !== undefined ? { variantId: req.variantId } : {}), ...(req.labels ? { labels: req.labels } : {}) };
    let kept = true; // the first look may use the kept rows; every later one reads
    for (let reads = 0; reads < ALLOCATION_READS;) {
      const [{ rows, fresh }, hosts] = await Promise.all([this.groupRows(group.id, kept), this.recentHosts()]);
      kept = false;
      if (fresh) reads++;
      const snap = allocationSnapshot(rows, hosts);
      const ranked = rankAllocatable(snap.fleet, snap.hosts, group.placement, filter);
      if (ranked.length === 0) {
        if (fresh) return undefined;
        continue;
      }
      const version = new Map(snap.rows.map((r) => [r.id, r.version]));
      for (let at = 0; at < ranked.length; at += CLAIM_BATCH) {
        const batch = ranked.slice(at, at + CLAIM_BATCH).map((id) => ({ id, expectedVersion: version.get(id)! }));
        const claimed = await this.claim(group, batch, req, actor);
        if (claimed) return claimed;
      }
    }
    // Every candidate of every read was taken by concurrent allocators: the buffer is exhausted for now.
    return undefined;
  }

  /**
   * The claim (version-checked, unallocated, the first free candidate) and
   * the session row, atomically (one statement on PostgreSQL), with the
   * request's audit entry when it carries one; undefined when others got
   * every candidate.
   */
  private async claim(group: Group, candidates: ClaimCandidate[], req: AllocationRequest, actor: Actor): Promise<Allocation | undefined> {
    const sessionId = `alloc-${randomUUID()}`;
    const now = this.now;
    const metadata = {
      allocatedBy: actor.name,
      ...(req.players ? { players: req.players } : {}),
      ...(req.labels ? { labels: req.labels } : {}),
    };
    const audit = req.audit ? { ...req.audit, params: { ...req.audit.params, allocationId: sessionId } } : undefined;
    const instance = await this.deps.store.instances.claimForSession(candidates, sessionId, {
      now,
      session: { groupId: group.id, metadata },
      ...(audit ? { audit } : {}),
    });
    if (!instance) return undefined;
    this.keepRow(group.id, instance.id, instance.version, true);
    const endpoint = instance.endpoint
      ? `${instance.endpoint.host.includes(':') ? `[${instance.endpoint.host}]` : instance.endpoint.host}:${instance.endpoint.port}`
      : null;
    return { allocationId: sessionId, sessionId, instanceId: instance.id, groupId: group.id, endpoint, allocatedAt: now };
  }

  /** An allocation that waits: make sure an instance is on its way (one starting, or a new spawn). */
  private async ensureComing(group: Group, req: AllocationRequest, actor: Actor, requestId: string): Promise<void> {
    const snap = await readGroup(this.deps.store, group.id);
    const coming = snap.instances.some(
      (i) =>
        (i.state === 'starting' || i.state === 'installing') &&
        i.sessionId === null &&
        (req.variantId === undefined || i.variantId === req.variantId),
    );
    if (!coming) await this.spawn(group.id, req.variantId !== undefined ? { variantId: req.variantId } : {}, actor, requestId);
  }

  private async waitOnline(instanceId: string, waitMs: number): Promise<Instance> {
    const deadline = this.now + waitMs;
    for (;;) {
      const instance = await this.deps.lifecycle.find(instanceId);
      if (instance.state === 'online') return instance;
      if (instance.state === 'error' || instance.state === 'degraded') {
        throw new AppError(
          'UPSTREAM_FAILED',
          `spawned instance ${instance.name} is ${instance.state}: ${instance.stateReason ?? ''}`.trim(),
        );
      }
      if (this.now >= deadline)
        throw new AppError('TIMEOUT', `spawned instance ${instance.name} was not online within ${waitMs} ms (it is ${instance.state})`);
      await this.changeOrSleep(instanceId, Math.min(this.deps.pollMs ?? 100, Math.max(1, deadline - this.now)));
    }
  }

  /** Sleeps up to `ms`, ending early when the change port announces a write to the instance (spawn-to-allocatable pays no poll interval). */
  private changeOrSleep(instanceId: string, ms: number): Promise<void> {
    const changes = this.deps.changes;
    if (!changes) return this.sleep(ms);
    let unsubscribe = (): void => undefined;
    const changed = new Promise<void>((resolve) => {
      unsubscribe = changes.subscribe((c) => {
        if (c.kind === 'instance' && c.id === instanceId) resolve();
      });
    });
    return Promise.race([changed, this.sleep(ms)]).finally(() => unsubscribe());
  }

  private sleep(ms: number): Promise<void> {
    return (this.deps.sleep ?? sleep)(ms);
  }
}

/**
 * What an allocation's choice reads, and no more: per instance of the group
 * the fields rankAllocatable uses (one slim statement), and the hosts'
 * status and instance counts (FleetService.recentHosts). Player counts are
 * not read (rankAllocatable does not use them).
 */
function allocationSnapshot(
  rows: AllocationRow[],
  hostsById: ReadonlyMap<string, FleetHost>,
): { rows: AllocationRow[]; fleet: FleetInstance[]; hosts: FleetHost[] } {
  // Only the group's hosts: the ranking builds its maps from what it is given (1,000 hosts per allocation cost 5 % at size).
  const hosts = new Map<string, FleetHost>();
  for (const r of rows) {
    const h = r.hostId === null ? undefined : hostsById.get(r.hostId);
    if (h) hosts.set(h.id, h);
  }
  return {
    rows,
    fleet: rows.map((r) => ({
      id: r.id,
      hostId: r.hostId,
      variantId: r.variantId,
      ...(r.labels ? { labels: r.labels } : {}),
      state: r.state,
      allocated: r.allocated,
      draining: r.draining,
      playersOnline: 0,
      maxPlayers: null,
      emptySince: null,
    })),
    hosts: [...hosts.values()],
  };
}

/** The refused cap, as the caps check named it (for the join's CAPACITY_EXHAUSTED details). */
function limitOf(err: AppError): Record<string, unknown> {
  const d = err.details ?? {};
  return Object.fromEntries(['cap', 'limit', 'current'].filter((k) => d[k] !== undefined).map((k) => [k, d[k]]));
}
