// Leases (HA leader election): one conditional upsert takes or renews a lease on
// the DATABASE clock, so replicas with drifting clocks agree on expiry. The
// fencing epoch rises by one whenever the holder changes; agents refuse calls
// that carry an older one. The one place the store reads a clock itself
// (`now()` lends it to the offline detector: server/database-clock.ts).

import { sql, type RawBuilder } from 'kysely';
import type { StoreContext } from '../context.js';
import type { EpochMs } from '../../domain/index.js';
import type { LeaseRecord, LeaseRepository } from '../store.js';

type LeaseRow = { name: string; holder: string; epoch: number | string; expires_at: number | string };

const toLease = (r: LeaseRow): LeaseRecord => ({ name: r.name, holder: r.holder, epoch: Number(r.epoch), expiresAt: Number(r.expires_at) });

export class KyselyLeaseRepository implements LeaseRepository {
  constructor(private readonly ctx: StoreContext) {}

  /** Epoch milliseconds now, read by the database. */
  private dbNow(): RawBuilder<number> {
    return this.ctx.dialect === 'postgres'
      ? sql<number>`cast(floor(extract(epoch from clock_timestamp()) * 1000) as bigint)`
      : sql<number>`cast((julianday('now') - 2440587.5) * 86400000 as integer)`;
  }

  async now(): Promise<EpochMs> {
    const { rows } = await sql<{ now: number | string }>`select ${this.dbNow()} as now`.execute(this.ctx.db);
    return Number(rows[0]!.now);
  }

  async acquire(name: string, holder: string, ttlMs: number): Promise<LeaseRecord | undefined> {
    const now = this.dbNow();
    const ttl = Math.max(1, Math.floor(ttlMs));
    // Inserted (epoch 1), renewed by its holder (same epoch), or taken over once
    // expired (epoch + 1); otherwise the WHERE fails and nothing is returned.
    const result = await sql<LeaseRow>`
      insert into leases (name, holder, epoch, expires_at) values (${name}, ${holder}, 1, ${now} + ${ttl})
      on conflict (name) do update set
        epoch = case when leases.holder = excluded.holder then leases.epoch else leases.epoch + 1 end,
        holder = excluded.holder,
        expires_at = excluded.expires_at
      where leases.holder = excluded.holder or leases.expires_at <= ${now}
      returning name, holder, epoch, expires_at`.execute(this.ctx.db);
    const row = result.rows[0];
    return row && toLease(row);
  }

  async release(name: string, holder: string): Promise<boolean> {
    const result = await sql`update leases set expires_at = ${this.dbNow()} where name = ${name} and holder = ${holder}`.execute(
      this.ctx.db,
    );
    return Number(result.numAffectedRows ?? 0n) === 1;
  }

  async get(name: string): Promise<LeaseRecord | undefined> {
    const row = await this.ctx.db.selectFrom('leases').selectAll().where('name', '=', name).executeTakeFirst();
    return row && toLease(row);
  }
}
