// Reports login / denied / disconnect events to the orchestrator in batches,
// retried with backoff from a bounded in-memory buffer (oldest dropped and
// counted when full). The first accepted batch after start carries
// `reset: true` so the orchestrator closes sessions left open by our last run.

import { randomUUID } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../shared/logger.js';
import { MAX_SESSION_EVENTS_PER_BATCH, type RouterSessionEvent, type RouterSessionsBatch } from '../protocol/registry-contract.js';
import type { RouterApi } from './orchestrator-api.js';
import { backoffDelay, type BackoffPolicy } from './registry-client.js';
import { realTimers, type Timers } from '../shared/timers.js';
import { instanceIdOf } from './registry-resolver.js';
import type { SessionInfo, SessionReporter } from './resolver.js';

export interface OrchestratorSessionReporterOptions {
  api: Pick<RouterApi, 'postSessions'>;
  routerId: string;
  logger: Logger;
  /** Events buffered while the orchestrator is unreachable; the oldest go first. */
  maxBuffered?: number;
  flushIntervalMs?: number;
  backoff?: BackoffPolicy;
  timers?: Timers;
  now?: () => number;
  random?: () => number;
  newId?: () => string;
  metricsRegistry?: Registry;
}

export class OrchestratorSessionReporter implements SessionReporter {
  private buffer: RouterSessionEvent[] = [];
  private resetPending = true;
  private readonly ids = new WeakMap<SessionInfo, string>();
  private timer: unknown;
  private sending: Promise<void> | undefined;
  private failures = 0;
  private stopped = false;
  private readonly maxBuffered: number;
  private readonly flushIntervalMs: number;
  private readonly backoff: BackoffPolicy;
  private readonly timers: Timers;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly newId: () => string;
  private readonly dropped: Counter | undefined;
  private readonly sent: Counter | undefined;

  constructor(private readonly options: OrchestratorSessionReporterOptions) {
    this.maxBuffered = options.maxBuffered ?? 10_000;
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.backoff = options.backoff ?? { initialMs: 1000, maxMs: 30_000 };
    this.timers = options.timers ?? realTimers;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.newId = options.newId ?? randomUUID;
    const registers = options.metricsRegistry ? [options.metricsRegistry] : [];
    if (registers.length > 0) {
      this.dropped = new Counter({
        name: 'endercloud_router_session_events_dropped_total',
        help: 'Session events dropped because the report buffer was full',
        registers,
      });
      this.sent = new Counter({
        name: 'endercloud_router_session_events_sent_total',
        help: 'Session events accepted by the orchestrator',
        registers,
      });
    }
  }

  /** Sends the reset (with anything already buffered) right away. */
  start(): void {
    this.schedule(0);
  }

  get buffered(): number {
    return this.buffer.length;
  }

  get resetAcknowledged(): boolean {
    return !this.resetPending;
  }

  loginAccepted(session: SessionInfo): void {
    const id = this.newId();
    this.ids.set(session, id);
    this.push(this.event('login', id, session));
  }

  loginDenied(session: SessionInfo, reason: string): void {
    this.push({ ...this.event('denied', this.newId(), session), reason });
  }

  disconnected(session: SessionInfo, stats: { durationMs: number; bytesIn: number; bytesOut: number }): void {
    // The connection hands back the same SessionInfo it reported at login.
    const id = this.ids.get(session) ?? this.newId();
    this.push({ ...this.event('disconnect', id, session), reason: `after ${Math.round(stats.durationMs / 1000)} s` });
  }

  /** Tries to send everything now (bounded by the API timeout); for shutdown. */
  async flush(): Promise<void> {
    await this.sending;
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.sending = this.send().finally(() => (this.sending = undefined));
    await this.sending;
  }

  /** Stops the timers; buffered events are dropped. */
  stop(): void {
    this.stopped = true;
    this.timers.clearTimeout(this.timer);
  }

  private event(type: RouterSessionEvent['type'], id: string, session: SessionInfo): RouterSessionEvent {
    return {
      type,
      id,
      player: session.player.name,
      uuid: session.player.uuid ?? null,
      instanceId: instanceOf(session),
      backend: session.backend?.name ?? null,
      at: new Date(this.now()).toISOString(),
    };
  }

  private push(event: RouterSessionEvent): void {
    this.buffer.push(event);
    if (this.buffer.length > this.maxBuffered) {
      const over = this.buffer.length - this.maxBuffered;
      this.buffer.splice(0, over);
      this.dropped?.inc(over);
      this.options.logger.warn({ dropped: over }, 'session report buffer full: dropped the oldest events');
    }
    if (this.failures === 0) this.schedule(this.buffer.length >= MAX_SESSION_EVENTS_PER_BATCH ? 0 : this.flushIntervalMs);
  }

  private schedule(ms: number): void {
    if (this.stopped || this.timer !== undefined) return;
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.sending ??= this.send().finally(() => (this.sending = undefined));
    }, ms);
  }

  private async send(): Promise<void> {
    if (this.stopped || (this.buffer.length === 0 && !this.resetPending)) return;
    const events = this.buffer.slice(0, MAX_SESSION_EVENTS_PER_BATCH);
    const batch: RouterSessionsBatch = this.resetPending
      ? { routerId: this.options.routerId, reset: true, events }
      : { routerId: this.options.routerId, events };
    try {
      await this.options.api.postSessions(batch);
    } catch (err) {
      this.failures++;
      const delay = backoffDelay(this.failures, this.backoff, this.random);
      if (this.failures === 1)
        this.options.logger.warn(
          { err: (err as Error).message, buffered: this.buffer.length },
          'session report failed; retrying with backoff',
        );
      this.schedule(delay);
      return;
    }
    if (this.failures > 0) this.options.logger.info({ failures: this.failures }, 'session reports delivered again');
    this.failures = 0;
    this.resetPending = false;
    this.sent?.inc(events.length);
    // Events may have been dropped meanwhile: remove exactly the ones just sent.
    const sent = new Set(events);
    this.buffer = this.buffer.filter((e) => !sent.has(e));
    if (this.buffer.length > 0) this.schedule(this.buffer.length >= MAX_SESSION_EVENTS_PER_BATCH ? 0 : this.flushIntervalMs);
  }
}

/**
 * The instance the player is on: once piped, the backend's (a player parked on
 * the fallback is on the fallback, not on the world they wait for, or the
 * orchestrator would think them already there and never move them back);
 * before that (a refused login), the instance the login was held for.
 */
function instanceOf(session: SessionInfo): string | null {
  return (session.backend ? instanceIdOf(session.backend) : session.instanceId) ?? null;
}
