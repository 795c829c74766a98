// Cross-replica change fan-out over PostgreSQL LISTEN/NOTIFY (no new
// dependency): one dedicated pg client LISTENs and also sends the NOTIFYs.
// Local listeners get a published change at once; other replicas get it from
// the notification. After a lost connection it reconnects with backoff and
// tells its listeners to resync (notifications sent meanwhile are lost; the
// registry feed's poll is the safety net while disconnected).
// Needs a session: behind PgBouncer use session pooling for this connection.

import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../../shared/logger.js';
import { InProcessChangePort, type Change, type ChangeListener, type ChangePort } from './change-port.js';
import { CHANGE_CHANNEL, RESYNC, decodeChange, encodeChange } from './change-wire.js';

export interface PostgresChangePortOptions {
  connectionString: string;
  logger: Logger;
  channel?: string;
  /** First reconnect delay, doubled up to 10 s. */
  reconnectDelayMs?: number;
}

const MAX_RECONNECT_DELAY_MS = 10_000;
/**
 * How long changes gather before one NOTIFY carries them all: under an
 * allocation burst one round trip per few ms instead of one per change,
 * at a cost of this much latency to other replicas (their routers' goal is
 * 100 ms).
 */
const NOTIFY_WINDOW_MS = 5;
export const CHANGE_APPLICATION_NAME = 'endercloud-changes';

export class PostgresChangePort implements ChangePort {
  readonly origin = randomUUID();
  private readonly local = new InProcessChangePort();
  private readonly channel: string;
  private client: pg.Client | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private sending: Promise<void> = Promise.resolve();
  /** Encoded changes waiting for the next NOTIFY (a set: the same change twice in one burst is sent once). */
  private readonly queued = new Set<string>();

  constructor(private readonly deps: PostgresChangePortOptions) {
    this.channel = deps.channel ?? CHANGE_CHANNEL;
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(this.channel)) throw new Error(`channel ${this.channel} is not a plain identifier`);
  }

  /** Connects and LISTENs; throws when the first connection fails. */
  async open(): Promise<void> {
    this.client = await this.connect();
  }

  subscribe(listener: ChangeListener): () => void {
    return this.local.subscribe(listener);
  }

  publish(change: Change): void {
    this.local.publish(change);
    if (!this.client) return;
    // One query at a time on the client (pg queues them, but deprecates overlapping calls): changes published
    // within the window, or while a NOTIFY is on the wire, go out together in the next one, so a burst costs one
    // round trip, not one each.
    this.queued.add(encodeChange(change, this.origin));
    if (this.queued.size === 1) this.sending = this.sending.then(() => this.afterWindow()).then(() => this.flush());
  }

  /** Lets a burst gather for NOTIFY_WINDOW_MS (other replicas see a change that much later; local listeners at once). */
  private afterWindow(): Promise<void> {
    return this.closed ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, NOTIFY_WINDOW_MS));
  }

  private async flush(): Promise<void> {
    const client = this.client;
    const payloads = [...this.queued];
    this.queued.clear();
    if (!client || payloads.length === 0) return;
    try {
      await client.query('select pg_notify($1, p) from unnest($2::text[]) as p', [this.channel, payloads]);
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message, changes: payloads.length }, 'change NOTIFY failed');
    }
  }

  /** True while the LISTEN connection is up. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    await this.sending;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<pg.Client> {
    // Named, so an operator sees it in pg_stat_activity.
    const client = new pg.Client({ connectionString: this.deps.connectionString, application_name: CHANGE_APPLICATION_NAME });
    client.on('notification', (msg) => {
      const change = msg.channel === this.channel ? decodeChange(msg.payload, this.origin) : undefined;
      if (change) this.local.publish(change);
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`listen ${this.channel}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    return client;
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.closed) return;
    this.deps.logger.warn({ err: err?.message }, 'change LISTEN connection lost; reconnecting');
    this.scheduleReconnect(this.deps.reconnectDelayMs ?? 250);
  }

  private scheduleReconnect(delayMs: number): void {
    this.reconnectTimer = setTimeout(() => {
      this.connect().then(
        (client) => {
          if (this.closed) return void client.end().catch(() => undefined);
          this.client = client;
          this.deps.logger.info('change LISTEN connection restored');
          this.local.publish(RESYNC);
        },
        () => this.scheduleReconnect(Math.min(MAX_RECONNECT_DELAY_MS, delayMs * 2)),
      );
    }, delayMs);
    this.reconnectTimer.unref();
  }
}
