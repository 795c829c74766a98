// Wakes instances through the orchestrator (POST resume/start) and waits until
// the registry shows them Running with an address, bounded by the hold timeout.
// One request per instance at a time: logins arriving during a wake share it.

import { Counter, Histogram, type Registry } from 'prom-client';
import type { Logger } from '../shared/logger.js';
import type { WakeAction } from '../protocol/registry-contract.js';
import type { RouterApi } from './orchestrator-api.js';
import { realTimers, type Timers } from '../shared/timers.js';
import type { RegistryReader } from './registry-state.js';
import type { Waker } from './resolver.js';

export interface OrchestratorWakerOptions {
  api: Pick<RouterApi, 'requestWake'>;
  registry: RegistryReader;
  holdTimeoutMs: number;
  logger: Logger;
  now?: () => number;
  timers?: Timers;
  metricsRegistry?: Registry;
}

interface PendingWake {
  action: WakeAction;
  requestedAt: number;
  request: Promise<void>;
}

/** The part of the waker the resolver uses to surface a refusal before holding a login. */
export interface WakeRequester {
  request(instanceId: string, action: WakeAction): Promise<void>;
}

export class OrchestratorWaker implements Waker, WakeRequester {
  private readonly pending = new Map<string, PendingWake>();
  private readonly now: () => number;
  private readonly timers: Timers;
  private readonly latency: Histogram | undefined;
  private readonly requests: Counter | undefined;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: OrchestratorWakerOptions) {
    this.now = options.now ?? Date.now;
    this.timers = options.timers ?? realTimers;
    const registers = options.metricsRegistry ? [options.metricsRegistry] : [];
    if (registers.length > 0) {
      this.latency = new Histogram({
        name: 'endercloud_router_instance_wake_seconds',
        help: 'Wake or start requested → registry shows the instance Running, by action',
        labelNames: ['action'] as const,
        buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120],
        registers,
      });
      this.requests = new Counter({ name: 'endercloud_router_wake_requests_total', help: 'Resume/start requests sent to the orchestrator, by action and result', labelNames: ['action', 'result'] as const, registers });
    }
    this.unsubscribe = options.registry.subscribe(() => this.settle());
  }

  /** Asks the orchestrator to resume or start, unless a request for this instance is already in flight or awaiting Running. */
  request(instanceId: string, action: WakeAction): Promise<void> {
    const existing = this.pending.get(instanceId);
    if (existing && this.now() - existing.requestedAt < this.options.holdTimeoutMs) return existing.request;
    const entry: PendingWake = { action, requestedAt: this.now(), request: Promise.resolve() };
    entry.request = this.options.api.requestWake(instanceId, action).then(
      (accepted) => {
        this.requests?.inc({ action, result: 'accepted' });
        this.options.logger.info({ instance: instanceId, action, command: accepted.commandId }, 'wake requested');
        this.settle();
      },
      (err: unknown) => {
        // A refusal or failure is not cached: the next login asks again and sees the current answer.
        if (this.pending.get(instanceId) === entry) this.pending.delete(instanceId);
        this.requests?.inc({ action, result: (err as { retryable?: boolean }).retryable ? 'failed' : 'refused' });
        throw err;
      },
    );
    this.pending.set(instanceId, entry);
    return entry.request;
  }

  /** Waker: requests what the registry status needs (none when Starting), then waits for Running. */
  async wake(instanceId: string, signal: AbortSignal): Promise<void> {
    const status = this.options.registry.get(instanceId)?.status;
    if (status === 'Paused') await this.request(instanceId, 'resume');
    else if (status === 'Stopped') await this.request(instanceId, 'start');
    else await this.pending.get(instanceId)?.request;
    await this.waitRunning(instanceId, signal);
  }

  async start(instanceId: string): Promise<void> {
    await this.request(instanceId, 'start');
  }

  close(): void {
    this.unsubscribe();
    this.pending.clear();
  }

  private isRunning(instanceId: string): boolean {
    const b = this.options.registry.get(instanceId);
    return b?.status === 'Running' && b.address !== null;
  }

  /** Records latency for requests whose instance is now Running, and forgets stale requests. */
  private settle(): void {
    for (const [id, p] of this.pending) {
      if (this.isRunning(id)) {
        this.latency?.observe({ action: p.action }, (this.now() - p.requestedAt) / 1000);
        this.pending.delete(id);
      } else if (this.now() - p.requestedAt >= this.options.holdTimeoutMs * 3) {
        this.pending.delete(id);
      }
    }
  }

  private waitRunning(instanceId: string, signal: AbortSignal): Promise<void> {
    if (this.isRunning(instanceId)) {
      this.settle();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error): void => {
        unsubscribe();
        this.timers.clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };
      const onAbort = (): void => done(new Error('wake hold ended'));
      const unsubscribe = this.options.registry.subscribe(() => {
        if (this.isRunning(instanceId)) done();
      });
      const timer = this.timers.setTimeout(() => done(new Error(`instance ${instanceId} not Running within ${this.options.holdTimeoutMs} ms`)), this.options.holdTimeoutMs);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
