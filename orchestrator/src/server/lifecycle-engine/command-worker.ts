// The durable command worker: claims due commands from the store (with a
// lease, so a crashed orchestrator's claims come back), dispatches them to the
// agent with x-command-id / x-request-id, records the outcome, and retries
// retryable failures with backoff. Agent calls are idempotent, so a command
// re-dispatched after a crash never makes a second container.

import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Command, Host, Instance, JsonObject } from '../../domain/index.js';
import { nextRetry, type RetryPolicy } from '../../lifecycle/command-retry.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { AgentClient, AgentInstanceEndpoint, PowerAction } from '../agent-client.js';
import type { Clock } from '../clock.js';
import { applyCreateFailure, applyCreateSuccess } from './command-effects.js';
import { agentCreateBody } from '../services/instance-config.js';

/** Runs `action` commands (the lifecycle engine, action-runner.ts). */
export interface ActionExecutor {
  run(cmd: Command, host: Host, log: Logger): Promise<JsonObject>;
  failedForGood(cmd: Command, message: string): Promise<void>;
}

export interface CommandWorkerHooks {
  /** Called after a create left the instance `starting`: the supervisor probes it and moves it on. */
  onContainerStarted?: (instance: Instance) => void | Promise<void>;
  /** Every finished command (metrics). */
  onOutcome?: (kind: string, outcome: 'succeeded' | 'retried' | 'failed') => void;
}

export interface CommandWorkerOptions {
  store: Store;
  agents: AgentClient;
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
  actions?: ActionExecutor;
  /** uid:gid of the `endercloud` container user mode. */
  endercloudUser?: { uid: number; gid: number };
  /** Stored import archives (create with `import`). */
  imports?: { open(uploadId: string): Promise<{ stream: Readable }> };
}

const POWER_KINDS: readonly string[] = ['start', 'stop', 'pause', 'unpause'];

export class CommandWorker {
  readonly workerId: string;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private ticking: Promise<void> | undefined;
  private again = false;
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly o: CommandWorkerOptions) {
    this.workerId = o.workerId ?? `worker-${randomUUID()}`;
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
      .then(() => undefined, (err: unknown) => this.o.logger.error({ err }, 'command worker tick failed'))
      .finally(() => {
        this.ticking = undefined;
        if (!this.running) return;
        if (this.again) {
          this.again = false;
          this.kick();
        } else {
          this.timer = setTimeout(() => this.kick(), this.o.pollIntervalMs);
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
    const free = this.o.batchSize - this.inFlight.size;
    if (free <= 0) return [];
    const claimed = await this.o.store.commands.claimDue(this.o.clock.now(), free, { claimer: this.workerId, leaseMs: this.o.leaseMs });
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
    const log = this.o.logger.child({ commandId: cmd.id, requestId: cmd.requestId, kind: cmd.kind, instanceId: cmd.instanceId, hostId: cmd.hostId });
    const renew = setInterval(() => {
      void this.o.store.commands.renewLease(cmd.id, this.workerId, this.o.clock.now() + this.o.leaseMs).catch(() => undefined);
    }, Math.max(50, Math.floor(this.o.leaseMs / 3)));
    renew.unref();
    try {
      const result = await this.execute(cmd, log);
      const held = await this.o.store.commands.succeed(cmd.id, result, { now: this.o.clock.now(), claimer: this.workerId });
      if (!held) log.warn('command finished after its lease was taken over; the outcome was recorded by the other claimer');
      this.o.hooks?.onOutcome?.(cmd.kind, 'succeeded');
      log.info({ attempt: cmd.attempts }, 'command succeeded');
    } catch (err) {
      await this.recordFailure(cmd, err, log);
    } finally {
      clearInterval(renew);
    }
  }

  private async recordFailure(cmd: Command, err: unknown, log: Logger): Promise<void> {
    const policy: RetryPolicy = { ...this.o.retry, maxAttempts: cmd.maxAttempts };
    const decision = nextRetry(cmd.attempts, err, this.o.random ?? Math.random, policy);
    const now = this.o.clock.now();
    const code = err instanceof AppError ? err.code : 'INTERNAL';
    const message = `${code}: ${err instanceof Error ? err.message : String(err)}`;
    try {
      if (decision.retry) {
        await this.o.store.commands.fail(cmd.id, message, { now, retryAt: now + decision.delayMs, claimer: this.workerId });
        this.o.hooks?.onOutcome?.(cmd.kind, 'retried');
        log.warn({ attempt: cmd.attempts, retryInMs: decision.delayMs, error: message }, 'command failed; will retry');
        return;
      }
      await this.o.store.commands.fail(cmd.id, decision.message === message ? message : `${code}: ${decision.message}`, { now, claimer: this.workerId });
      this.o.hooks?.onOutcome?.(cmd.kind, 'failed');
      log.error({ attempt: cmd.attempts, reason: decision.reason, error: message }, 'command failed for good');
      if (cmd.kind === 'create' && cmd.instanceId) await applyCreateFailure(this.o.store, cmd, message, now);
      if (cmd.kind === 'action' && this.o.actions) await this.o.actions.failedForGood(cmd, message);
    } catch (storeErr) {
      // The lease expires and the command is claimed again: nothing is lost.
      log.error({ err: storeErr }, 'could not record a command failure');
    }
  }

  private async execute(cmd: Command, log: Logger): Promise<JsonObject> {
    const { store, agents } = this.o;
    const host = cmd.hostId ? await store.hosts.get(cmd.hostId) : undefined;
    if (!host) throw new AppError('HOST_NOT_FOUND', `command ${cmd.id} targets host ${cmd.hostId ?? '(none)'}, which is not registered`);
    if (host.status === 'OFFLINE') throw new AppError('HOST_UNAVAILABLE', `host ${host.id} is OFFLINE`, { retryable: true });
    const ids = { commandId: cmd.id, requestId: cmd.requestId };
    const instanceId = cmd.instanceId ?? '';
    if (cmd.kind === 'create') {
      const instance = await store.instances.get(instanceId);
      if (!instance) throw new AppError('INSTANCE_NOT_FOUND', `instance ${instanceId} no longer exists`);
      const template = await this.templateOf(instance);
      const body = agentCreateBody(instance, template, this.o.endercloudUser ? { endercloudUser: this.o.endercloudUser } : {});
      const imp = importOf(cmd.payload);
      const start = cmd.payload.start !== false;
      // With an import the container is created stopped, the data goes in, and only then it starts.
      let res = await agents.create(host.controlUrl, instanceId, imp ? { ...body, start: false } : body, ids);
      if (imp) {
        await this.importData(cmd, host, imp, log);
        if (start) res = await agents.power(host.controlUrl, instanceId, 'start', undefined, ids);
      }
      const note = imp ? `; imported upload ${imp.uploadId} into ${imp.destination}` : '';
      const updated = await applyCreateSuccess(store, cmd, host, res, start, this.o.clock.now(), note);
      if (!start && !imp) await this.queueStop(cmd, host.id);
      else if (updated?.state === 'starting') await this.startedHook(updated, log);
      return endpointResult(res);
    }
    if (cmd.kind === 'action' && this.o.actions) return this.o.actions.run(cmd, host, log);
    if (POWER_KINDS.includes(cmd.kind)) {
      return endpointResult(await agents.power(host.controlUrl, instanceId, cmd.kind as PowerAction, cmd.payload, ids));
    }
    if (cmd.kind === 'delete') return { ...(await agents.remove(host.controlUrl, instanceId, ids)) };
    if (cmd.kind === 'cleanup') {
      const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
      const keepDataFor = strings(cmd.payload.keepDataFor);
      const report = await agents.cleanup(host.controlUrl, strings(cmd.payload.instanceIds), ids, keepDataFor);
      log.info({ hostId: host.id, removed: report.removed, skipped: report.skipped, dataKept: keepDataFor }, 'orphan cleanup done');
      return { removed: report.removed, skipped: report.skipped.map((s) => ({ ...s })), notFound: report.notFound };
    }
    throw new AppError('VALIDATION_FAILED', `unknown command kind ${cmd.kind}`);
  }

  private async importData(cmd: Command, host: Host, imp: { uploadId: string; destination: string }, log: Logger): Promise<void> {
    if (!this.o.imports) throw new AppError('INTERNAL', 'this orchestrator has no import store');
    const { stream } = await this.o.imports.open(imp.uploadId);
    try {
      const result = await this.o.agents.importData(host.controlUrl, cmd.instanceId as string, imp.destination, stream, { commandId: cmd.id, requestId: cmd.requestId });
      log.info({ uploadId: imp.uploadId, ...result }, 'import written before the first start');
    } catch (err) {
      stream.destroy();
      // A retry after the data went in (a later step failed) finds it there: the
      // agent never overwrites, so its conflict means this command's own import.
      if (cmd.attempts > 1 && err instanceof AppError && err.code === 'INSTANCE_CONFLICT') {
        log.warn({ uploadId: imp.uploadId, error: err.message }, 'import already present from an earlier attempt');
        return;
      }
      throw err;
    }
  }

  private async templateOf(instance: Instance) {
    const group = await this.o.store.groups.get(instance.groupId);
    const variant = group?.variants.find((v) => v.id === instance.variantId);
    return variant ? (await this.o.store.templates.get(variant.template.name, variant.template.version))?.spec : undefined;
  }

  /** The agent's create always starts the container; `start: false` stops it again right after. */
  private async queueStop(cmd: Command, hostId: string): Promise<void> {
    await this.o.store.commands.create({ id: `cmd-${randomUUID()}`, kind: 'stop', instanceId: cmd.instanceId, hostId, payload: {}, requestId: cmd.requestId }, this.o.clock.now());
  }

  private async startedHook(instance: Instance, log: Logger): Promise<void> {
    try {
      await this.o.hooks?.onContainerStarted?.(instance);
    } catch (err) {
      log.error({ err }, 'onContainerStarted hook failed');
    }
  }
}

function importOf(payload: JsonObject): { uploadId: string; destination: string } | undefined {
  const imp = payload.import as { uploadId?: unknown; destination?: unknown } | undefined;
  if (!imp || typeof imp.uploadId !== 'string') return undefined;
  return { uploadId: imp.uploadId, destination: typeof imp.destination === 'string' ? imp.destination : '.' };
}

function endpointResult(res: AgentInstanceEndpoint): JsonObject {
  return { containerId: res.containerId, containerName: res.containerName, hostPort: res.hostPort, endpoint: res.endpoint, state: res.state };
}
