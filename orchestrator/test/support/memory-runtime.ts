// TEST DOUBLE — an in-memory ContainerRuntime. No engine, no processes: a
// "container" is a record whose state changes when the agent asks (start,
// stop, kill, pause, …), with Docker's semantics where the agent relies on
// them (name conflicts, published/labelled host ports, exit codes, a
// port held outside the runtime failing the start). It lets route tests run
// the REAL agent app (src/agent/app.ts) without Docker; the real-Docker
// adapter is tested against a real engine in test/agent/.
//
// A simulated console (`rconConnect`) answers RCON: `stop` ends the server
// (exit 0), any other command answers `ok <command>`.

import { createHash } from 'node:crypto';
import type { RconConnect } from '../../src/agent/power.js';
import type { ImageDescriber, ImageInfo } from '../../src/agent/images.js';
import { LABEL, labelledHostPort } from '../../src/agent/labels.js';
import {
  HostPortTakenError,
  type ContainerDetails,
  type ContainerRuntime,
  type ContainerSpec,
  type ContainerState,
  type ContainerStats,
  type ContainerSummary,
  type LogOptions,
  type ProgressListener,
  type PublishedPort,
  type PullPolicy,
} from '../../src/agent/runtime.js';
import { AppError } from '../../src/shared/errors.js';

/** One simulated container; tests may read and change it (then call `changed()`). */
export interface MemoryContainer {
  id: string;
  name: string;
  state: ContainerState;
  labels: Record<string, string>;
  image: string;
  imageId: string;
  user: string;
  stopSignal: string;
  stopTimeoutSeconds: number | null;
  address: string | null;
  ports: PublishedPort[];
  exitCode: number | null;
  oomKilled: boolean;
  startedAt: string | null;
  finishedAt: string | null;
  createdAt: string | null;
  restartCount: number;
  env: [string, string][];
  command: string[] | null;
  /** RCON commands this container received, in order. */
  consoleLog: string[];
  /** What `stats` answers while it runs or is paused; tests set the usage they need. */
  usage: ContainerStats;
}

/** The limit an unlimited container reports (the engine answers the host's memory). */
export const MEMORY_RUNTIME_HOST_BYTES = 8 * 1024 ** 3;

export interface MemoryRuntimeOptions {
  /** The output of one run of a container (what `logs` answers after a start). Default: nothing. */
  output?: (c: MemoryContainer) => string;
  /** Called after every change the agent makes (tests mirror the state with it). */
  onChange?: () => void;
  /** Images a pull cannot find (IMAGE_PULL_FAILED). */
  unpullable?: ReadonlySet<string>;
  now?: () => Date;
}

const SIGKILL_EXIT = 137;
const WAIT_POLL_MS = 5;

/** A stable fake content id for an image reference. */
export function fakeImageId(ref: string): string {
  return `sha256:${createHash('sha256').update(ref).digest('hex')}`;
}

export class MemoryRuntime implements ContainerRuntime, ImageDescriber {
  readonly containers = new Map<string, MemoryContainer>();
  /** Present images by reference. */
  readonly images = new Set<string>();
  /** Host ports held by something outside the runtime: a start publishing one fails. */
  readonly outsidePorts = new Set<number>();
  /** False: every call fails like an unreachable engine. */
  engineUp = true;
  private sequence = 0;
  private addresses = 0;

  constructor(private readonly o: MemoryRuntimeOptions = {}) {}

  private now(): string {
    return (this.o.now?.() ?? new Date()).toISOString();
  }

  /** Tells the observer the state changed (also for tests that edit a container directly). */
  changed(): void {
    this.o.onChange?.();
  }

  private engine(): void {
    if (!this.engineUp) throw new AppError('DOCKER_ERROR', 'simulated engine unreachable', { retryable: true });
  }

  private get(id: string, action: string): MemoryContainer {
    this.engine();
    const c = this.containers.get(id) ?? [...this.containers.values()].find((x) => x.name === id);
    if (!c) throw new AppError('NOT_FOUND', `${action} container ${id}: no such container`);
    return c;
  }

  /** Adds a container as if it existed before the agent looked (no spec, no checks). */
  seed(fields: Partial<MemoryContainer> & Pick<MemoryContainer, 'name' | 'labels'>): MemoryContainer {
    const state = fields.state ?? 'running';
    const given = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<MemoryContainer>;
    const c: MemoryContainer = {
      ...this.blank(fields.id ?? this.nextId(), fields.name, fields.image ?? 'busybox:1', fields.labels),
      state,
      startedAt: state === 'created' ? null : this.now(),
      exitCode: state === 'created' ? null : 0,
      ...given,
    };
    if (c.imageId === '') c.imageId = fakeImageId(c.image);
    this.images.add(c.image);
    this.containers.set(c.id, c);
    return c;
  }

  private nextId(): string {
    this.sequence += 1;
    return createHash('sha256').update(`memory-${process.pid}-${this.sequence}-${Math.random()}`).digest('hex');
  }

  private blank(id: string, name: string, image: string, labels: Record<string, string>): MemoryContainer {
    const hostPort = labelledHostPort(labels);
    this.addresses += 1;
    return {
      id,
      name,
      state: 'created',
      labels: { ...labels },
      image,
      imageId: fakeImageId(image),
      user: '',
      stopSignal: '',
      stopTimeoutSeconds: null,
      address: `10.88.${(this.addresses >> 8) & 255}.${this.addresses & 255}`,
      ports: hostPort !== undefined ? [{ containerPort: 25565, hostPort, hostIp: '127.0.0.1' }] : [],
      exitCode: null,
      oomKilled: false,
      startedAt: null,
      finishedAt: null,
      createdAt: this.now(),
      restartCount: 0,
      env: [],
      command: null,
      consoleLog: [],
      usage: { cpuSecondsTotal: 0, memoryBytes: 0, memoryLimitBytes: MEMORY_RUNTIME_HOST_BYTES, networkRxBytes: 0, networkTxBytes: 0 },
    };
  }

  async ping(): Promise<void> {
    this.engine();
  }

  async create(spec: ContainerSpec): Promise<{ id: string }> {
    this.engine();
    if ([...this.containers.values()].some((c) => c.name === spec.name)) {
      throw new AppError('CONFLICT', `create container ${spec.name}: the name is already in use`);
    }
    if (!this.images.has(spec.image)) throw new AppError('NOT_FOUND', `create container ${spec.name}: no such image: ${spec.image}`);
    const c = this.blank(this.nextId(), spec.name, spec.image, { ...spec.labels });
    c.ports = [{ ...spec.port }];
    c.user = spec.user ?? '';
    c.stopSignal = spec.stopSignal ?? '';
    c.stopTimeoutSeconds = spec.stopTimeoutSeconds ?? null;
    c.env = spec.env.map(([k, v]) => [k, v]);
    c.command = spec.command ? [...spec.command] : null;
    if (spec.memoryBytes && spec.memoryBytes > 0) c.usage.memoryLimitBytes = spec.memoryBytes;
    this.containers.set(c.id, c);
    this.changed();
    return { id: c.id };
  }

  async start(id: string): Promise<void> {
    const c = this.get(id, 'start');
    if (c.state === 'running') return;
    if (c.state === 'paused') throw new AppError('CONFLICT', `start container ${id}: cannot start a paused container, try unpause instead`);
    for (const p of c.ports) {
      const heldByContainer = [...this.containers.values()].some(
        (o) => o !== c && (o.state === 'running' || o.state === 'paused') && o.ports.some((q) => q.hostPort === p.hostPort),
      );
      if (heldByContainer || this.outsidePorts.has(p.hostPort)) {
        throw new HostPortTakenError(
          new AppError('DOCKER_ERROR', `start container ${id}: Bind for ${p.hostIp}:${p.hostPort} failed: port is already allocated`),
        );
      }
    }
    c.state = 'running';
    c.startedAt = this.now();
    c.exitCode = 0;
    c.oomKilled = false;
    this.changed();
  }

  private exit(c: MemoryContainer, code: number): void {
    c.state = 'exited';
    c.exitCode = code;
    c.finishedAt = this.now();
    this.changed();
  }

  async stop(id: string): Promise<void> {
    const c = this.get(id, 'stop');
    if (c.state === 'running' || c.state === 'paused') this.exit(c, 0);
  }

  async kill(id: string, signal = 'SIGKILL'): Promise<void> {
    const c = this.get(id, 'kill');
    // A frozen process handles no signal until thawed; SIGKILL still ends it (the agent unpauses first anyway).
    if (c.state === 'running' || (c.state === 'paused' && signal === 'SIGKILL')) this.exit(c, signal === 'SIGKILL' ? SIGKILL_EXIT : 0);
  }

  async waitForExit(id: string, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const c = this.containers.get(id);
      if (!c || (c.state !== 'running' && c.state !== 'paused')) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
    }
  }

  async pause(id: string): Promise<void> {
    const c = this.get(id, 'pause');
    if (c.state !== 'running') throw new AppError('CONFLICT', `pause container ${id}: container is not running`);
    c.state = 'paused';
    this.changed();
  }

  async unpause(id: string): Promise<void> {
    const c = this.get(id, 'unpause');
    if (c.state !== 'paused') throw new AppError('CONFLICT', `unpause container ${id}: container is not paused`);
    c.state = 'running';
    this.changed();
  }

  async remove(id: string): Promise<void> {
    this.engine();
    const c = this.containers.get(id) ?? [...this.containers.values()].find((x) => x.name === id);
    if (!c) return;
    this.containers.delete(c.id);
    this.changed();
  }

  async inspect(idOrName: string): Promise<ContainerDetails | undefined> {
    this.engine();
    const c = this.containers.get(idOrName) ?? [...this.containers.values()].find((x) => x.name === idOrName);
    if (!c) return undefined;
    return {
      id: c.id,
      name: c.name,
      state: c.state,
      labels: { ...c.labels },
      image: c.image,
      imageId: c.imageId,
      user: c.user,
      stopSignal: c.stopSignal,
      stopTimeoutSeconds: c.stopTimeoutSeconds,
      address: c.address,
      ports: c.ports.map((p) => ({ ...p })),
      exitCode: c.startedAt === null ? null : c.exitCode,
      oomKilled: c.oomKilled,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      createdAt: c.createdAt,
      restartCount: c.restartCount,
    };
  }

  async list(labels: Readonly<Record<string, string>>): Promise<ContainerSummary[]> {
    this.engine();
    return [...this.containers.values()]
      .filter((c) => Object.entries(labels).every(([k, v]) => c.labels[k] === v))
      .map((c) => ({ id: c.id, name: c.name, state: c.state, labels: { ...c.labels } }));
  }

  async logs(id: string, options: LogOptions): Promise<string> {
    const c = this.get(id, 'read logs of');
    if (c.startedAt === null) return '';
    const text = this.o.output?.(c) ?? '';
    const lines = text.split('\n');
    const trailing = text.endsWith('\n');
    const kept = (trailing ? lines.slice(0, -1) : lines).slice(-options.tail);
    const out = kept.join('\n') + (trailing && kept.length > 0 ? '\n' : '');
    return out.length > options.maxBytes ? out.slice(out.length - options.maxBytes) : out;
  }

  async ensureImage(image: string, onProgress?: ProgressListener, policy: PullPolicy = 'missing'): Promise<{ pulled: boolean }> {
    this.engine();
    if (policy === 'missing' && this.images.has(image)) return { pulled: false };
    if (this.o.unpullable?.has(image))
      throw new AppError('IMAGE_PULL_FAILED', `pulling image ${image} failed: simulated registry has no such image: not found`, {
        final: true,
      });
    onProgress?.({ status: 'Pull complete', id: 'memory' });
    this.images.add(image);
    return { pulled: true };
  }

  async imageId(image: string): Promise<string | undefined> {
    this.engine();
    return this.images.has(image) ? fakeImageId(image) : undefined;
  }

  async describeImage(image: string): Promise<Omit<ImageInfo, 'ref' | 'pulled'> | undefined> {
    this.engine();
    if (!this.images.has(image)) return undefined;
    return { id: fakeImageId(image), repoDigests: [], created: null, sizeBytes: null, user: '' };
  }

  async reservedHostPorts(): Promise<Set<number>> {
    this.engine();
    const used = new Set<number>();
    for (const c of this.containers.values()) {
      if (c.state === 'running' || c.state === 'paused') for (const p of c.ports) used.add(p.hostPort);
      const promised = labelledHostPort(c.labels);
      if (promised !== undefined) used.add(promised);
    }
    return used;
  }

  async stats(id: string): Promise<ContainerStats | undefined> {
    this.engine();
    const c = this.containers.get(id) ?? [...this.containers.values()].find((x) => x.name === id);
    return c && (c.state === 'running' || c.state === 'paused') ? { ...c.usage } : undefined;
  }

  /** The simulated console behind every container's address. */
  readonly rconConnect: RconConnect = async ({ host, port }) => {
    const c = [...this.containers.values()].find((x) => x.address === host);
    if (!c || c.state !== 'running')
      throw new AppError('UPSTREAM_FAILED', `RCON at ${host}:${port}: connection refused`, { retryable: true });
    return {
      exec: async (command: string) => {
        c.consoleLog.push(command);
        if (command.trim().split(/\s+/)[0] === 'stop') {
          this.exit(c, 0);
          return '';
        }
        return `ok ${command}`;
      },
      close: async () => undefined,
    };
  };
}

/** The ownership label of a memory container's instance (for views keyed by instance). */
export function instanceOf(c: Pick<MemoryContainer, 'labels'>): string | undefined {
  return c.labels[LABEL.instance];
}
