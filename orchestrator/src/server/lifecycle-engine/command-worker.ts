// The durable command worker, the one command pipeline: claims due commands
// from the store (with a lease, so a crashed orchestrator's claims come back),
// runs each through the handler of its kind, records the outcome, and retries
// retryable failures with backoff. Handlers call the host driver with the
// command id, so a command re-dispatched after a crash never acts twice.

import { randomUUID } from 'node:crypto';
import type { Command, JsonObject } from '../../domain/index.js';
import { nextRetry, type RetryPolicy } from '../../lifecycle/command-retry.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { commandKindOf, type CommandHandlers } from './command-handler.js';

export interface CommandWorkerHooks {
  /** Every finished command (metrics). */
  onOutcome?: (kind: string, outcome: 'succeeded' | 'retried' | 'failed') => void;
}

export interface CommandWorkerOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  pollIntervalMs: number;
  leaseMs: number;
  batchSize: number;
  retry: Omit<RetryPolicy, 'maxAttempts'>;
  random?: () => number;
  hooks?: CommandWorkerHooks;
  /** Claimer id; unique per process so a restart never mistakes old claims for its own. */
  workerId?: string;
  /** One handler per command kind: the one pipeline every durable command runs through. */
  handlers: CommandHandlers;
  /** Claims only while this is true (the leader lease); default always. */
  isActive?: () => boolean;
}

export class CommandWorker {
  readonly workerId: string;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private ticking: Promise<void> | undefined;
  private again = false;
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly deps: CommandWorkerOptions) {
    this.workerId = deps.workerId ?? `worker-${randomUUID()}`;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.kick();
  }

  /** Runs a tick soon (after new commands were persisted). */
  kick(): void {
    if (!this.running) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.ticking = this.tick()
      .then(
        () => undefined,
        (err: unknown) => this.deps.logger.error({ err }, 'command worker tick failed'),
      )
      .finally(() => {
        this.ticking = undefined;
        if (!this.running) return;
        if (this.again) {
          this.again = false;
          this.kick();
        } else {
          this.timer = setTimeout(() => this.kick(), this.deps.pollIntervalMs);
          this.timer.unref();
        }
      });
  }

  /** Stops claiming and waits for dispatches in flight. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.ticking;
    await this.whenIdle();
  }

  async whenIdle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight.values()]);
  }

  /** Claims what is due and starts dispatching it; returns the claimed commands. */
  async tick(): Promise<Command[]> {
    const free = this.deps.batchSize - this.inFlight.size;
    if (free <= 0 || this.deps.isActive?.() === false) return [];
    const claimed = await this.deps.store.commands.claimDue(this.deps.clock.now(), free, {
      claimer: this.workerId,
      leaseMs: this.deps.leaseMs,
    });
    for (const cmd of claimed) {
      const run = this.dispatch(cmd).finally(() => {
        this.inFlight.delete(cmd.id);
        // A finished command may unblock the next one of the same instance.
        this.kick();
      });
      this.inFlight.set(cmd.id, run);
    }
    return claimed;
  }

  private async dispatch(cmd: Command): Promise<void> {
    const log = this.deps.logger.child({
      commandId: cmd.id,
      requestId: cmd.requestId,
      kind: cmd.kind,
      instanceId: cmd.instanceId,
      hostId: cmd.hostId,
    });
    const renew = setInterval(
      () => {
        void this.deps.store.commands.renewLease(cmd.id, this.workerId, this.deps.clock.now() + this.deps.leaseMs).catch(() => undefined);
      },
      Math.max(50, Math.floor(this.deps.leaseMs / 3)),
    );
    renew.unref();
    try {
      const result = await this.execute(cmd, log);
      const held = await this.deps.store.commands.succeed(cmd.id, result, { now: this.deps.clock.now(), claimer: this.workerId });
      if (!held) log.warn('command finished after its lease was taken over; the outcome was recorded by the other claimer');
      this.deps.hooks?.onOutcome?.(cmd.kind, 'succeeded');
      log.info({ attempt: cmd.attempts }, 'command succeeded');
    } catch (err) {
      await this.recordFailure(cmd, err, log);
    } finally {
      clearInterval(renew);
    }
  }

  private async recordFailure(cmd: Command, err: unknown, log: Logger): Promise<void> {
    const policy: RetryPolicy = { ...this.deps.retry, maxAttempts: cmd.maxAttempts };
    const decision = nextRetry(cmd.attempts, err, this.deps.random ?? Math.random, policy);
    const now = this.deps.clock.now();
    const code = err instanceof AppError ? err.code : 'INTERNAL';
    const message = `${code}: ${err instanceof Error ? err.message : String(err)}`;
    try {
      if (decision.retry) {
        await this.deps.store.commands.fail(cmd.id, message, { now, retryAt: now + decision.delayMs, claimer: this.workerId });
        this.deps.hooks?.onOutcome?.(cmd.kind, 'retried');
        log.warn({ attempt: cmd.attempts, retryInMs: decision.delayMs, error: message }, 'command failed; will retry');
        return;
      }
      await this.deps.store.commands.fail(cmd.id, decision.message === message ? message : `${code}: ${decision.message}`, {
        now,
        claimer: this.workerId,
      });
      this.deps.hooks?.onOutcome?.(cmd.kind, 'failed');
      log.error({ attempt: cmd.attempts, reason: decision.reason, error: message }, 'command failed for good');
      const kind = commandKindOf(cmd);
      if (kind) await this.deps.handlers[kind].failedForGood(cmd, message);
    } catch (storeErr) {
      // The lease expires and the command is claimed again: nothing is lost.
      log.error({ err: storeErr }, 'could not record a command failure');
    }
  }

  private async execute(cmd: Command, log: Logger): Promise<JsonObject> {
    const kind = commandKindOf(cmd);
    if (!kind)
      throw new AppError('VALIDATION_FAILED', `command ${cmd.id} has kind ${JSON.stringify(cmd.kind)}, which this version does not run`);
    const host = cmd.hostId ? await this.deps.store.hosts.get(cmd.hostId) : undefined;
    if (!host) throw new AppError('HOST_NOT_FOUND', `command ${cmd.id} targets host ${cmd.hostId ?? '(none)'}, which is not registered`);
    if (host.status === 'OFFLINE') throw new AppError('HOST_UNAVAILABLE', `host ${host.id} is OFFLINE`);
    return this.deps.handlers[kind].run(cmd, host, log);
  }
}
