// The one owner of wakes: resume/start requests and group joins go to the
// orchestrator here, and every held login waits here until the registry shows
// its instance Running with an address (bounded by the hold timeout). Requests
// for one instance are shared, so logins arriving during a wake do not ask again.

import { Counter, Histogram, type Registry } from 'prom-client';
import type { Logger } from '../shared/logger.js';
import type { WakeAction } from '../protocol/registry-contract.js';
import { realTimers, type Timers } from '../shared/timers.js';
import { systemClock, type Clock } from './clock.js';
import type { RouterApi } from './orchestrator-api.js';
import { registryTarget } from './registry-resolver.js';
import type { RegistryReader } from './registry-state.js';
import { WakeFailed, type BackendTarget, type Player, type WakeCoordinator } from './resolver.js';

export interface OrchestratorWakeCoordinatorOptions {
  api: Pick<RouterApi, 'requestWake' | 'joinGroup' | 'requestTransfer'>;
  registry: RegistryReader;
  holdTimeoutMs: number;
  logger: Logger;
  clock?: Clock;
  timers?: Timers;
  metricsRegistry?: Registry;
  /** How long a player parked on the fallback waits for their world before the router stops watching (default 10 min). */
  returnTimeoutMs?: number;
}

interface PendingWake {
  action: WakeAction | 'join';
  requestedAt: number;
  request: Promise<void>;
}

const CAPACITY_CODES = new Set(['CAP_REACHED', 'CAPACITY_EXHAUSTED', 'NO_CAPACITY']);

/** The orchestrator's answer as a WakeFailed: capacity, policy refusal, or unreachable (retryable). */
export function wakeFailure(err: unknown): WakeFailed {
  if (err instanceof WakeFailed) return err;
  const e = err as { retryable?: boolean; message?: string; code?: string; details?: { upstreamCode?: unknown; playerMessage?: unknown } };
  const message = e.message ?? String(err);
  if (e.retryable) return new WakeFailed('unreachable', message);
  const code = typeof e.details?.upstreamCode === 'string' ? e.details.upstreamCode : e.code;
  const playerMessage = typeof e.details?.playerMessage === 'string' ? e.details.playerMessage : undefined;
  const upstream = { ...(code !== undefined ? { code } : {}), ...(playerMessage !== undefined ? { playerMessage } : {}) };
  return new WakeFailed(code !== undefined && CAPACITY_CODES.has(code) ? 'capacity' : 'refused', message, upstream);
}

export class OrchestratorWakeCoordinator implements WakeCoordinator {
  private readonly pending = new Map<string, PendingWake>();
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly latency: Histogram | undefined;
  private readonly requests: Counter | undefined;
  private readonly unsubscribe: () => void;
  private holdTimeoutMs: number;

  constructor(private readonly options: OrchestratorWakeCoordinatorOptions) {
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? realTimers;
    this.holdTimeoutMs = options.holdTimeoutMs;
    const registers = options.metricsRegistry ? [options.metricsRegistry] : [];
    if (registers.length > 0) {
      this.latency = new Histogram({
        name: 'endercloud_router_instance_wake_seconds',
        help: 'Wake, start or join requested → registry shows the instance Running, by action',
        labelNames: ['action'] as const,
        buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120],
        registers,
      });
      this.requests = new Counter({
        name: 'endercloud_router_wake_requests_total',
        help: 'Resume/start/join requests sent to the orchestrator, by action and result',
        labelNames: ['action', 'result'] as const,
        registers,
      });
    }
    this.unsubscribe = options.registry.subscribe(() => this.settle());
  }

  /** Hot reload: new holds use the new bound. */
  setHoldTimeout(ms: number): void {
    this.holdTimeoutMs = ms;
  }

  request(instanceId: string, action: WakeAction): Promise<void> {
    const existing = this.pending.get(instanceId);
    if (existing && this.clock.now() - existing.requestedAt < this.holdTimeoutMs) return existing.request;
    const entry: PendingWake = { action, requestedAt: this.clock.now(), request: Promise.resolve() };
    entry.request = this.options.api.requestWake(instanceId, action).then(
      (accepted) => {
        this.requests?.inc({ action, result: 'accepted' });
        this.options.logger.info({ instance: instanceId, action, command: accepted.commandId }, 'wake requested');
        this.settle();
      },
      (err: unknown) => {
        // A refusal or failure is not cached: the next login asks again and sees the current answer.
        if (this.pending.get(instanceId) === entry) this.pending.delete(instanceId);
        const failure = wakeFailure(err);
        this.requests?.inc({ action, result: failure.reason === 'unreachable' ? 'failed' : 'refused' });
        throw failure;
      },
    );
    this.pending.set(instanceId, entry);
    return entry.request;
  }

  async wake(instanceId: string, action: WakeAction | null, signal: AbortSignal): Promise<void> {
    if (action) await this.request(instanceId, action);
    else await this.pending.get(instanceId)?.request;
    await this.waitRunning(instanceId, signal);
  }

  async joinGroup(
    groupId: string,
    name: string,
    player: Player,
    signal: AbortSignal,
    onInstance?: (instanceId: string, paused?: BackendTarget) => void,
  ): Promise<BackendTarget> {
    const requestedAt = this.clock.now();
    let answer;
    try {
      answer = await this.options.api.joinGroup(groupId, player);
    } catch (err) {
      const failure = wakeFailure(err);
      this.requests?.inc({ action: 'join', result: failure.reason === 'unreachable' ? 'failed' : 'refused' });
      throw failure;
    }
    this.requests?.inc({ action: 'join', result: 'accepted' });
    this.options.logger.info(
      { group: groupId, player: player.name, instance: answer.instanceId, action: answer.action, command: answer.commandId },
      'group join answered',
    );
    onInstance?.(
      answer.instanceId,
      answer.action === 'wake' && this.options.registry.get(answer.instanceId)?.address
        ? registryTarget(name, answer.instanceId, this.options.registry)
        : undefined,
    );
    if (answer.action !== 'route' && !this.pending.has(answer.instanceId))
      this.pending.set(answer.instanceId, { action: 'join', requestedAt, request: Promise.resolve() });
    await this.waitRunning(answer.instanceId, signal);
    return registryTarget(name, answer.instanceId, this.options.registry);
  }

  returnWhenOnline(player: Player, instanceId: string, signal: AbortSignal): void {
    if (signal.aborted) return;
    const limit = this.options.returnTimeoutMs ?? 600_000;
    const stop = (): void => {
      unsubscribe();
      this.timers.clearTimeout(timer);
      signal.removeEventListener('abort', stop);
    };
    const check = (): void => {
      if (!this.isRunning(instanceId)) return;
      stop();
      this.options.api.requestTransfer(player, instanceId).then(
        () =>
          this.options.logger.info(
            { player: player.name, instance: instanceId },
            'world online; transfer back from the fallback requested',
          ),
        (err: unknown) =>
          this.options.logger.warn(
            { player: player.name, instance: instanceId, err: (err as Error).message },
            'transfer back from the fallback failed; the player can rejoin',
          ),
      );
    };
    const unsubscribe = this.options.registry.subscribe(check);
    const timer = this.timers.setTimeout(stop, limit);
    signal.addEventListener('abort', stop, { once: true });
    check();
  }

  expectedStartMs(instanceId: string): number | null {
    return this.options.registry.get(instanceId)?.expectedStartMs ?? null;
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
    const now = this.clock.now();
    for (const [id, p] of this.pending) {
      if (this.isRunning(id)) {
        this.latency?.observe({ action: p.action }, (now - p.requestedAt) / 1000);
        this.pending.delete(id);
      } else if (now - p.requestedAt >= this.holdTimeoutMs * 3) {
        this.pending.delete(id);
      }
    }
  }

  private waitRunning(instanceId: string, signal: AbortSignal): Promise<void> {
    if (this.isRunning(instanceId)) {
      this.settle();
      return Promise.resolve();
    }
    const holdMs = this.holdTimeoutMs;
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error): void => {
        unsubscribe();
        this.timers.clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };
      const onAbort = (): void => done(new WakeFailed('timeout', 'wake hold ended'));
      const unsubscribe = this.options.registry.subscribe(() => {
        if (this.isRunning(instanceId)) done();
      });
      const timer = this.timers.setTimeout(
        () => done(new WakeFailed('timeout', `instance ${instanceId} not Running within ${holdMs} ms`)),
        holdMs,
      );
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
