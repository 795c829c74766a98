// Follows the orchestrator registry over Server-Sent Events: a snapshot, then
// numbered upserts/removes. On a gap, a bad event, silence or a dropped stream
// it reconnects with capped, jittered backoff and re-syncs from a fresh
// snapshot; meanwhile the last snapshot keeps serving routing decisions.

import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from '../shared/logger.js';
import {
  KEEPALIVE_INTERVAL_MS,
  parseRegistryRemove,
  parseRegistrySnapshot,
  parseRegistryUpsert,
  REGISTRY_STREAM_PATH,
} from '../protocol/registry-contract.js';
import { RegistryState, type RegistryChange, type RegistryReader } from './registry-state.js';
import { realTimers, type Timers } from '../shared/timers.js';

export type FetchLike = typeof fetch;

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 30_000 };

/** Equal jitter: half the exponential step fixed, half random, never above the cap. */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number): number {
  const step = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.round(step / 2 + random() * (step / 2));
}

export interface SseEvent {
  event: string;
  data: string;
}

/** Incremental text/event-stream parser (comments ignored; CRLF, CR and LF line ends). */
export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];

  constructor(private readonly maxBufferChars = 4 * 1024 * 1024) {}

  push(text: string): SseEvent[] {
    this.buffer += text;
    if (this.buffer.length > this.maxBufferChars) throw new Error(`an event line longer than ${this.maxBufferChars} characters`);
    const out: SseEvent[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      // A lone trailing CR may be the first half of CRLF: wait for the next chunk.
      if (!m || (m[0] === '\r' && m.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      if (line === '') {
        if (this.data.length > 0) out.push({ event: this.event || 'message', data: this.data.join('\n') });
        this.event = '';
        this.data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') this.event = value;
      else if (field === 'data') this.data.push(value);
    }
    return out;
  }
}

export interface RegistryClientOptions {
  /** Orchestrator base URL without a trailing slash. */
  baseUrl: string;
  token: string | undefined;
  logger: Logger;
  fetch?: FetchLike;
  timers?: Timers;
  random?: () => number;
  backoff?: BackoffPolicy;
  /** Silence (not even a keepalive) for this long means a dead stream. Default 3 keepalives. */
  idleTimeoutMs?: number;
  metricsRegistry?: Registry;
  state?: RegistryState;
}

class StreamProblem extends Error {}

export class RegistryClient implements RegistryReader {
  readonly state: RegistryState;
  private readonly fetch: FetchLike;
  private readonly timers: Timers;
  private readonly random: () => number;
  private readonly backoff: BackoffPolicy;
  private readonly idleTimeoutMs: number;
  private readonly stopper = new AbortController();
  private loop: Promise<void> | undefined;
  private failures = 0;
  private readonly connectedGauge: Gauge | undefined;
  private readonly reconnects: Counter | undefined;

  constructor(private readonly options: RegistryClientOptions) {
    this.state = options.state ?? new RegistryState();
    this.fetch = options.fetch ?? fetch;
    this.timers = options.timers ?? realTimers;
    this.random = options.random ?? Math.random;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 3 * KEEPALIVE_INTERVAL_MS;
    const registers = options.metricsRegistry ? [options.metricsRegistry] : [];
    if (registers.length > 0) {
      this.connectedGauge = new Gauge({
        name: 'endercloud_router_registry_connected',
        help: '1 while the registry stream is open and in sync',
        registers,
      });
      this.reconnects = new Counter({
        name: 'endercloud_router_registry_reconnects_total',
        help: 'Registry stream reconnects, by reason',
        labelNames: ['reason'] as const,
        registers,
      });
    }
  }

  get synced(): boolean {
    return this.state.synced;
  }
  get connected(): boolean {
    return this.state.connected;
  }
  get revision(): number {
    return this.state.revision;
  }
  get(instanceId: string): ReturnType<RegistryState['get']> {
    return this.state.get(instanceId);
  }
  backends(): ReturnType<RegistryState['backends']> {
    return this.state.backends();
  }
  subscribe(listener: (change: RegistryChange) => void): () => void {
    return this.state.subscribe(listener);
  }

  /** Starts following the stream in the background (idempotent). */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops following; the last snapshot stays readable. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopper.signal.aborted) {
      let reason = 'closed';
      let problem = 'the orchestrator ended the stream';
      try {
        await this.follow();
      } catch (err) {
        if (this.stopper.signal.aborted) break;
        reason = err instanceof StreamProblem ? 'protocol' : 'error';
        problem = (err as Error).message;
      }
      if (this.stopper.signal.aborted) break;
      // Losing an open stream is a warning at once (routing continues from the last snapshot);
      // repeated failures to reconnect are only debug lines.
      const log = { err: problem, reason, attempt: this.failures + 1 };
      if (this.state.connected || this.failures === 0)
        this.options.logger.warn(log, 'registry stream lost; serving the last snapshot while reconnecting');
      else this.options.logger.debug(log, 'registry stream still failing');
      this.setConnected(false);
      if (this.stopper.signal.aborted) break;
      this.failures++;
      this.reconnects?.inc({ reason });
      await this.sleep(backoffDelay(this.failures, this.backoff, this.random));
    }
    this.setConnected(false);
  }

  /** One stream connection, until it ends or fails. */
  private async follow(): Promise<void> {
    const attempt = new AbortController();
    const onStop = (): void => attempt.abort();
    this.stopper.signal.addEventListener('abort', onStop, { once: true });
    let idle: unknown;
    const armIdle = (): void => {
      this.timers.clearTimeout(idle);
      idle = this.timers.setTimeout(() => attempt.abort(new StreamProblem(`no data for ${this.idleTimeoutMs} ms`)), this.idleTimeoutMs);
    };
    try {
      armIdle();
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
      const res = await this.fetch(`${this.options.baseUrl}${REGISTRY_STREAM_PATH}`, { headers, signal: attempt.signal });
      if (res.status !== 200 || !res.body) {
        const text = (await res.text().catch(() => '')).slice(0, 300);
        throw new Error(`GET ${REGISTRY_STREAM_PATH} answered ${res.status}${text ? `: ${text}` : ''}`);
      }
      if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream'))
        throw new StreamProblem('response is not text/event-stream');
      const parser = new SseParser();
      const decoder = new TextDecoder();
      const reader = res.body.getReader();
      let gotSnapshot = false;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          armIdle();
          for (const ev of parser.push(decoder.decode(value, { stream: true }))) {
            gotSnapshot = this.apply(ev, gotSnapshot);
          }
        }
      } finally {
        reader.cancel().catch(() => undefined);
      }
    } catch (err) {
      const reason: unknown = attempt.signal.reason;
      throw reason instanceof StreamProblem ? reason : err;
    } finally {
      this.timers.clearTimeout(idle);
      this.stopper.signal.removeEventListener('abort', onStop);
      attempt.abort();
    }
  }

  private apply(ev: { event: string; data: string }, gotSnapshot: boolean): boolean {
    let body: unknown;
    try {
      body = JSON.parse(ev.data);
    } catch {
      throw new StreamProblem(`event ${ev.event} carries invalid JSON`);
    }
    try {
      if (ev.event === 'snapshot') {
        this.state.applySnapshot(parseRegistrySnapshot(body));
        if (this.failures > 0)
          this.options.logger.info({ revision: this.state.revision, failures: this.failures }, 'registry stream re-synced');
        this.failures = 0;
        this.setConnected(true);
        return true;
      }
      if (!gotSnapshot) throw new StreamProblem(`first event was ${ev.event}, expected snapshot`);
      const result =
        ev.event === 'upsert'
          ? this.state.applyUpsert(parseRegistryUpsert(body))
          : ev.event === 'remove'
            ? this.state.applyRemove(parseRegistryRemove(body))
            : 'ignored';
      if (result === 'gap') throw new StreamProblem(`revision gap after ${this.state.revision}`);
      return true;
    } catch (err) {
      throw err instanceof StreamProblem ? err : new StreamProblem(`bad ${ev.event} event: ${(err as Error).message}`);
    }
  }

  private setConnected(value: boolean): void {
    this.state.connected = value;
    this.connectedGauge?.set(value ? 1 : 0);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const signal = this.stopper.signal;
      if (signal.aborted) return resolve();
      const onAbort = (): void => {
        this.timers.clearTimeout(t);
        resolve();
      };
      const t = this.timers.setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
