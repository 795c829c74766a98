// HTTP client for one agent's private API. Every call names its command and
// request ids (x-command-id / x-request-id) so the agent's logs line up with
// ours; failures come back as AppError tagged retryable or fatal.

import type { Readable } from 'node:stream';
import { AppError, ERROR_CATALOGUE, type ErrorCode } from '../shared/errors.js';

export interface AgentCreateBody {
  groupId: string;
  variantId: string;
  sessionId?: string;
  image: string;
  layers: { id: string; checksum: string }[];
  resources: { memoryMb: number; cpus?: number };
  env?: Record<string, string>;
  containerPort?: number;
  /** "uid:gid"; absent keeps the image's own user. */
  user?: string;
  /** Extra (non-ownership) container labels. */
  labels?: Record<string, string>;
  stopSignal?: string;
  stopTimeoutSeconds?: number;
  pull?: 'missing' | 'always';
  /** `false`: create without starting (an import goes in before the first start). */
  start?: boolean;
}

/** A streamed (non-JSON) request body. */
class RawBody {
  constructor(readonly stream: Readable, readonly contentType: string) {}
}

/** Replace: the create body plus whether to start the new container. */
export type AgentReplaceBody = AgentCreateBody & { start: boolean };

export interface AgentStopBody {
  timeoutSeconds?: number;
  signal?: string;
  rcon?: { port: number; password: string; command?: string };
}

/** How a stop ended: the graceful path taken, and whether the bounded timeout forced a kill. */
export interface AgentStopResult {
  state: string;
  /** `none`: it was not running. */
  method: 'rcon' | 'signal' | 'none';
  killed: boolean;
  exitCode: number | null;
}

/** What the agent observed of a container's run (crash detection, reconciliation). */
export interface AgentContainerObservation {
  exitCode?: number | null;
  oomKilled?: boolean;
  startedAt?: string | null;
  finishedAt?: string | null;
  image?: string;
  labels?: Record<string, string>;
  user?: string;
}

/** Docker's view of one managed container (inspect; the inventory carries the same fields). */
export interface AgentContainerDetails extends AgentContainerObservation {
  instanceId: string;
  containerId: string;
  state: string;
  hostPort: number | null;
}

/** What the agent's GET /images/inspect answers. */
export interface ImageInfo {
  ref: string;
  id: string;
  repoDigests: string[];
  created: string | null;
  sizeBytes: number | null;
  user: string | null;
  pulled?: boolean;
}

export interface BackupInfo {
  backupId: string;
  sizeBytes: number;
  sha256: string;
  createdAt: string;
  paths?: string[];
}

/** The agent's backup endpoints (see docs/agent.md). */
export interface BackupAgent {
  create(controlUrl: string, instanceId: string, body: { backupId: string; paths?: string[] }, ids?: CallIds): Promise<BackupInfo>;
  list(controlUrl: string, instanceId: string, ids?: CallIds): Promise<BackupInfo[]>;
  deleteAll(controlUrl: string, instanceId: string, ids?: CallIds): Promise<{ deleted: number }>;
  restore(controlUrl: string, instanceId: string, backupId: string, ids?: CallIds): Promise<{ restored: string; safetyBackupId: string | null }>;
}

/** What the agent answers create and power actions with. */
export interface AgentInstanceEndpoint {
  instanceId: string;
  containerId: string;
  containerName: string;
  hostPort: number | null;
  endpoint: string | null;
  state: string;
}

/** One managed container in the agent's inventory. */
export interface AgentInventoryEntry extends AgentInstanceEndpoint, AgentContainerObservation {
  groupId: string | null;
  variantId: string | null;
  sessionId: string | null;
}

export interface AgentCleanupReport {
  removed: string[];
  skipped: { instanceId: string; reason: string }[];
  notFound: string[];
}

export interface CallIds {
  commandId?: string;
  requestId?: string;
}

export type PowerAction = 'start' | 'stop' | 'pause' | 'unpause';

export interface AgentClientOptions {
  fetch: typeof fetch;
  /** Shared AGENT_TOKEN sent as a bearer token when configured. */
  token: string | undefined;
  timeoutMs: number;
}

export class AgentClient {
  /** The agent's backup endpoints, through this client's transport (auth, ids, timeouts, error mapping). */
  readonly backups: BackupAgent;

  constructor(private readonly o: AgentClientOptions) {
    const path = (id: string) => `/instances/${encodeURIComponent(id)}`;
    this.backups = {
      create: (url, id, body, ids = {}) => this.call(url, 'POST', `${path(id)}/backups`, body, ids),
      list: async (url, id, ids = {}) => (await this.call<{ backups: BackupInfo[] }>(url, 'GET', `${path(id)}/backups`, undefined, ids)).backups,
      deleteAll: (url, id, ids = {}) => this.call(url, 'DELETE', `${path(id)}/backups`, undefined, ids),
      restore: (url, id, backupId, ids = {}) => this.call(url, 'POST', `${path(id)}/restore`, { backupId }, ids),
    };
  }

  async inventory(controlUrl: string, ids: CallIds = {}): Promise<AgentInventoryEntry[]> {
    const body = await this.call<{ instances: AgentInventoryEntry[] }>(controlUrl, 'GET', '/instances', undefined, ids);
    if (!body || !Array.isArray(body.instances)) throw new AppError('UPSTREAM_FAILED', `agent at ${controlUrl} answered an inventory without "instances"`, { retryable: true });
    return body.instances;
  }

  /** Idempotent on the agent: a retry returns the existing container. */
  create(controlUrl: string, instanceId: string, body: AgentCreateBody, ids: CallIds = {}): Promise<AgentInstanceEndpoint> {
    return this.call(controlUrl, 'PUT', `/instances/${encodeURIComponent(instanceId)}`, body, ids);
  }

  /** Streams a gzip tar into a created, not running instance; `path` is relative to its directory. */
  importData(controlUrl: string, instanceId: string, path: string, archive: Readable, ids: CallIds = {}): Promise<{ path: string; entries: number; sizeBytes: number }> {
    const route = `/instances/${encodeURIComponent(instanceId)}/data?path=${encodeURIComponent(path)}`;
    return this.call(controlUrl, 'PUT', route, new RawBody(archive, 'application/gzip'), ids);
  }

  power(controlUrl: string, instanceId: string, action: PowerAction, body: Record<string, unknown> | undefined, ids: CallIds = {}): Promise<AgentInstanceEndpoint> {
    return this.call(controlUrl, 'POST', `/instances/${encodeURIComponent(instanceId)}/${action}`, body ?? {}, ids);
  }

  /**
   * Scoped delete: removes the container; with `keepData` the runtime directory
   * stays; with `paths` (relative, checked again by the agent) only those are
   * deleted below it (the agent accepts one of the two).
   */
  remove(controlUrl: string, instanceId: string, ids: CallIds = {}, scope: { keepData?: boolean; paths?: string[] } = {}): Promise<{ instanceId: string; containerRemoved: boolean; directoryRemoved: boolean }> {
    return this.call(controlUrl, 'DELETE', `/instances/${encodeURIComponent(instanceId)}`, scope, ids);
  }

  /** The agent re-checks ownership labels before each removal. */
  cleanup(controlUrl: string, instanceIds: readonly string[], ids: CallIds = {}, keepDataFor?: readonly string[]): Promise<AgentCleanupReport> {
    return this.call(controlUrl, 'POST', '/cleanup', keepDataFor ? { instanceIds, keepDataFor } : { instanceIds }, ids);
  }

  inspect(controlUrl: string, instanceId: string, ids: CallIds = {}): Promise<AgentContainerDetails> {
    return this.call(controlUrl, 'GET', `/instances/${encodeURIComponent(instanceId)}`, undefined, ids);
  }

  /** Graceful stop (RCON command or signal), bounded wait, then kill. */
  stop(controlUrl: string, instanceId: string, body: AgentStopBody, ids: CallIds = {}): Promise<AgentStopResult> {
    return this.call(controlUrl, 'POST', `/instances/${encodeURIComponent(instanceId)}/stop`, body, ids);
  }

  /** Runs one console command over RCON inside the host (the RCON port is never published). */
  rcon(controlUrl: string, instanceId: string, body: { port: number; password: string; command: string }, ids: CallIds = {}): Promise<{ response: string }> {
    return this.call(controlUrl, 'POST', `/instances/${encodeURIComponent(instanceId)}/rcon`, body, ids);
  }

  /** New container, same runtime directory and host port: the data survives. */
  replace(controlUrl: string, instanceId: string, body: AgentReplaceBody, ids: CallIds = {}): Promise<AgentInstanceEndpoint> {
    return this.call(controlUrl, 'POST', `/instances/${encodeURIComponent(instanceId)}/replace`, body, ids);
  }

  /** The last `tail` lines of the container's output, as text; `sinceStart` leaves out earlier runs. */
  async logs(controlUrl: string, instanceId: string, tail: number, ids: CallIds = {}, options: { sinceStart?: boolean } = {}): Promise<string> {
    const since = options.sinceStart ? '&since=start' : '';
    const text = await this.call<unknown>(controlUrl, 'GET', `/instances/${encodeURIComponent(instanceId)}/logs?tail=${tail}${since}`, undefined, ids, true);
    return typeof text === 'string' ? text : '';
  }

  /** What an image reference resolves to on that host (pulled first when asked). */
  async inspectImage(controlUrl: string, ref: string, pull: boolean, ids: CallIds = {}): Promise<ImageInfo> {
    return this.call<ImageInfo>(controlUrl, 'GET', `/images/inspect?ref=${encodeURIComponent(ref)}&pull=${pull}`, undefined, ids);
  }

  private async call<T>(controlUrl: string, method: string, route: string, body: unknown, ids: CallIds, raw = false): Promise<T> {
    const url = `${controlUrl.replace(/\/+$/, '')}/api/v1${route}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = body instanceof RawBody ? body.contentType : 'application/json';
    if (this.o.token !== undefined) headers.authorization = `Bearer ${this.o.token}`;
    if (ids.commandId) headers['x-command-id'] = ids.commandId;
    if (ids.requestId) headers['x-request-id'] = ids.requestId;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.o.timeoutMs);
    let res: Response;
    let text: string;
    try {
      const payload = body === undefined ? undefined : body instanceof RawBody ? (body.stream as unknown as ReadableStream) : JSON.stringify(body);
      // `duplex: 'half'` is what Node's fetch needs to send a streamed body.
      res = await this.o.fetch(url, { method, headers, body: payload, signal: controller.signal, ...(body instanceof RawBody ? { duplex: 'half' } : {}) } as RequestInit);
      text = await res.text();
    } catch (err) {
      const timedOut = controller.signal.aborted;
      throw new AppError(timedOut ? 'TIMEOUT' : 'HOST_UNAVAILABLE', timedOut
        ? `agent at ${controlUrl} did not answer ${method} ${route} within ${this.o.timeoutMs} ms`
        : `agent at ${controlUrl} is unreachable (${(err as Error).message})`, { retryable: true, cause: err });
    } finally {
      clearTimeout(timer);
    }
    if (res.ok && raw) return text as T;
    const parsed = parseJson(text);
    if (res.ok) return parsed as T;
    throw agentError(res.status, parsed, `${method} ${route}`, controlUrl);
  }
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** 5xx, 429 and a busy instance may pass; any other 4xx is the request's own fault. */
function agentError(status: number, body: unknown, what: string, controlUrl: string): AppError {
  const e = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  const code: ErrorCode = typeof e?.code === 'string' && e.code in ERROR_CATALOGUE ? (e.code as ErrorCode) : status >= 500 ? 'UPSTREAM_FAILED' : 'BAD_REQUEST';
  const message = typeof e?.message === 'string' ? e.message : `HTTP ${status}`;
  const retryable = status >= 500 || status === 429 || code === 'INSTANCE_BUSY';
  return new AppError(code, `agent ${controlUrl} refused ${what}: ${message}`, { retryable, details: { agentStatus: status } });
}
