// The agent's use cases for containers labelled with this host's id: create
// (idempotent), inventory, inspect, logs and power actions here; graceful stop
// and RCON in power.ts, replace in replace.ts, delete and cleanup in removal.ts.
// Actions on one instance run one at a time; steps undo their own partial work.

import type { Readable } from 'node:stream';
import type {
  CleanupReport,
  DeleteReport,
  InstanceDetails,
  InstanceEndpoint,
  InventoryEntry,
  KillAnswer,
  ReplaceResult,
  StopAnswer,
} from '../contracts/agent-api.js';
import type { PortRange } from '../shared/config.js';
import { AppError, isAppError } from '../shared/errors.js';
import { RESOURCE_ID_PATTERN, assertId } from '../shared/ids.js';
import { AsyncLock, KeyedLock } from './async-lock.js';
import {
  DEFAULT_CONTAINER_PORT,
  callerLabels,
  directoryOwner,
  containerLabels,
  recordedUser,
  validateCreateRequest,
  type CreateInstanceRequest,
} from './container-config.js';
import type { InstanceInternals, InstanceServiceOptions, Log } from './instance-internals.js';
import { currentRunSince } from './log-window.js';
import { LABEL, containerEnv, containerName, hostSelector, isManagedBy, labelledHostPort } from './labels.js';
import {
  defaultRconConnect,
  gracefulStop,
  killNow,
  rconCommand,
  type PowerDeps,
  type RconTarget,
  type StopOptions,
  type StopResult,
} from './power.js';
import { cleanupInstances, deleteInstance, type DeleteOptions } from './removal.js';
import { replaceInstance, type ReplaceRequest } from './replace.js';
import {
  HostPortTakenError,
  runtimeAbility,
  type ContainerDetails,
  type LogFollowRuntime,
  type ContainerState,
  type ProgressListener,
} from './runtime.js';
import {
  INSTALL_LABEL,
  WINGS_SERVER_DIRECTORY,
  applyConfigFiles,
  configFilesOf,
  ownTree,
  publishedIp,
  runInstall,
  stdinOf,
  wingsAgentEnv,
} from './egg-runtime.js';
import type { InstallAnswer, InstallBody } from '../contracts/agent-api.js';

export { DEFAULT_CONTAINER_PORT, type CreateInstanceRequest };
export type { CleanupReport, DeleteReport, InstanceEndpoint, InstanceInternals, InstanceServiceOptions, Log, ReplaceResult };
/** The wire names of the service's answers (src/contracts/agent-api.ts). */
export type InstanceSummary = InventoryEntry;
export type InstanceInspection = InstanceDetails;
export type { StopAnswer };

export const MAX_LOG_LINES = 1000;
export const MAX_LOG_BYTES = 1024 * 1024;
const MAX_PORT_ATTEMPTS = 3;

function endpointOf(gameAddress: string, hostPort: number | undefined): string | null {
  if (hostPort === undefined) return null;
  return `${gameAddress.includes(':') ? `[${gameAddress}]` : gameAddress}:${hostPort}`;
}

export class InstanceService implements InstanceInternals {
  private readonly createLock = new AsyncLock();
  /**
   * The agent's one lock per instance: start, stop, pause, replace, delete here, and backup,
   * restore and import (BackupService, DataImporter get this same lock), queued one at a time.
   */
  readonly instanceLocks: KeyedLock;
  /** Containers this agent paused, by instance: the wake's unpause needs no list and inspect (see unpause). */
  private readonly pausedHere = new Map<string, ContainerDetails>();
  /** Install containers running now, by instance: the instance's log is theirs until they are removed. */
  private readonly installing = new Map<string, string>();
  /** Ports chosen for a replacement container before its old container is removed (port → instance). */
  private readonly promised = new Map<number, string>();
  /** Containers a graceful stop is waiting on now, and those of them a kill ended (the stop's answer says so). */
  private readonly stopping = new Set<string>();
  private readonly killedWhileStopping = new Set<string>();
  readonly powerDeps: PowerDeps;

  constructor(readonly deps: InstanceServiceOptions) {
    this.instanceLocks = new KeyedLock((instanceId) =>
      deps.logger.debug({ instanceId }, 'action queued behind another action on this instance'),
    );
    this.powerDeps = {
      runtime: deps.runtime,
      defaultStopTimeoutSeconds: deps.defaultStopTimeoutSeconds,
      rconConnect: deps.rconConnect ?? defaultRconConnect,
    };
  }

  get portRange(): PortRange {
    return this.deps.ports.range;
  }

  private locked<T>(instanceId: string, fn: () => Promise<T>): Promise<T> {
    assertId('instance id', instanceId, RESOURCE_ID_PATTERN);
    return this.instanceLocks.run(instanceId, fn);
  }

  async create(instanceId: string, req: CreateInstanceRequest, log: Log = this.deps.logger): Promise<InstanceEndpoint> {
    validateCreateRequest(instanceId, req);
    return this.locked(instanceId, () => this.createLocked(instanceId, req, log));
  }

  private async createLocked(instanceId: string, req: CreateInstanceRequest, log: Log): Promise<InstanceEndpoint> {
    const existing = await this.existingFor(instanceId, containerName(req.variantId, instanceId));
    if (existing) return req.start === false ? this.endpoint(existing, existing.state) : this.resume(instanceId, existing, log);

    const layerDirs: string[] = [];
    for (const layer of req.layers) layerDirs.push(await this.deps.layers.ensure(layer));
    let materialized = false;
    if (!(await this.deps.directories.exists(instanceId))) {
      // The container user owns what it must write; ownership is set only here, at creation.
      await this.deps.directories.materialize(instanceId, layerDirs, directoryOwner(req.user));
      materialized = true;
    }
    try {
      await this.pullImage(req.image, req.pull, log);
      const created = await this.placeContainer(instanceId, req, { start: req.start !== false }, log);
      log.info({ instanceId, containerId: created.containerId, hostPort: created.hostPort }, 'instance created');
      return created;
    } catch (err) {
      if (materialized) {
        await this.deps.directories
          .remove(instanceId)
          .catch((e: unknown) => log.warn({ err: e, instanceId }, 'could not remove a half-created runtime directory'));
      }
      throw err;
    }
  }

  async pullImage(image: string, policy: CreateInstanceRequest['pull'], log: Log): Promise<void> {
    const { pulled } = await this.deps.runtime.ensureImage(image, pullProgressLogger(log, image), policy ?? 'missing');
    if (pulled) log.info({ image }, 'image pulled');
  }

  async placeContainer(
    instanceId: string,
    req: Omit<CreateInstanceRequest, 'layers'>,
    options: { preferredPort?: number; avoidPort?: number; start: boolean },
    log: Log,
  ): Promise<InstanceEndpoint> {
    const name = containerName(req.variantId, instanceId);
    // A host listener the bind probe cannot see (the agent runs in its own
    // network namespace under Compose) fails the start: try the next port.
    const skipped = new Set<number>(options.avoidPort !== undefined ? [options.avoidPort] : []);
    for (let attempt = 1; ; attempt++) {
      const preferred = options.preferredPort !== undefined && !skipped.has(options.preferredPort) ? options.preferredPort : undefined;
      const { id, hostPort, labels } = await this.createLock.run(() => this.createContainer(instanceId, name, req, skipped, preferred));
      try {
        if (options.start) await this.startContainer(instanceId, id, labels, log);
        const state = (await this.deps.runtime.inspect(id))?.state ?? 'unknown';
        return { instanceId, containerId: id, containerName: name, hostPort, endpoint: endpointOf(this.deps.gameAddress, hostPort), state };
      } catch (err) {
        await this.deps.runtime
          .remove(id)
          .catch((e: unknown) => log.warn({ err: e, containerId: id }, 'could not remove a half-created container'));
        if (attempt >= MAX_PORT_ATTEMPTS || !(err instanceof HostPortTakenError)) throw err;
        log.warn({ instanceId, hostPort }, 'game port taken outside the container runtime; trying the next one');
        skipped.add(hostPort);
      }
    }
  }

  /**
   * Chooses the port of a replacement container while the old container still
   * exists, and holds it for this instance until releasePromised: a range with
   * no free port throws before anything was removed. `freed` is the old
   * container's own port (free for its successor unless `avoid`ed).
   */
  promisePort(instanceId: string, options: { preferred?: number; avoid?: number; freed?: number }): Promise<number> {
    return this.createLock.run(async () => {
      const reserved = this.promisedToOthers(instanceId);
      if (options.avoid !== undefined) reserved.add(options.avoid);
      const port = await this.deps.ports.allocate(reserved, options.preferred, new Set(options.freed !== undefined ? [options.freed] : []));
      this.promised.set(port, instanceId);
      return port;
    });
  }

  releasePromised(instanceId: string): void {
    for (const [port, owner] of this.promised) if (owner === instanceId) this.promised.delete(port);
  }

  private promisedToOthers(instanceId: string): Set<number> {
    return new Set([...this.promised].filter(([, owner]) => owner !== instanceId).map(([port]) => port));
  }

  private async createContainer(
    instanceId: string,
    name: string,
    req: Omit<CreateInstanceRequest, 'layers'>,
    skipped: ReadonlySet<number>,
    preferred: number | undefined,
  ): Promise<{ id: string; hostPort: number; labels: Record<string, string> }> {
    const port = await this.deps.ports.allocate(new Set([...skipped, ...this.promisedToOthers(instanceId)]), preferred);
    const wings = req.layout === 'wings';
    const ip = publishedIp(this.deps.gameBindAddress);
    const labels = containerLabels(this.deps.agentId, instanceId, req, port, ip);
    const created = await this.deps.runtime
      .create({
        name,
        image: req.image,
        ...(req.command ? { command: req.command } : {}),
        env: containerEnv(req.env ?? {}, {
          ...(wings ? wingsAgentEnv(ip, this.deps.timezone ?? 'UTC') : {}),
          ENDERCLOUD_INSTANCE_ID: instanceId,
          ENDERCLOUD_ORCHESTRATOR_URL: this.deps.orchestratorUrl,
        }),
        ...(wings ? { dataTarget: WINGS_SERVER_DIRECTORY, workingDir: WINGS_SERVER_DIRECTORY } : {}),
        labels,
        memoryBytes: req.resources.memoryMb * 1024 * 1024,
        ...(req.resources.cpus ? { cpus: req.resources.cpus } : {}),
        dataHostPath: this.deps.directories.hostPath(instanceId),
        port: { containerPort: req.containerPort ?? DEFAULT_CONTAINER_PORT, hostPort: port, hostIp: this.deps.gameBindAddress },
        ...(req.user !== undefined ? { user: req.user } : {}),
        ...(req.stopSignal !== undefined ? { stopSignal: req.stopSignal } : {}),
        ...(req.stopTimeoutSeconds !== undefined ? { stopTimeoutSeconds: req.stopTimeoutSeconds } : {}),
        ...(req.openStdin ? { openStdin: true } : {}),
        ...(req.security?.capAdd ? { capAdd: req.security.capAdd } : {}),
        ...(req.security?.readOnlyRootfs === false ? { readOnlyRootfs: false } : {}),
      })
      .catch((err: unknown) => {
        if (isAppError(err) && err.code === 'CONFLICT') {
          throw new AppError('INSTANCE_CONFLICT', `container name ${name} is taken by a container this agent does not manage`, {
            cause: err,
          });
        }
        throw err;
      });
    return { id: created.id, hostPort: port, labels };
  }

  /** The managed container for this instance, if any; a foreign container holding the name is a conflict. */
  private async existingFor(instanceId: string, name: string): Promise<ContainerDetails | undefined> {
    const owned = await this.findOwned(instanceId);
    if (owned) return owned;
    const named = await this.deps.runtime.inspect(name);
    if (!named) return undefined;
    if (isManagedBy(named.labels, this.deps.agentId, instanceId)) return named;
    throw new AppError(
      'INSTANCE_CONFLICT',
      `container ${name} exists but is not managed by agent ${this.deps.agentId} for instance ${instanceId}; it was left untouched`,
    );
  }

  private async resume(instanceId: string, existing: ContainerDetails, log: Log): Promise<InstanceEndpoint> {
    let state = existing.state;
    if (state === 'created' || state === 'exited') {
      await this.startContainer(instanceId, existing.id, existing.labels, log);
      state = (await this.deps.runtime.inspect(existing.id))?.state ?? 'unknown';
      log.info({ containerId: existing.id }, 'existing instance container started');
    }
    return this.endpoint(existing, state);
  }

  async findOwned(instanceId: string): Promise<ContainerDetails | undefined> {
    const list = await this.deps.runtime.list({ ...hostSelector(this.deps.agentId), [LABEL.instance]: instanceId });
    for (const c of list) {
      const details = await this.deps.runtime.inspect(c.id);
      if (details && isManagedBy(details.labels, this.deps.agentId, instanceId)) return details;
    }
    return undefined;
  }

  private async requireOwned(instanceId: string): Promise<ContainerDetails> {
    assertId('instance id', instanceId, RESOURCE_ID_PATTERN);
    const found = await this.findOwned(instanceId);
    if (!found) throw new AppError('INSTANCE_NOT_FOUND', `instance ${instanceId} has no container on host ${this.deps.agentId}`);
    return found;
  }

  endpoint(c: ContainerDetails, state: ContainerState = c.state): InstanceEndpoint {
    const hostPort = labelledHostPort(c.labels);
    return {
      instanceId: c.labels[LABEL.instance] ?? '',
      containerId: c.id,
      containerName: c.name,
      hostPort: hostPort ?? null,
      endpoint: endpointOf(this.deps.gameAddress, hostPort),
      state,
    };
  }

  private summarize(c: ContainerDetails): InstanceSummary {
    return {
      ...this.endpoint(c),
      groupId: c.labels[LABEL.group] || null,
      variantId: c.labels[LABEL.variant] || null,
      sessionId: c.labels[LABEL.session] || null,
      image: c.image,
      user: recordedUser(c.labels, c.user) || null,
      labels: callerLabels(c.labels),
      exitCode: c.exitCode,
      oomKilled: c.oomKilled,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      restartCount: c.restartCount,
    };
  }

  async inventory(): Promise<InstanceSummary[]> {
    const list = (await this.deps.runtime.list(hostSelector(this.deps.agentId))).filter((c) => isManagedBy(c.labels, this.deps.agentId));
    const details = await Promise.all(list.map((c) => this.deps.runtime.inspect(c.id)));
    // A container removed between list and inspect is simply no longer there.
    return details
      .filter((d): d is ContainerDetails => d !== undefined && isManagedBy(d.labels, this.deps.agentId))
      .map((d) => this.summarize(d));
  }

  async inspect(instanceId: string): Promise<InstanceInspection> {
    const c = await this.requireOwned(instanceId);
    return { ...this.summarize(c), createdAt: c.createdAt };
  }

  /** The output tail; `since: 'start'` keeps only the container's current (or last) run — what a log readiness probe must see. While an install script runs, its output. */
  async logs(instanceId: string, tail: number, options: { since?: 'start' } = {}): Promise<string> {
    const c = await this.requireOwned(instanceId);
    const lines = Math.max(1, Math.min(MAX_LOG_LINES, Math.floor(tail)));
    const install = this.installing.get(instanceId);
    if (install !== undefined) {
      const text = await this.deps.runtime.logs(install, { tail: lines, maxBytes: MAX_LOG_BYTES }).catch(() => undefined);
      if (text !== undefined) return text; // removed in between: the server's own log below
    }
    const since = options.since === 'start' ? currentRunSince(c) : undefined;
    if (since === null) return ''; // never started: no output of a run yet
    return this.deps.runtime.logs(c.id, { tail: lines, maxBytes: MAX_LOG_BYTES, ...(since !== undefined ? { sinceNanos: since } : {}) });
  }

  /**
   * The output from the last `tail` lines on, as the server writes it, until the container's log
   * ends or the stream is destroyed. While an install script runs, its output, until it ends.
   */
  async followLogs(instanceId: string, tail: number): Promise<Readable> {
    const c = await this.requireOwned(instanceId);
    const lines = Math.max(1, Math.min(MAX_LOG_LINES, Math.floor(tail)));
    const follower = runtimeAbility<LogFollowRuntime>(this.deps.runtime, 'followLogs', "follow a container's log");
    const install = this.installing.get(instanceId);
    if (install !== undefined) {
      const stream = await follower.followLogs(install, { tail: lines }).catch(() => undefined);
      if (stream) return stream;
    }
    return follower.followLogs(c.id, { tail: lines });
  }

  start(instanceId: string, log: Log = this.deps.logger): Promise<InstanceEndpoint> {
    return this.power(instanceId, log, 'start', async (c) => {
      if (c.state === 'paused') throw invalidTransition(instanceId, c.state, 'start', 'unpause it instead');
      if (c.state !== 'running') await this.startContainer(instanceId, c.id, c.labels, log);
    });
  }

  /** Graceful stop: RCON or signal, wait, kill after the timeout; says which path was taken. */
  stop(instanceId: string, options: StopOptions | number | undefined, log: Log = this.deps.logger): Promise<StopAnswer> {
    const opts: StopOptions = typeof options === 'number' ? { timeoutSeconds: options } : (options ?? {});
    return this.locked(instanceId, async () => {
      const c = await this.requireOwned(instanceId);
      this.stopping.add(c.id);
      this.killedWhileStopping.delete(c.id);
      let result: StopResult;
      try {
        result = await gracefulStop(this.powerDeps, c, opts, log);
      } finally {
        this.stopping.delete(c.id);
      }
      if (this.killedWhileStopping.delete(c.id)) result = { ...result, killed: true, killedOnRequest: true };
      const state = (await this.deps.runtime.inspect(c.id))?.state ?? 'unknown';
      log.info(
        { instanceId, containerId: c.id, action: 'stop', state, method: result.method, killed: result.killed },
        'instance power action done',
      );
      return { ...this.endpoint(c, state), ...result };
    });
  }

  /**
   * SIGKILL at once, outside the instance lock: the one action that does not queue, so it can end
   * a stop that hangs (that stop then sees its container gone and answers). Idempotent: a container
   * that is not running is left alone.
   */
  async kill(instanceId: string, log: Log = this.deps.logger): Promise<KillAnswer> {
    const c = await this.requireOwned(instanceId);
    let during = false;
    // Marked before the signal: the stop it ends may answer before this call does.
    const result = await killNow(this.powerDeps, c, log, () => {
      during = this.stopping.has(c.id);
      if (during) this.killedWhileStopping.add(c.id);
    });
    if (!result.killed) this.killedWhileStopping.delete(c.id);
    this.pausedHere.delete(instanceId);
    const state = (await this.deps.runtime.inspect(c.id))?.state ?? 'unknown';
    log.info(
      { instanceId, containerId: c.id, action: 'kill', state, killed: result.killed, duringStop: during },
      'instance power action done',
    );
    return { ...this.endpoint(c, state), ...result };
  }

  /**
   * The one way a container is started (POST start, a retried create, a fresh create, a replace
   * that keeps its container): the template's config-file edits from the container's labels,
   * then the engine's start. Called under the instance lock.
   */
  async startContainer(instanceId: string, containerId: string, labels: Readonly<Record<string, string>>, log: Log): Promise<void> {
    await this.applyConfigEdits(instanceId, labels, log);
    await this.deps.runtime.start(containerId);
  }

  /** Egg config-file edits before a start, inside the instance directory only. */
  private async applyConfigEdits(instanceId: string, labels: Readonly<Record<string, string>>, log: Log): Promise<void> {
    const plans = configFilesOf(labels);
    if (plans.length === 0) return;
    const changed = await applyConfigFiles(
      this.deps.directories.localPath(instanceId),
      plans,
      directoryOwner(labels[LABEL.user] || undefined),
    );
    log.info({ instanceId, changed }, 'config files edited before the start');
  }

  /** One line on the container's open stdin (egg consoles). */
  writeStdin(instanceId: string, line: string, log: Log = this.deps.logger): Promise<{ written: true }> {
    return this.locked(instanceId, async () => {
      const c = await this.requireOwned(instanceId);
      if (c.state !== 'running')
        throw new AppError('INSTANCE_NOT_RUNNING', `instance container ${c.name} is ${c.state}; stdin needs a running server`);
      await stdinOf(this.deps.runtime).writeStdin(c.id, `${line}\n`);
      log.info({ instanceId, command: line.trim().split(/\s+/)[0] ?? '' }, 'line written to stdin');
      return { written: true };
    });
  }

  /**
   * Runs an egg install script against the (stopped) instance directory in its own container, as
   * root; while it runs, the instance's log is the script's output. Afterwards (also after a
   * failure or a timeout) every file is given to the instance container's user.
   */
  install(instanceId: string, body: InstallBody, log: Log = this.deps.logger): Promise<InstallAnswer> {
    return this.locked(instanceId, async () => {
      const c = await this.requireOwned(instanceId);
      if (c.state === 'running' || c.state === 'paused')
        throw new AppError('INSTANCE_CONFLICT', `instance ${instanceId} is ${c.state}: install scripts run while its server is stopped`);
      const owner = directoryOwner(c.labels[LABEL.user] || undefined);
      const name = `${c.name}-install`;
      // A run cut short by an agent crash leaves its container: this instance's own is removed, anything else holding the name is a conflict.
      const stale = await this.deps.runtime.inspect(name);
      if (stale && stale.labels[INSTALL_LABEL] === instanceId && stale.labels[LABEL.host] === this.deps.agentId)
        await this.deps.runtime.remove(stale.id);
      let answer: InstallAnswer;
      let owned = 0;
      try {
        answer = await runInstall(
          this.deps.runtime,
          {
            name,
            hostPath: this.deps.directories.hostPath(instanceId),
            labels: { [INSTALL_LABEL]: instanceId, [LABEL.host]: this.deps.agentId },
            onStarted: (containerId) => this.installing.set(instanceId, containerId),
            // Wings gives the install container the server's environment, its address and time zone included.
          },
          { ...body, env: { ...wingsAgentEnv(publishedIp(this.deps.gameBindAddress), this.deps.timezone ?? 'UTC'), ...(body.env ?? {}) } },
        );
      } finally {
        this.installing.delete(instanceId);
        // Root made these files: the server's user must own what it writes, whatever the script did.
        if (owner) owned = await ownTree(this.deps.directories.localPath(instanceId), owner);
      }
      log.info(
        { instanceId, exitCode: answer.exitCode, timedOut: answer.timedOut, durationMs: answer.durationMs, owned },
        'install script finished',
      );
      return { ...answer, owned };
    });
  }

  /** One console command over RCON; the password is never logged. */
  rcon(instanceId: string, target: RconTarget, command: string, log: Log = this.deps.logger): Promise<{ response: string }> {
    return this.locked(instanceId, async () => {
      const c = await this.requireOwned(instanceId);
      return { response: await rconCommand(this.powerDeps, c, target, command, log) };
    });
  }

  pause(instanceId: string, log: Log = this.deps.logger): Promise<InstanceEndpoint> {
    return this.power(instanceId, log, 'pause', async (c) => {
      if (c.state !== 'paused' && c.state !== 'running')
        throw invalidTransition(instanceId, c.state, 'pause', 'only a running instance can be paused');
      if (c.state === 'running') await this.deps.runtime.pause(c.id);
      this.pausedHere.set(instanceId, c);
      return 'paused';
    });
  }

  unpause(instanceId: string, log: Log = this.deps.logger): Promise<InstanceEndpoint> {
    const frozen = this.pausedHere.get(instanceId);
    this.pausedHere.delete(instanceId);
    if (frozen) {
      // The wake's fast path: the container this agent paused, by its id (a container's labels,
      // and so its ownership, never change). Any refusal (gone, replaced, not paused) takes the checked path.
      return this.locked(instanceId, async () => {
        try {
          await this.deps.runtime.unpause(frozen.id);
          log.info({ instanceId, containerId: frozen.id, action: 'unpause', state: 'running' }, 'instance power action done');
          return this.endpoint(frozen, 'running');
        } catch {
          return this.checkedUnpause(instanceId, log);
        }
      });
    }
    return this.locked(instanceId, () => this.checkedUnpause(instanceId, log));
  }

  private checkedUnpause(instanceId: string, log: Log): Promise<InstanceEndpoint> {
    return this.powerUnlocked(instanceId, log, 'unpause', async (c) => {
      if (c.state === 'running') return 'running';
      if (c.state !== 'paused') throw invalidTransition(instanceId, c.state, 'unpause', 'only a paused instance can be unpaused');
      await this.deps.runtime.unpause(c.id);
      return 'running';
    });
  }

  /** `act` returns the state the engine's answer implies (pause, unpause: no inspect on a wake's path), or nothing to inspect it. */
  private power(
    instanceId: string,
    log: Log,
    action: string,
    act: (c: ContainerDetails) => Promise<ContainerState | void>,
  ): Promise<InstanceEndpoint> {
    return this.locked(instanceId, () => this.powerUnlocked(instanceId, log, action, act));
  }

  private async powerUnlocked(
    instanceId: string,
    log: Log,
    action: string,
    act: (c: ContainerDetails) => Promise<ContainerState | void>,
  ): Promise<InstanceEndpoint> {
    const c = await this.requireOwned(instanceId);
    const state = (await act(c)) ?? (await this.deps.runtime.inspect(c.id))?.state ?? 'unknown';
    log.info({ instanceId, containerId: c.id, action, state }, 'instance power action done');
    return this.endpoint(c, state);
  }

  /** Recreates the container with a new config on the same runtime directory (see replace.ts). */
  replace(instanceId: string, req: ReplaceRequest, log: Log = this.deps.logger): Promise<ReplaceResult> {
    validateCreateRequest(instanceId, req);
    return this.locked(instanceId, () => replaceInstance(this, instanceId, req, log));
  }

  /** Removes the container and, by scope, nothing / listed paths / the whole runtime directory. */
  delete(instanceId: string, options: DeleteOptions = {}, log: Log = this.deps.logger): Promise<DeleteReport> {
    return this.locked(instanceId, () => deleteInstance(this, instanceId, options, log));
  }

  /** Removes orphan containers, re-checking ownership labels immediately before each removal. */
  cleanup(instanceIds: readonly string[], keepDataFor: readonly string[] = [], log: Log = this.deps.logger): Promise<CleanupReport> {
    return cleanupInstances(this, instanceIds, new Set(keepDataFor), (id, fn) => this.instanceLocks.run(id, fn), log);
  }
}

function invalidTransition(instanceId: string, state: string, action: string, hint: string): AppError {
  return new AppError('INVALID_TRANSITION', `cannot ${action} instance ${instanceId} while it is ${state}: ${hint}`);
}

function pullProgressLogger(log: Log, image: string): ProgressListener {
  let announced = false;
  return (event) => {
    if (!announced) {
      announced = true;
      log.info({ image }, 'pulling image');
    }
    const level = event.status === 'Pull complete' ? 'info' : 'debug';
    log[level]({ image, layer: event.id, status: event.status, current: event.current, total: event.total }, 'image pull progress');
  };
}
