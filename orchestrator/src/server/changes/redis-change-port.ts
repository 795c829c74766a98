// Cross-replica change fan-out over Redis pub/sub (ENDERCLOUD_REDIS_URL):
// one connection subscribes (a subscribed connection can do nothing else), one
// publishes. ioredis reconnects and resubscribes by itself; after every
// reconnect the local listeners are told to resync (messages published while
// the subscriber was away are gone — pub/sub keeps nothing). The channel is
// `<prefix>:changes`: deployments sharing one Redis each have their own
// (ENDERCLOUD_REDIS_PREFIX, by default a hash of the database's identity).

import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from '../../shared/logger.js';
import { InProcessChangePort, type Change, type ChangeListener, type ChangePort } from './change-port.js';
import { databaseIdentity } from '../../store/open-store.js';
import { RESYNC, decodeChange, encodeChange } from './change-wire.js';

export interface RedisChangePortOptions {
  url: string;
  logger: Logger;
  /** The pub/sub channel (redisChangeChannel()). */
  channel: string;
}

/** The default prefix: one per database, so only replicas of the same deployment hear each other (no credentials in it). */
export function defaultRedisPrefix(databaseUrl: string | undefined, dataDir: string): string {
  return `endercloud:${createHash('sha256').update(databaseIdentity(databaseUrl, dataDir)).digest('hex').slice(0, 16)}`;
}

export function redisChangeChannel(config: { redisPrefix: string | undefined; databaseUrl: string | undefined; dataDir: string }): string {
  return `${config.redisPrefix ?? defaultRedisPrefix(config.databaseUrl, config.dataDir)}:changes`;
}

export class RedisChangePort implements ChangePort {
  readonly origin = randomUUID();
  private readonly local = new InProcessChangePort();
  private readonly channel: string;
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readyOnce = false;

  constructor(private readonly deps: RedisChangePortOptions) {
    this.channel = deps.channel;
    const options = { lazyConnect: true, maxRetriesPerRequest: 2 };
    this.pub = new Redis(deps.url, options);
    this.sub = new Redis(deps.url, options);
    for (const c of [this.pub, this.sub])
      c.on('error', (err: Error) => deps.logger.warn({ err: err.message }, 'redis change connection error'));
    this.sub.on('message', (channel: string, message: string) => {
      const change = channel === this.channel ? decodeChange(message, this.origin) : undefined;
      if (change) this.local.publish(change);
    });
    this.sub.on('ready', () => {
      if (this.readyOnce) this.local.publish(RESYNC);
      this.readyOnce = true;
    });
  }

  /** Connects both and subscribes; throws when Redis cannot be reached. */
  async open(): Promise<void> {
    try {
      await Promise.all([this.pub.connect(), this.sub.connect()]);
      await this.sub.subscribe(this.channel);
    } catch (err) {
      this.pub.disconnect();
      this.sub.disconnect();
      throw err;
    }
  }

  /** The channel this port publishes and listens on. */
  get channelName(): string {
    return this.channel;
  }

  subscribe(listener: ChangeListener): () => void {
    return this.local.subscribe(listener);
  }

  /** True while the subscriber connection is up and subscribed. */
  get connected(): boolean {
    return this.sub.status === 'ready';
  }

  publish(change: Change): void {
    this.local.publish(change);
    this.pub.publish(this.channel, encodeChange(change, this.origin)).catch((err: unknown) => {
      this.deps.logger.warn({ err: (err as Error).message }, 'change PUBLISH failed');
    });
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.pub.quit(), this.sub.quit()]);
  }
}
