// ContainerRuntime over the Docker Engine API. The only product file that
// imports dockerode; it turns Engine errors into AppErrors tagged retryable
// (engine down, 5xx) or fatal (bad request, conflict).

import { pipeline, type Readable } from 'node:stream';
import Docker from 'dockerode';
import { pack } from 'tar-stream';
import { AppError, type ErrorCode } from '../shared/errors.js';
import { LABEL, labelledHostPort } from './labels.js';
import type { ImageDescriber, ImageInfo } from './images.js';
import { LogFrameDemuxer } from './log-frames.js';
import { engineTimestamp } from './log-window.js';
import { statsFromEngine, type EngineStats } from './docker-stats.js';
import type {
  ContainerDetails,
  ContainerRuntime,
  ContainerStats,
  ContainerSpec,
  ContainerState,
  ContainerSummary,
  LogOptions,
  ProgressListener,
  PublishedPort,
  PullPolicy,
} from './runtime.js';
import {
  HostPortTakenError,
  type LogFollowRuntime,
  type OneOffResult,
  type OneOffRuntime,
  type OneOffSpec,
  type StdinRuntime,
} from './runtime.js';

/** Game containers start with no capability at all; a template adds back what its image needs (ContainerSpec.capAdd). */
export const GAME_DROPPED_CAPABILITIES = ['ALL'] as const;
export const PIDS_LIMIT = 512;
/**
 * Install containers run as root (eggs' scripts `apt install`, `apk add`, `chown -R root:root /mnt`):
 * Docker's default capabilities, less device nodes, raw sockets and audit writes.
 */
export const INSTALL_DROPPED_CAPABILITIES = ['MKNOD', 'NET_RAW', 'AUDIT_WRITE'] as const;
/** exec: the JVM unpacks native libraries (netty, snappy) into /tmp. */
export const TMP_MOUNT_OPTIONS = 'rw,exec,nosuid,nodev,size=256m';
/** The hard memory limit of a container whose spec gives none (0 or omitted): never unlimited. */
export const DEFAULT_MEMORY_BYTES = 1024 ** 3;
export const LOG_CONFIG = { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } };

/** What differs between a game container and an install container; everything else is the same hardening. */
export interface HardeningOptions {
  /** The one host directory the container sees, read-write. */
  mount: { source: string; target: string };
  /** The managed (game) network: never the host's, never the control plane's. */
  network: string;
  capDrop: readonly string[];
  capAdd?: readonly string[];
  readOnlyRootfs: boolean;
  /** 0 or omitted: DEFAULT_MEMORY_BYTES. */
  memoryBytes?: number | undefined;
  cpus?: number | undefined;
  pidsLimit: number;
  portBindings?: Record<string, { HostIp: string; HostPort: string }[]>;
}

/**
 * The one HostConfig every container the agent creates gets (docs/agent.md, "Container
 * hardening"): never privileged, no-new-privileges, the capabilities given, a pid limit, a memory
 * limit always (swap none beyond it), a tmpfs /tmp, bounded logs, only `mount` of the host, on
 * the managed network, not restarted by Docker (the orchestrator decides restarts).
 */
export function hardenedHostConfig(o: HardeningOptions): Docker.HostConfig {
  const memory = o.memoryBytes && o.memoryBytes > 0 ? o.memoryBytes : DEFAULT_MEMORY_BYTES;
  return {
    Mounts: [{ Type: 'bind', Source: o.mount.source, Target: o.mount.target, ReadOnly: false }],
    ...(o.portBindings ? { PortBindings: o.portBindings } : {}),
    NetworkMode: o.network,
    RestartPolicy: { Name: 'no' },
    Privileged: false,
    Memory: memory,
    MemorySwap: memory,
    ...(o.cpus && o.cpus > 0 ? { NanoCpus: Math.round(o.cpus * 1e9) } : {}),
    SecurityOpt: ['no-new-privileges'],
    CapDrop: [...o.capDrop],
    ...(o.capAdd && o.capAdd.length > 0 ? { CapAdd: [...o.capAdd] } : {}),
    ReadonlyRootfs: o.readOnlyRootfs,
    PidsLimit: o.pidsLimit,
    Tmpfs: { '/tmp': TMP_MOUNT_OPTIONS },
    LogConfig: LOG_CONFIG,
  };
}

const NEVER = '0001-01-01T00:00:00Z';
const KNOWN_STATES = new Set(['created', 'running', 'paused', 'restarting', 'removing', 'exited', 'dead']);

interface EngineError {
  statusCode?: number;
  json?: { message?: string } | null;
  message?: string;
  code?: string;
}

function engineMessage(err: unknown): string {
  const e = err as EngineError;
  const fromJson = e?.json && typeof e.json === 'object' ? e.json.message : undefined;
  return (fromJson ?? e?.message ?? String(err)).trim();
}

/** Tags an Engine failure: no HTTP status or 5xx = retryable, 4xx = fatal. */
export function toAppError(action: string, err: unknown, code: ErrorCode = 'DOCKER_ERROR'): AppError {
  if (err instanceof AppError) return err;
  const status = (err as EngineError)?.statusCode;
  const detail = engineMessage(err);
  if (status === undefined) {
    return new AppError(code, `Docker engine unreachable while trying to ${action}: ${detail}`, { retryable: true, cause: err });
  }
  if (status === 404) return new AppError(code === 'DOCKER_ERROR' ? 'NOT_FOUND' : code, `${action}: ${detail}`, { cause: err });
  if (status === 409) return new AppError('CONFLICT', `${action}: ${detail}`, { cause: err });
  return new AppError(code, `${action}: ${detail}`, { retryable: status >= 500, cause: err });
}

/**
 * Registry answers a retry cannot change: the image, tag or repository does not exist, access is
 * denied, the registry's name does not resolve or it refuses connections (no registry access).
 * A timeout, a reset or a registry 5xx stays retryable.
 */
export function definitivePullFailure(engineMessage: string): boolean {
  return /not found|manifest unknown|does not exist|denied|unauthorized|no such host|connection refused|invalid reference/i.test(
    engineMessage,
  );
}

/** A tar of the files (absolute paths inside the container), with their parent directories. */
async function tarOf(files: NonNullable<OneOffSpec['files']>): Promise<Buffer> {
  const tar = pack();
  const dirs = new Set<string>();
  for (const f of files) {
    const parts = f.path.replace(/^\/+/, '').split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (dirs.has(dir)) continue;
      dirs.add(dir);
      tar.entry({ name: `${dir}/`, type: 'directory', mode: 0o755 });
    }
    tar.entry({ name: parts.join('/'), mode: f.mode }, f.content);
  }
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function statusOf(err: unknown): number | undefined {
  return (err as EngineError)?.statusCode;
}

function normalizeState(s: string | undefined): ContainerState {
  return s && KNOWN_STATES.has(s) ? (s as ContainerState) : 'unknown';
}

function time(t: string | undefined): string | null {
  return !t || t === NEVER ? null : t;
}

/** Splits Docker's multiplexed stdout/stderr frames; raw (TTY) output passes through. */
export function demuxLogs(buf: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= buf.length) {
    const stream = buf[offset]!;
    if (stream > 2 || buf[offset + 1] !== 0 || buf[offset + 2] !== 0 || buf[offset + 3] !== 0) return buf;
    const size = buf.readUInt32BE(offset + 4);
    parts.push(buf.subarray(offset + 8, Math.min(buf.length, offset + 8 + size)));
    offset += 8 + size;
  }
  return offset === 0 && buf.length > 0 ? buf : Buffer.concat(parts);
}

/** The newest maxBytes of a log, starting at a line boundary when one exists. */
export function boundLog(text: Buffer, maxBytes: number): string {
  if (text.length <= maxBytes) return text.toString('utf8');
  let cut = text.subarray(text.length - maxBytes);
  const newline = cut.indexOf(0x0a);
  if (newline >= 0 && newline < cut.length - 1) cut = cut.subarray(newline + 1);
  return cut.toString('utf8');
}

function publishedPorts(bindings: Record<string, { HostIp?: string; HostPort?: string }[] | null> | undefined): PublishedPort[] {
  const ports: PublishedPort[] = [];
  for (const [key, list] of Object.entries(bindings ?? {})) {
    const containerPort = Number(key.split('/')[0]);
    for (const b of list ?? []) {
      const hostPort = Number(b.HostPort);
      if (Number.isInteger(hostPort) && hostPort > 0) ports.push({ containerPort, hostPort, hostIp: b.HostIp || '0.0.0.0' });
    }
  }
  return ports;
}

function networkAddresses(networks: Record<string, { IPAddress?: string }> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, n] of Object.entries(networks ?? {})) if (n?.IPAddress) out[name] = n.IPAddress;
  return out;
}

/** Docker's words for a host port someone else already holds. */
export function isPortInUse(err: unknown): boolean {
  return /port is already allocated|address already in use/i.test(err instanceof Error ? err.message : String(err));
}

export function withDefaultTag(image: string): string {
  if (image.includes('@')) return image;
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  return lastSegment.includes(':') ? image : `${image}:latest`;
}

export class DockerRuntime implements ContainerRuntime, ImageDescriber, StdinRuntime, OneOffRuntime, LogFollowRuntime {
  private readonly docker: Docker;
  private readonly pulls = new Map<string, Promise<{ pulled: boolean }>>();
  private readonly networks = new Map<string, Promise<void>>();
  private readonly logFollows = new Set<Readable>();

  private readonly network: string;

  /** `network`: the bridge network every managed container joins (created on first use). */
  constructor(options: { socketPath: string; network: string }) {
    this.docker = new Docker({ socketPath: options.socketPath });
    this.network = options.network;
  }

  async ping(): Promise<void> {
    try {
      await this.docker.ping();
    } catch (err) {
      throw toAppError('ping the engine', err);
    }
  }

  async create(spec: ContainerSpec): Promise<{ id: string }> {
    const portKey = `${spec.port.containerPort}/tcp`;
    await this.ensureNetwork(this.network);
    try {
      const c = await this.docker.createContainer({
        name: spec.name,
        Image: spec.image,
        ...(spec.command ? { Cmd: [...spec.command] } : {}),
        Env: spec.env.map(([k, v]) => `${k}=${v}`),
        Labels: { ...spec.labels },
        Tty: false,
        OpenStdin: spec.openStdin === true,
        StdinOnce: false,
        ...(spec.user ? { User: spec.user } : {}),
        ...(spec.stopSignal ? { StopSignal: spec.stopSignal } : {}),
        ...(spec.stopTimeoutSeconds !== undefined ? { StopTimeout: spec.stopTimeoutSeconds } : {}),
        ...(spec.workingDir ? { WorkingDir: spec.workingDir } : {}),
        ExposedPorts: { [portKey]: {} },
        HostConfig: hardenedHostConfig({
          mount: { source: spec.dataHostPath, target: spec.dataTarget ?? '/data' },
          portBindings: { [portKey]: [{ HostIp: spec.port.hostIp, HostPort: String(spec.port.hostPort) }] },
          network: this.network,
          capDrop: GAME_DROPPED_CAPABILITIES,
          ...(spec.capAdd ? { capAdd: spec.capAdd } : {}),
          readOnlyRootfs: spec.readOnlyRootfs !== false,
          memoryBytes: spec.memoryBytes,
          cpus: spec.cpus,
          pidsLimit: PIDS_LIMIT,
        }),
      });
      return { id: c.id };
    } catch (err) {
      throw toAppError(`create container ${spec.name}`, err);
    }
  }

  async start(id: string): Promise<void> {
    try {
      await this.call(`start container ${id}`, () => this.docker.getContainer(id).start(), [304]);
    } catch (err) {
      throw isPortInUse(err) ? new HostPortTakenError(err as AppError) : err;
    }
  }

  async stop(id: string, timeoutSeconds: number): Promise<void> {
    await this.call(`stop container ${id}`, () => this.docker.getContainer(id).stop({ t: timeoutSeconds }), [304]);
  }

  async kill(id: string, signal = 'SIGKILL'): Promise<void> {
    // 409: the container is not running (it may have exited a moment ago).
    await this.call(`kill container ${id}`, () => this.docker.getContainer(id).kill({ signal }), [409]);
  }

  async waitForExit(id: string, timeoutMs: number): Promise<boolean> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), Math.max(0, timeoutMs));
    try {
      await this.docker.getContainer(id).wait({ condition: 'not-running', abortSignal: abort.signal });
      return true;
    } catch (err) {
      if (abort.signal.aborted) return false;
      if (statusOf(err) === 404) return true; // removed meanwhile: certainly not running
      throw toAppError(`wait for container ${id}`, err);
    } finally {
      clearTimeout(timer);
    }
  }

  async pause(id: string): Promise<void> {
    await this.call(`pause container ${id}`, () => this.docker.getContainer(id).pause());
  }

  async unpause(id: string): Promise<void> {
    await this.call(`unpause container ${id}`, () => this.docker.getContainer(id).unpause());
  }

  /** Attaches to stdin only, writes, detaches: with StdinOnce false the container's stdin stays open. */
  async writeStdin(id: string, text: string): Promise<void> {
    const stream = await this.call(`attach to stdin of container ${id}`, () =>
      this.docker.getContainer(id).attach({ stream: true, stdin: true, stdout: false, stderr: false, hijack: true }),
    );
    await new Promise<void>((resolve, reject) => {
      stream.on('error', reject);
      stream.write(text, (err?: Error | null) => (err ? reject(err) : resolve()));
    });
    stream.end();
    (stream as NodeJS.ReadWriteStream & { destroy?: () => void }).destroy?.();
  }

  /**
   * Create, put its files in, start, wait (bounded), read the output, remove: the container never
   * outlives the call. Install containers run as the spec's user (root for eggs) with Docker's
   * default capabilities less INSTALL_DROPPED_CAPABILITIES and a writable root filesystem, and
   * otherwise the game containers' hardening (hardenedHostConfig): no-new-privileges, never
   * privileged, a pid limit, on the managed network (never the host's, never the control plane's),
   * with only `hostPath` of the host mounted (the script is put into the container, not mounted).
   */
  async runOneOff(spec: OneOffSpec): Promise<OneOffResult> {
    await this.ensureNetwork(this.network);
    const c = await this.call(`create container ${spec.name}`, () =>
      this.docker.createContainer({
        name: spec.name,
        Image: spec.image,
        Entrypoint: [...spec.entrypoint],
        Cmd: [...spec.command],
        WorkingDir: spec.mountTarget,
        Env: spec.env.map(([k, v]) => `${k}=${v}`),
        Labels: { ...spec.labels },
        Tty: false,
        OpenStdin: false,
        ...(spec.user ? { User: spec.user } : {}),
        // Root with a writable root filesystem (scripts install packages), the rest as a game container.
        HostConfig: hardenedHostConfig({
          mount: { source: spec.hostPath, target: spec.mountTarget },
          network: this.network,
          capDrop: INSTALL_DROPPED_CAPABILITIES,
          readOnlyRootfs: false,
          memoryBytes: spec.memoryBytes,
          cpus: spec.cpus,
          pidsLimit: spec.pidsLimit,
        }),
      }),
    );
    try {
      if (spec.files && spec.files.length > 0) {
        const archive = await tarOf(spec.files);
        await this.call(`put files into container ${spec.name}`, () => c.putArchive(archive, { path: '/' }));
      }
      await this.call(`start container ${spec.name}`, () => c.start());
      spec.onStarted?.(c.id);
      const exited = await this.waitForExit(c.id, spec.timeoutMs);
      if (!exited) await this.kill(c.id, 'SIGKILL');
      const info = await this.inspect(c.id);
      const output = await this.logs(c.id, { tail: 200, maxBytes: spec.maxOutputBytes });
      return { exitCode: exited ? (info?.exitCode ?? null) : null, timedOut: !exited, output };
    } finally {
      await this.remove(c.id);
    }
  }

  async remove(id: string): Promise<void> {
    await this.call(`remove container ${id}`, () => this.docker.getContainer(id).remove({ force: true, v: true }), [404]);
  }

  async inspect(idOrName: string): Promise<ContainerDetails | undefined> {
    let info: Docker.ContainerInspectInfo;
    try {
      info = await this.docker.getContainer(idOrName).inspect();
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw toAppError(`inspect container ${idOrName}`, err);
    }
    const state = info.State;
    return {
      id: info.Id,
      name: info.Name.replace(/^\//, ''),
      state: normalizeState(state.Status),
      labels: info.Config.Labels ?? {},
      image: info.Config.Image,
      imageId: info.Image,
      user: info.Config.User ?? '',
      stopSignal: (info.Config as { StopSignal?: string }).StopSignal ?? '',
      stopTimeoutSeconds: (info.Config as { StopTimeout?: number }).StopTimeout ?? null,
      address: this.managedAddress(info.NetworkSettings?.Networks),
      ports: publishedPorts(info.HostConfig.PortBindings as Parameters<typeof publishedPorts>[0]),
      exitCode: time(state.StartedAt) === null ? null : state.ExitCode,
      oomKilled: state.OOMKilled,
      startedAt: time(state.StartedAt),
      finishedAt: time(state.FinishedAt),
      createdAt: time(info.Created),
      restartCount: info.RestartCount ?? 0,
    };
  }

  async list(labels: Readonly<Record<string, string>>): Promise<ContainerSummary[]> {
    const filters = { label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) };
    const list = await this.call('list containers', () => this.docker.listContainers({ all: true, filters }));
    return list.map((c) => ({
      id: c.Id,
      name: (c.Names[0] ?? '').replace(/^\//, ''),
      state: normalizeState(c.State),
      labels: c.Labels ?? {},
    }));
  }

  async logs(id: string, options: LogOptions): Promise<string> {
    const raw = await this.call(`read logs of container ${id}`, () =>
      this.docker.getContainer(id).logs({
        stdout: true,
        stderr: true,
        follow: false,
        tail: options.tail,
        // dockerode types `since` as a number; the Engine parses "<s>.<ns>" from the query string.
        ...(options.sinceNanos !== undefined ? { since: engineTimestamp(options.sinceNanos) as unknown as number } : {}),
      }),
    );
    return boundLog(demuxLogs(Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw))), options.maxBytes);
  }

  /** Engine `logs?follow=1` through a demuxer; destroying the answer destroys the engine stream (pipeline). */
  async followLogs(id: string, options: { tail: number }): Promise<Readable> {
    const raw = (await this.call(`follow logs of container ${id}`, () =>
      this.docker.getContainer(id).logs({ stdout: true, stderr: true, follow: true, tail: options.tail }),
    )) as unknown as Readable;
    this.logFollows.add(raw);
    raw.once('close', () => this.logFollows.delete(raw));
    // The callback only keeps pipeline from throwing: a closed client is the normal end.
    return pipeline(raw, new LogFrameDemuxer(), () => undefined);
  }

  /** Engine log streams open right now (each followed log holds one until its client leaves). */
  get openLogFollows(): number {
    return this.logFollows.size;
  }

  ensureImage(image: string, onProgress?: ProgressListener, policy: PullPolicy = 'missing'): Promise<{ pulled: boolean }> {
    const ref = withDefaultTag(image);
    // Concurrent creates of the same image (and policy) share one pull.
    const key = `${policy} ${ref}`;
    let pending = this.pulls.get(key);
    if (!pending) {
      pending = this.pullIfMissing(ref, policy, onProgress).finally(() => this.pulls.delete(key));
      this.pulls.set(key, pending);
    }
    return pending;
  }

  async imageId(image: string): Promise<string | undefined> {
    return (await this.describeImage(image))?.id;
  }

  /** The image's content id, digests, build time, size and configured user; undefined when absent. */
  async describeImage(image: string): Promise<Omit<ImageInfo, 'ref' | 'pulled'> | undefined> {
    const ref = withDefaultTag(image);
    try {
      const info = await this.docker.getImage(ref).inspect();
      return {
        id: info.Id,
        repoDigests: info.RepoDigests ?? [],
        created: info.Created || null,
        sizeBytes: typeof info.Size === 'number' ? info.Size : null,
        user: info.Config?.User ?? null,
      };
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw toAppError(`inspect image ${ref}`, err);
    }
  }

  private async pullIfMissing(ref: string, policy: PullPolicy, onProgress?: ProgressListener): Promise<{ pulled: boolean }> {
    if (policy === 'missing' && (await this.imageId(ref)) !== undefined) return { pulled: false };
    try {
      const stream = await this.docker.pull(ref);
      await new Promise<void>((resolve, reject) => {
        this.docker.modem.followProgress(
          stream,
          (err: Error | null, output: { error?: string }[]) => {
            const failed = output?.find((o) => o.error);
            if (err || failed) reject(err ?? new Error(failed?.error));
            else resolve();
          },
          (event: { status?: string; id?: string; progressDetail?: { current?: number; total?: number } }) =>
            onProgress?.({
              status: event.status ?? '',
              id: event.id,
              current: event.progressDetail?.current,
              total: event.progressDetail?.total,
            }),
        );
      });
    } catch (err) {
      const status = statusOf(err);
      const message = engineMessage(err);
      // The engine answers 500 for every registry failure; its message tells a retry that cannot help.
      const final = status !== undefined && status < 500 ? true : status !== undefined && definitivePullFailure(message);
      throw new AppError('IMAGE_PULL_FAILED', `pulling image ${ref} failed: ${message}`, { retryable: !final, final, cause: err });
    }
    return { pulled: true };
  }

  /** The container's address on the managed network (any network as a fallback). */
  private managedAddress(networks: Record<string, { IPAddress?: string }> | undefined): string | null {
    const addresses = networkAddresses(networks);
    return addresses[this.network] ?? Object.values(addresses)[0] ?? null;
  }

  /** Docker-only: creates the bridge network unless it exists (create() calls it). */
  ensureNetwork(name: string): Promise<void> {
    // Docker does not stop two concurrent creates of one name; share one call.
    let pending = this.networks.get(name);
    if (!pending) {
      pending = this.createNetworkIfMissing(name).finally(() => this.networks.delete(name));
      this.networks.set(name, pending);
    }
    return pending;
  }

  private async createNetworkIfMissing(name: string): Promise<void> {
    try {
      await this.docker.getNetwork(name).inspect();
      return;
    } catch (err) {
      if (statusOf(err) !== 404) throw toAppError(`inspect network ${name}`, err);
    }
    try {
      await this.docker.createNetwork({ Name: name, Driver: 'bridge', CheckDuplicate: true, Labels: { [LABEL.managed]: 'true' } });
    } catch (err) {
      if (statusOf(err) !== 409) throw toAppError(`create network ${name}`, err);
    }
  }

  async reservedHostPorts(): Promise<Set<number>> {
    const list = await this.call('list containers', () => this.docker.listContainers({ all: true }));
    const used = new Set<number>();
    for (const c of list) {
      if (c.State === 'running' || c.State === 'paused') for (const p of c.Ports ?? []) if (p.PublicPort) used.add(p.PublicPort);
      const promised = labelledHostPort(c.Labels ?? {});
      if (promised !== undefined) used.add(promised);
    }
    return used;
  }

  async stats(id: string): Promise<ContainerStats | undefined> {
    let raw: EngineStats;
    try {
      // one-shot: answer at once instead of waiting a second for a previous CPU sample we do not use.
      raw = (await this.docker.getContainer(id).stats({ stream: false, 'one-shot': true })) as EngineStats;
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw toAppError(`read stats of container ${id}`, err);
    }
    return statsFromEngine(raw);
  }

  private async call<T>(action: string, fn: () => Promise<T>, okStatuses: number[] = []): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (okStatuses.includes(statusOf(err) ?? -1)) return undefined as T;
      throw toAppError(action, err);
    }
  }
}
