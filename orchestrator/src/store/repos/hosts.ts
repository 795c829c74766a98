// Hosts: heartbeat upsert (the hot path: one statement, or none when only the
// beat time changed — heartbeat-coalescer.ts), status changes, staleness sweep
// and memory reservations that never oversubscribe. No write moves a host's
// beat time backwards (a late beat from a replica that was cut off keeps the
// newer time another replica stored).

import { sql, type Kysely, type Selectable } from 'kysely';
import type { EpochMs, Host, HostHeartbeat, HostStatus, MaintenanceMode } from '../../domain/index.js';
import { HOST_STATUSES } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { affected, type StoreContext } from '../context.js';
import { fromJson, fromJsonOrNull, toJson, toJsonOrNull } from '../json.js';
import type { StoreDialect } from '../migrations/index.js';
import type { Database, HostsTable } from '../schema.js';
import type { HeartbeatAuth, HeartbeatResult, HostEnrolment, HostRepository } from '../store.js';

function toHost(r: Selectable<HostsTable>): Host {
  return {
    id: r.id,
    status: r.status as HostStatus,
    statusReason: r.status_reason,
    statusChangedAt: Number(r.status_changed_at),
    controlUrl: r.control_url,
    gameAddress: r.game_address,
    resources: fromJson(r.resources),
    version: r.version,
    portRange: fromJson(r.port_range),
    heartbeatIntervalMs: r.heartbeat_interval_ms,
    bootId: r.boot_id,
    ...(r.inventory_digest !== null ? { inventoryDigest: r.inventory_digest } : {}),
    memoryReservedMb: r.memory_reserved_mb,
    maintenance: fromJsonOrNull(r.maintenance),
    firstSeenAt: Number(r.first_seen_at),
    lastHeartbeatAt: Number(r.last_heartbeat_at),
    updatedAt: Number(r.updated_at),
    ...(r.credential_generation !== null ? { credentialGeneration: Number(r.credential_generation) } : {}),
    ...(r.enrolled_at !== null ? { enrolledAt: Number(r.enrolled_at) } : {}),
    ...(r.credential_revoked_at !== null ? { credentialRevokedAt: Number(r.credential_revoked_at) } : {}),
  };
}

/** A host's first row, from its first heartbeat or its enrolment: RECOVERING until a recovery run read its inventory. */
function newHostRow(hb: HostHeartbeat, now: EpochMs, reason: string, inventoryDigest: string | null) {
  return {
    id: hb.id,
    status: 'RECOVERING',
    status_reason: reason,
    status_changed_at: now,
    control_url: hb.controlUrl,
    game_address: hb.gameAddress,
    resources: toJson(hb.resources),
    memory_capacity_mb: Math.floor(hb.resources.memoryMb),
    memory_reserved_mb: 0,
    version: hb.version,
    port_range: toJson(hb.portRange),
    heartbeat_interval_ms: hb.heartbeatIntervalMs,
    boot_id: hb.bootId ?? null,
    inventory_digest: inventoryDigest,
    maintenance: null,
    first_seen_at: now,
    last_heartbeat_at: now,
    updated_at: now,
  };
}

function assertMb(mb: number): void {
  if (!Number.isSafeInteger(mb) || mb < 0) throw new AppError('VALIDATION_FAILED', `memory ${mb} MB must be a non-negative integer`);
}

export class KyselyHostRepository implements HostRepository {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * The coalesced beat times in one statement (never moving a time backwards);
   * answers the status of every host it found.
   */
  static async writeBeatTimes(
    db: Kysely<Database>,
    dialect: StoreDialect,
    beats: ReadonlyArray<{ id: string; at: EpochMs }>,
  ): Promise<Array<{ id: string; status: string }>> {
    if (beats.length === 0) return [];
    const at = dialect === 'postgres' ? (b: { at: EpochMs }) => sql`cast(${b.at} as bigint)` : (b: { at: EpochMs }) => sql`${b.at}`;
    const values = sql.join(beats.map((b) => sql`(${b.id}, ${at(b)})`));
    const later = (column: string) => sql`case when beats.at > hosts.${sql.raw(column)} then beats.at else hosts.${sql.raw(column)} end`;
    const { rows } = await sql<{ id: string; status: string }>`
      with beats(id, at) as (values ${values})
      update hosts set last_heartbeat_at = ${later('last_heartbeat_at')}, updated_at = ${later('updated_at')}
      from beats
      where hosts.id = beats.id
      returning hosts.id, hosts.status`.execute(db);
    return rows;
  }

  /** The row with a coalesced beat time not yet written (reads through this store see every beat). */
  private withPendingBeat(host: Host): Host {
    const at = this.ctx.heartbeats.pendingAt(host.id);
    return at !== undefined && at > host.lastHeartbeatAt ? { ...host, lastHeartbeatAt: at, updatedAt: Math.max(host.updatedAt, at) } : host;
  }

  async upsertHeartbeat(hb: HostHeartbeat, now: EpochMs, opts: HeartbeatAuth = {}): Promise<HeartbeatResult> {
    // Nothing but the time changed since this store's last full write (with the same kind of credential): no statement now.
    const via = opts.hostCredential === true ? 'host' : 'shared';
    const coalesced = this.ctx.inTransaction ? undefined : this.ctx.heartbeats.coalesce(hb, now, via);
    if (coalesced) return { host: coalesced, created: false, startedRecovery: false };
    const result = await this.writeHeartbeat(hb, now, opts.hostCredential === true);
    this.ctx.heartbeats.written(hb, result.host, now, via);
    return result;
  }

  private async writeHeartbeat(hb: HostHeartbeat, now: EpochMs, hostCredential: boolean): Promise<HeartbeatResult> {
    const wasOffline = sql<boolean>`hosts.status = 'OFFLINE'`;
    const later = (column: 'last_heartbeat_at' | 'updated_at') =>
      sql<number>`case when excluded.${sql.raw(column)} > hosts.${sql.raw(column)} then excluded.${sql.raw(column)} else hosts.${sql.raw(column)} end`;
    const row = await this.ctx.db
      .insertInto('hosts')
      .values(newHostRow(hb, now, 'first heartbeat', hb.inventoryDigest ?? null))
      .onConflict((oc) =>
        oc
          .column('id')
          .doUpdateSet((eb) => ({
            game_address: eb.ref('excluded.game_address'),
            resources: eb.ref('excluded.resources'),
            memory_capacity_mb: eb.ref('excluded.memory_capacity_mb'),
            version: eb.ref('excluded.version'),
            port_range: eb.ref('excluded.port_range'),
            heartbeat_interval_ms: eb.ref('excluded.heartbeat_interval_ms'),
            boot_id: eb.ref('excluded.boot_id'),
            inventory_digest: eb.ref('excluded.inventory_digest'),
            // Never backwards: a beat that waited on a replica cut from the database lands after newer ones.
            last_heartbeat_at: later('last_heartbeat_at'),
            updated_at: later('updated_at'),
            // A returning host is never placeable before recovery finishes.
            status: sql<string>`case when ${wasOffline} then 'RECOVERING' else hosts.status end`,
            status_reason: sql<string | null>`case when ${wasOffline} then 'heartbeat after being offline' else hosts.status_reason end`,
            status_changed_at: sql<number>`case when ${wasOffline} then excluded.status_changed_at else hosts.status_changed_at end`,
          }))
          // A known host's controlUrl is pinned: only an enrolment moves it (issue 26: host takeover, SSRF).
          .where(sql<boolean>`hosts.control_url = excluded.control_url`)
          // An enrolled host beats with its own credential only (the shared token is no longer its).
          .where(hostCredential ? sql<boolean>`1 = 1` : sql<boolean>`hosts.credential_generation is null`),
      )
      .returningAll()
      .executeTakeFirst();
    if (!row) {
      const known = await this.ctx.db
        .selectFrom('hosts')
        .select(['control_url', 'credential_generation'])
        .where('id', '=', hb.id)
        .executeTakeFirst();
      if (!hostCredential && known && known.credential_generation !== null)
        throw new AppError(
          'FORBIDDEN',
          `host ${hb.id} is enrolled: its heartbeats need its own host credential, not the shared agent token (re-enrol it if the credential was lost)`,
        );
      throw new AppError(
        'CONFLICT',
        `host ${hb.id} is registered at ${known?.control_url ?? '?'}, not ${hb.controlUrl}: a heartbeat never moves a host; re-enrol to move a host (a new join token: ectl hosts join-token create --agent-id ${hb.id})`,
        { details: { reason: 'control-url-pinned', enrolledControlUrl: known?.control_url ?? null, reportedControlUrl: hb.controlUrl } },
      );
    }
    const host = toHost(row);
    const created =
      host.firstSeenAt === now && host.lastHeartbeatAt === now && host.statusChangedAt === now && host.statusReason === 'first heartbeat';
    const startedRecovery = host.status === 'RECOVERING' && host.statusChangedAt === now;
    return { host, created, startedRecovery };
  }

  async get(id: string): Promise<Host | undefined> {
    const row = await this.ctx.db.selectFrom('hosts').selectAll().where('id', '=', id).executeTakeFirst();
    return row && this.withPendingBeat(toHost(row));
  }

  async list(filter: { statuses?: HostStatus[] } = {}): Promise<Host[]> {
    let q = this.ctx.db.selectFrom('hosts').selectAll().orderBy('id');
    if (filter.statuses) {
      if (filter.statuses.length === 0) return [];
      q = q.where('status', 'in', filter.statuses);
    }
    return (await q.execute()).map((r) => this.withPendingBeat(toHost(r)));
  }

  async setStatus(
    id: string,
    to: HostStatus,
    opts: { from?: HostStatus[]; reason?: string | null; now: EpochMs },
  ): Promise<Host | undefined> {
    this.ctx.heartbeats.forget(id);
    let q = this.ctx.db
      .updateTable('hosts')
      .set({ status: to, status_reason: opts.reason ?? null, status_changed_at: opts.now, updated_at: opts.now })
      .where('id', '=', id);
    if (opts.from) {
      if (opts.from.length === 0) return undefined;
      q = q.where('status', 'in', opts.from);
    }
    const row = await q.returningAll().executeTakeFirst();
    // Again after the write: a full beat that ran meanwhile may have remembered the old status.
    this.ctx.heartbeats.forget(id);
    if (row) return toHost(row);
    if (!(await this.get(id))) throw new AppError('HOST_NOT_FOUND', `host ${id} is not registered`);
    return undefined;
  }

  async setMaintenance(id: string, maintenance: MaintenanceMode | null, now: EpochMs): Promise<Host> {
    this.ctx.heartbeats.forget(id);
    const row = await this.ctx.db
      .updateTable('hosts')
      .set({ maintenance: toJsonOrNull(maintenance), updated_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    this.ctx.heartbeats.forget(id);
    if (!row) throw new AppError('HOST_NOT_FOUND', `host ${id} is not registered`);
    return toHost(row);
  }

  async markStaleOffline(now: EpochMs, missedBeats: number): Promise<string[]> {
    // Coalesced beats first: a host that beat is not stale.
    await this.ctx.heartbeats.flush();
    const rows = await this.ctx.db
      .updateTable('hosts')
      .set({ status: 'OFFLINE', status_reason: `no heartbeat for ${missedBeats} intervals`, status_changed_at: now, updated_at: now })
      .where('status', '<>', 'OFFLINE')
      .where(sql<boolean>`last_heartbeat_at + heartbeat_interval_ms * ${missedBeats} < ${now}`)
      .returning('id')
      .execute();
    for (const r of rows) this.ctx.heartbeats.forget(r.id);
    return rows.map((r) => r.id).sort();
  }

  async reserveMemory(hostId: string, mb: number, opts: { statuses?: HostStatus[] } = {}): Promise<boolean> {
    assertMb(mb);
    const statuses = opts.statuses ?? ['ONLINE'];
    if (statuses.length === 0) return false;
    // One conditional UPDATE: the row lock (PostgreSQL) or the single writer
    // (SQLite) makes check-and-add atomic, so concurrent callers cannot both fit.
    const result = await this.ctx.db
      .updateTable('hosts')
      .set((eb) => ({ memory_reserved_mb: eb('memory_reserved_mb', '+', mb) }))
      .where('id', '=', hostId)
      .where('status', 'in', statuses)
      .where(sql<boolean>`memory_reserved_mb + ${mb} <= memory_capacity_mb`)
      .executeTakeFirst();
    return affected(result) === 1;
  }

  async releaseMemory(hostId: string, mb: number): Promise<void> {
    assertMb(mb);
    await this.ctx.db
      .updateTable('hosts')
      .set({ memory_reserved_mb: sql<number>`case when memory_reserved_mb > ${mb} then memory_reserved_mb - ${mb} else 0 end` })
      .where('id', '=', hostId)
      .execute();
  }

  async countByStatus(): Promise<Record<HostStatus, number>> {
    const rows = await this.ctx.db
      .selectFrom('hosts')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    const out = Object.fromEntries(HOST_STATUSES.map((s) => [s, 0])) as Record<HostStatus, number>;
    for (const r of rows) out[r.status as HostStatus] = Number(r.n);
    return out;
  }

  async enrol(e: HostEnrolment, now: EpochMs): Promise<{ host: Host; previousControlUrl: string | null }> {
    this.ctx.heartbeats.forget(e.heartbeat.id);
    const hb = e.heartbeat;
    const before = await this.ctx.db.selectFrom('hosts').selectAll().where('id', '=', hb.id).executeTakeFirst();
    const generation = (before?.credential_generation === null || before === undefined ? 0 : Number(before.credential_generation)) + 1;
    const reason = `${before?.credential_generation != null ? 're-enrolled' : 'enrolled'} (credential generation ${generation}): recovery runs at its first heartbeat`;
    const credential = {
      credential_hash: e.credentialHash,
      credential_generation: generation,
      enrolled_at: now,
      credential_revoked_at: null,
    };
    let row: Selectable<HostsTable> | undefined;
    if (before) {
      // Never placeable until a recovery run has read the (possibly moved) agent's inventory.
      row = await this.ctx.db
        .updateTable('hosts')
        .set({
          ...credential,
          control_url: hb.controlUrl,
          status: 'RECOVERING',
          status_reason: reason,
          status_changed_at: now,
          updated_at: now,
        })
        .where('id', '=', hb.id)
        .returningAll()
        .executeTakeFirst();
    } else {
      row = await this.ctx.db
        .insertInto('hosts')
        .values({ ...newHostRow(hb, now, reason, null), ...credential })
        .returningAll()
        .executeTakeFirst();
    }
    this.ctx.heartbeats.forget(hb.id);
    if (!row) throw new AppError('HOST_NOT_FOUND', `host ${hb.id} disappeared during its enrolment`);
    return { host: toHost(row), previousControlUrl: before?.control_url ?? null };
  }

  async findByCredentialHash(hash: string): Promise<{ id: string } | undefined> {
    return this.ctx.db
      .selectFrom('hosts')
      .select('id')
      .where('credential_hash', '=', hash)
      .where('credential_revoked_at', 'is', null)
      .executeTakeFirst();
  }

  async revokeCredential(id: string, now: EpochMs): Promise<Host> {
    this.ctx.heartbeats.forget(id);
    const row = await this.ctx.db
      .updateTable('hosts')
      .set({ credential_hash: null, credential_revoked_at: now, updated_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    this.ctx.heartbeats.forget(id);
    if (!row) throw new AppError('HOST_NOT_FOUND', `host ${id} is not registered`);
    return toHost(row);
  }

  async delete(id: string): Promise<void> {
    this.ctx.heartbeats.forget(id);
    await this.ctx.db.deleteFrom('hosts').where('id', '=', id).execute();
    this.ctx.heartbeats.forget(id);
  }
}
