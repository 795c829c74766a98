// The agent's use cases: create (idempotent), inventory, inspect, logs, power
// actions, delete and orphan cleanup, for containers labelled with this host's
// id only. Steps undo their own partial work on failure (Agones' habit).

import type { PortRange } from '../shared/config.js';
import { AppError, isAppError } from '../shared/errors.js';
import { INSTANCE_ID_PATTERN, assertChecksum, assertId, isValidId } from '../shared/ids.js';
import type { Logger } from '../shared/logger.js';
import { AsyncLock, KeyedLock } from './async-lock.js';
import type { LayerCache, LayerRef, RuntimeDirectories } from './contracts.js';
import { LABEL, containerEnv, containerName, hostSelector, isManagedBy, labelledHostPort, ownershipLabels } from './labels.js';
import type { PortAllocator } from './port-allocator.js';
import type { ContainerDetails, ContainerRuntime, ContainerState, ContainerSummary, ProgressListener } from './runtime.js';

/** The slice of a logger the service uses; a request's child logger fits. */
export type Log = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export const MAX_LOG_LINES = 1000;
export const MAX_LOG_BYTES = 1024 * 1024;
export const DEFAULT_CONTAINER_PORT = 25565;
const MAX_PORT_ATTEMPTS = 3;

function isPortInUse(err: unknown): boolean {
  return /port is already allocated|address already in use/i.test(err instanceof Error ? err.message : String(err));
}

export interface CreateInstanceRequest {
  groupId: string;
  variantId: string;
  sessionId?: string;
  image: string;
  layers: LayerRef[];
  resources: { memoryMb: number; cpus?: number };
  env?: Record<string, string>;
  containerPort?: number;
  command?: string[];
}

export interface InstanceEndpoint {
  instanceId: string;
  containerId: string;
  containerName: string;
  hostPort: number | null;
  endpoint: string | null;
  state: ContainerState;
}

export interface InstanceSummary extends InstanceEndpoint {
  groupId: string | null;
  variantId: string | null;
  sessionId: string | null;
}

export interface InstanceInspection extends InstanceSummary {
  image: string;
  exitCode: number | null;
  oomKilled: boolean;
  startedAt: string | null;
  finishedAt: string | null;
  createdAt: string | null;
  restartCount: number;
}

export interface CleanupReport {
  removed: string[];
  skipped: { instanceId: string; reason: string }[];
  notFound: string[];
}

export interface InstanceServiceOptions {
  agentId: string;
  orchestratorUrl: string;
  gameAddress: string;
  gameBindAddress: string;
  network: string;
  defaultStopTimeoutSeconds: number;
  runtime: ContainerRuntime;
  layers: LayerCache;
  directories: RuntimeDirectories;
  ports: PortAllocator;
  logger: Logger;
}

function endpointOf(gameAddress: string, hostPort: number | undefined): string | null {
  if (hostPort === undefined) return null;
  return `${gameAddress.includes(':') ? `[${gameAddress}]` : gameAddress}:${hostPort}`;
}

export class InstanceService {
  private readonly createLock = new AsyncLock();
  private readonly instanceLocks = new KeyedLock();

  constructor(private readonly o: InstanceServiceOptions) {}

  get portRange(): PortRange {
    return this.o.ports.range;
  }

  async create(instanceId: string, req: CreateInstanceRequest, log: Log = this.o.logger): Promise<InstanceEndpoint> {
    assertId('instance id', instanceId, INSTANCE_ID_PATTERN);
    assertId('groupId', req.groupId);
    assertId('variantId', req.variantId);
    if (req.sessionId !== undefined) assertId('sessionId', req.sessionId);
    for (const layer of req.layers) {
      assertId('layer id', layer.id);
      assertChecksum(layer.checksum);
    }
    return this.instanceLocks.run(instanceId, () => this.createLocked(instanceId, req, log));
  }

  private async createLocked(instanceId: string, req: CreateInstanceRequest, log: Log): Promise<InstanceEndpoint> {
    const name = containerName(req.variantId, instanceId);
    const existing = await this.existingFor(instanceId, name);
    if (existing) return this.resume(existing, log);

    const layerDirs: string[] = [];
    for (const layer of req.layers) layerDirs.push(await this.o.layers.ensure(layer));
    let materialized = false;
    if (!(await this.o.directories.exists(instanceId))) {
      await this.o.directories.materialize(instanceId, layerDirs);
      materialized = true;
    }
    let containerId: string | undefined;
    try {
      const { pulled } = await this.o.runtime.ensureImage(req.image, pullProgressLogger(log, req.image));
      if (pulled) log.info({ image: req.image }, 'image pulled');
      await this.o.runtime.ensureNetwork(this.o.network);
      // A host listener the bind probe cannot see (the agent runs in its own
      // network namespace under Compose) fails the start: try the next port.
      const skipped = new Set<number>();
      let id = '';
      let hostPort = 0;
      for (let attempt = 1; ; attempt++) {
        ({ id, hostPort } = await this.createLock.run(() => this.createContainer(instanceId, name, req, skipped)));
        containerId = id;
        try {
          await this.o.runtime.start(id);
          break;
        } catch (err) {
          if (attempt >= MAX_PORT_ATTEMPTS || !isPortInUse(err)) throw err;
          log.warn({ instanceId, hostPort }, 'game port taken outside Docker; trying the next one');
          skipped.add(hostPort);
          await this.o.runtime.remove(id);
          containerId = undefined;
        }
      }
      const state = (await this.o.runtime.inspect(id))?.state ?? 'unknown';
      log.info({ instanceId, containerId: id, hostPort }, 'instance created');
      return { instanceId, containerId: id, containerName: name, hostPort, endpoint: endpointOf(this.o.gameAddress, hostPort), state };
    } catch (err) {
      await this.undoCreate(instanceId, containerId, materialized, log);
      throw err;
    }
  }

  private async createContainer(instanceId: string, name: string, req: CreateInstanceRequest, skipped: ReadonlySet<number>): Promise<{ id: string; hostPort: number }> {
    const port = await this.o.ports.allocate(skipped);
    const created = await this.o.runtime
      .create({
        name,
        image: req.image,
        ...(req.command ? { command: req.command } : {}),
        env: containerEnv(req.env ?? {}, {
          ENDERCLOUD_INSTANCE_ID: instanceId,
          ENDERCLOUD_ORCHESTRATOR_URL: this.o.orchestratorUrl,
        }),
        labels: ownershipLabels({ agentId: this.o.agentId, instanceId, groupId: req.groupId, variantId: req.variantId, sessionId: req.sessionId, hostPort: port }),
        memoryBytes: req.resources.memoryMb * 1024 * 1024,
        ...(req.resources.cpus ? { cpus: req.resources.cpus } : {}),
        dataHostPath: this.o.directories.hostPath(instanceId),
        port: { containerPort: req.containerPort ?? DEFAULT_CONTAINER_PORT, hostPort: port, hostIp: this.o.gameBindAddress },
        network: this.o.network,
      })
      .catch((err: unknown) => {
        if (isAppError(err) && err.code === 'CONFLICT') {
          throw new AppError('INSTANCE_CONFLICT', `container name ${name} is taken by a container this agent does not manage`, { cause: err });
        }
        throw err;
      });
    return { id: created.id, hostPort: port };
  }

  private async undoCreate(instanceId: string, containerId: string | undefined, materialized: boolean, log: Log): Promise<void> {
    if (containerId) {
      await this.o.runtime.remove(containerId).catch((e: unknown) => log.warn({ err: e, containerId }, 'could not remove a half-created container'));
    }
    if (materialized) {
      await this.o.directories.remove(instanceId).catch((e: unknown) => log.warn({ err: e, instanceId }, 'could not remove a half-created runtime directory'));
    }
  }

  /** The managed container for this instance, if any; a foreign container holding the name is a conflict. */
  private async existingFor(instanceId: string, name: string): Promise<ContainerDetails | undefined> {
    const owned = await this.findOwned(instanceId);
    if (owned) return owned;
    const named = await this.o.runtime.inspect(name);
    if (!named) return undefined;
    if (isManagedBy(named.labels, this.o.agentId, instanceId)) return named;
    throw new AppError('INSTANCE_CONFLICT', `container ${name} exists but is not managed by agent ${this.o.agentId} for instance ${instanceId}; it was left untouched`);
  }

  private async resume(existing: ContainerDetails, log: Log): Promise<InstanceEndpoint> {
    let state = existing.state;
    if (state === 'created' || state === 'exited') {
      await this.o.runtime.start(existing.id);
      state = (await this.o.runtime.inspect(existing.id))?.state ?? 'unknown';
      log.info({ containerId: existing.id }, 'existing instance container started');
    }
    const summary = this.summarize(existing);
    return { ...endpointFields(summary), state };
  }

  private async findOwned(instanceId: string): Promise<ContainerDetails | undefined> {
    const list = await this.o.runtime.list({ ...hostSelector(this.o.agentId), [LABEL.instance]: instanceId });
    for (const c of list) {
      const details = await this.o.runtime.inspect(c.id);
      if (details && isManagedBy(details.labels, this.o.agentId, instanceId)) return details;
    }
    return undefined;
  }

  private async requireOwned(instanceId: string): Promise<ContainerDetails> {
    assertId('instance id', instanceId, INSTANCE_ID_PATTERN);
    const found = await this.findOwned(instanceId);
    if (!found) throw new AppError('INSTANCE_NOT_FOUND', `instance ${instanceId} has no container on host ${this.o.agentId}`);
    return found;
  }

  private summarize(c: ContainerSummary): InstanceSummary {
    const hostPort = labelledHostPort(c.labels);
    return {
      instanceId: c.labels[LABEL.instance] ?? '',
      containerId: c.id,
      containerName: c.name,
      groupId: c.labels[LABEL.group] || null,
      variantId: c.labels[LABEL.variant] || null,
      sessionId: c.labels[LABEL.session] || null,
      hostPort: hostPort ?? null,
      endpoint: endpointOf(this.o.gameAddress, hostPort),
      state: c.state,
    };
  }

  async inventory(): Promise<InstanceSummary[]> {
    const list = await this.o.runtime.list(hostSelector(this.o.agentId));
    return list.filter((c) => isManagedBy(c.labels, this.o.agentId)).map((c) => this.summarize(c));
  }

  async inspect(instanceId: string): Promise<InstanceInspection> {
    const c = await this.requireOwned(instanceId);
    return {
      ...this.summarize(c),
      image: c.image,
      exitCode: c.exitCode,
      oomKilled: c.oomKilled,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      createdAt: c.createdAt,
      restartCount: c.restartCount,
    };
  }

  async logs(instanceId: string, tail: number): Promise<string> {
    const c = await this.requireOwned(instanceId);
    const lines = Math.max(1, Math.min(MAX_LOG_LINES, Math.floor(tail)));
    return this.o.runtime.logs(c.id, { tail: lines, maxBytes: MAX_LOG_BYTES });
  }

  start(instanceId: string, log: Log = this.o.logger): Promise<InstanceEndpoint> {
    return this.power(instanceId, log, 'start', async (c) => {
      if (c.state === 'paused') throw invalidTransition(instanceId, c.state, 'start', 'unpause it instead');
      if (c.state !== 'running') await this.o.runtime.start(c.id);
    });
  }

  stop(instanceId: string, timeoutSeconds: number | undefined, log: Log = this.o.logger): Promise<InstanceEndpoint> {
    const timeout = timeoutSeconds ?? this.o.defaultStopTimeoutSeconds;
    return this.power(instanceId, log, 'stop', async (c) => {
      // A frozen process cannot receive the graceful signal.
      if (c.state === 'paused') await this.o.runtime.unpause(c.id);
      if (c.state === 'running' || c.state === 'paused' || c.state === 'restarting') await this.o.runtime.stop(c.id, timeout);
    });
  }

  pause(instanceId: string, log: Log = this.o.logger): Promise<InstanceEndpoint> {
    return this.power(instanceId, log, 'pause', async (c) => {
      if (c.state === 'paused') return;
      if (c.state !== 'running') throw invalidTransition(instanceId, c.state, 'pause', 'only a running instance can be paused');
      await this.o.runtime.pause(c.id);
    });
  }

  unpause(instanceId: string, log: Log = this.o.logger): Promise<InstanceEndpoint> {
    return this.power(instanceId, log, 'unpause', async (c) => {
      if (c.state === 'running') return;
      if (c.state !== 'paused') throw invalidTransition(instanceId, c.state, 'unpause', 'only a paused instance can be unpaused');
      await this.o.runtime.unpause(c.id);
    });
  }

  private async power(instanceId: string, log: Log, action: string, act: (c: ContainerDetails) => Promise<void>): Promise<InstanceEndpoint> {
    assertId('instance id', instanceId, INSTANCE_ID_PATTERN);
    return this.instanceLocks.run(instanceId, async () => {
      const c = await this.requireOwned(instanceId);
      await act(c);
      const state = (await this.o.runtime.inspect(c.id))?.state ?? 'unknown';
      log.info({ instanceId, containerId: c.id, action, state }, 'instance power action done');
      return { ...endpointFields(this.summarize(c)), state };
    });
  }

  /** Removes the instance's container and runtime directory; missing parts are not an error. */
  async delete(instanceId: string, log: Log = this.o.logger): Promise<{ instanceId: string; containerRemoved: boolean; directoryRemoved: boolean }> {
    assertId('instance id', instanceId, INSTANCE_ID_PATTERN);
    return this.instanceLocks.run(instanceId, async () => {
      let containerRemoved = false;
      for (let c = await this.findOwned(instanceId), n = 0; c && n < 10; c = await this.findOwned(instanceId), n++) {
        await this.o.runtime.remove(c.id);
        containerRemoved = true;
      }
      const directoryRemoved = await this.o.directories.exists(instanceId);
      if (directoryRemoved) await this.o.directories.remove(instanceId);
      log.info({ instanceId, containerRemoved, directoryRemoved }, 'instance deleted');
      return { instanceId, containerRemoved, directoryRemoved };
    });
  }

  /** Removes orphan containers, re-checking ownership labels immediately before each removal. */
  async cleanup(instanceIds: readonly string[], log: Log = this.o.logger): Promise<CleanupReport> {
    const report: CleanupReport = { removed: [], skipped: [], notFound: [] };
    for (const instanceId of new Set(instanceIds)) {
      if (!isValidId(instanceId, INSTANCE_ID_PATTERN)) {
        report.skipped.push({ instanceId, reason: 'invalid instance id' });
        continue;
      }
      await this.instanceLocks.run(instanceId, () => this.cleanupOne(instanceId, report, log));
    }
    return report;
  }

  private async cleanupOne(instanceId: string, report: CleanupReport, log: Log): Promise<void> {
    const candidates = await this.o.runtime.list({ [LABEL.instance]: instanceId });
    let removed = false;
    let skipped: string | undefined;
    for (const candidate of candidates) {
      const fresh = await this.o.runtime.inspect(candidate.id);
      if (!fresh) continue;
      if (!isManagedBy(fresh.labels, this.o.agentId, instanceId)) {
        skipped = fresh.labels[LABEL.managed] === 'true' ? `managed by host ${fresh.labels[LABEL.host] ?? '?'}` : 'not managed by EnderCloud';
        continue;
      }
      await this.o.runtime.remove(fresh.id);
      removed = true;
    }
    if (removed) {
      if (await this.o.directories.exists(instanceId)) await this.o.directories.remove(instanceId);
      report.removed.push(instanceId);
      log.info({ instanceId }, 'orphan instance removed');
    } else if (skipped) {
      report.skipped.push({ instanceId, reason: skipped });
    } else {
      report.notFound.push(instanceId);
    }
  }
}

function endpointFields(s: InstanceSummary): Omit<InstanceEndpoint, 'state'> {
  return { instanceId: s.instanceId, containerId: s.containerId, containerName: s.containerName, hostPort: s.hostPort, endpoint: s.endpoint };
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
