// HostDriver over one agent's private HTTP API (docs/agent.md): the only code
// that builds agent paths or reads a host's control URL. Every call names its
// command and request ids (x-command-id / x-request-id) so the agent's logs
// line up with ours; failures come back as AppError tagged retryable or fatal.
// The bytes travel over an AgentTransport (agent-transport.ts): keep-alive
// node:http in production, wrapped by tests that slow or record calls.

import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import type * as Api from '../../contracts/agent-api.js';
import {
  AGENT_API_PREFIX,
  BACKUP_ARCHIVE_HEADERS,
  FILE_CONTENT_TYPE,
  FILE_MODIFIED_HEADER,
  LEADER_ANNOUNCE_PATH,
  LEADER_EPOCH_HEADER,
} from '../../contracts/agent-api.js';
import { AppError, ERROR_CATALOGUE, type ErrorCode } from '../../shared/errors.js';
import { openStream, readSome, type StreamAnswer } from '../../shared/http-stream.js';
import type {
  CallIds,
  DriverHost,
  HostBackups,
  HostDataImport,
  HostEggs,
  HostDriver,
  HostFiles,
  HostImages,
  HostKeptData,
  HostMetrics,
  HostRcon,
  InstanceEndpoint,
} from './host-driver.js';
import { readText, sharedAgentTransport, type AgentAnswer, type AgentTransport } from './agent-transport.js';

export interface AgentDriverOptions {
  /** Default: the process-wide keep-alive pool (sharedAgentTransport). */
  transport?: AgentTransport;
  /** Shared AGENT_TOKEN: sent as the bearer to legacy (never enrolled) hosts only. */
  token: string | undefined;
  /**
   * Enrolled hosts (credentialGeneration set): the bearer derived for that host
   * and generation (services/host-enrolment.ts CallCredentials). Without it an
   * enrolled host is never called (the shared token is not its credential).
   */
  callCredentials?: { of(agentId: string, generation: number): string };
  timeoutMs: number;
  /**
   * The reconciler lease's fencing epoch, read per call and sent as
   * x-leader-epoch: the engine's driver sends the epoch it holds (or last held),
   * so a host that has seen a newer leader refuses a deposed one's mutating
   * calls (STALE_LEADER); API-side drivers send the current lease's epoch as
   * this replica last read it. Agents refuse a mutating call without one, so
   * while it is null (never read) a mutating call fails here, naming why.
   */
  epoch: { epoch(): number | null };
  /**
   * The engine's driver: before its first call to a host under an epoch (and
   * again every ANNOUNCE_EVERY_MS) it sends POST /leader, so the host learns the
   * new leader before a deposed one's late call arrives (reads do not raise it).
   */
  announce?: boolean;
}

/** How often the engine's driver repeats its announcement to a host (an agent whose runtime directory was wiped learns it again). */
export const ANNOUNCE_EVERY_MS = 60_000;

/** A streamed (non-JSON) request body. */
class RawBody {
  constructor(
    readonly stream: Readable,
    readonly contentType: string,
  ) {}
}

const INSTALL_CALL_MARGIN_MS = 120_000;
const instancePath = (instanceId: string): string => `/instances/${encodeURIComponent(instanceId)}`;
const backupPath = (instanceId: string, backupId: string): string => `${instancePath(instanceId)}/backups/${encodeURIComponent(backupId)}`;

export class AgentHostDriver implements HostDriver {
  readonly backups: HostBackups;
  readonly images: HostImages;
  readonly rcon: HostRcon;
  readonly dataImport: HostDataImport;
  readonly keptData: HostKeptData;
  readonly metrics: HostMetrics;
  readonly eggs: HostEggs;
  readonly files: HostFiles;

  private readonly transport: AgentTransport;
  /** Per host id: the epoch last announced, when, and the announcement in flight. */
  private readonly announced = new Map<string, { epoch: number; at: number; done: Promise<void> }>();

  constructor(private readonly deps: AgentDriverOptions) {
    this.transport = deps.transport ?? sharedAgentTransport();
    this.backups = {
      create: (host, id, body, ids = {}) => this.call(host, 'POST', `${instancePath(id)}/backups`, body, ids),
      list: async (host, id, ids = {}) =>
        (await this.call<Api.BackupList>(host, 'GET', `${instancePath(id)}/backups`, undefined, ids)).backups,
      restore: (host, id, backupId, ids = {}) =>
        this.call(host, 'POST', `${instancePath(id)}/restore`, { backupId } satisfies Api.RestoreBody, ids),
      delete: (host, id, backupId, ids = {}) =>
        this.call(host, 'DELETE', `${instancePath(id)}/backups/${encodeURIComponent(backupId)}`, undefined, ids),
      deleteAll: (host, id, ids = {}) => this.call(host, 'DELETE', `${instancePath(id)}/backups`, undefined, ids),
      download: (host, id, backupId, ids = {}) => this.downloadBackup(host, id, backupId, ids),
      upload: (host, id, info, archive, ids = {}) => {
        const q = new URLSearchParams({
          sha256: info.sha256,
          createdAt: info.createdAt,
          ...(info.paths ? { paths: JSON.stringify(info.paths) } : {}),
        });
        return this.call(
          host,
          'PUT',
          `${backupPath(id, info.backupId)}/archive?${q.toString()}`,
          new RawBody(archive, 'application/gzip'),
          ids,
        );
      },
    };
    this.images = {
      inspectImage: (host, ref, { pull }, ids = {}) =>
        this.call(host, 'GET', `/images/inspect?ref=${encodeURIComponent(ref)}&pull=${pull}`, undefined, ids),
    };
    this.rcon = {
      command: (host, id, body, ids = {}) => this.call(host, 'POST', `${instancePath(id)}/rcon`, body, ids),
    };
    this.keptData = {
      list: async (host, ids = {}) => (await this.call<Api.KeptDataList>(host, 'GET', '/kept-data', undefined, ids)).keptData,
      purge: (host, id, ids = {}) => this.call(host, 'DELETE', `/kept-data/${encodeURIComponent(id)}`, undefined, ids),
      attach: (host, id, to, ids = {}) =>
        this.call(host, 'POST', `/kept-data/${encodeURIComponent(id)}/attach`, { instanceId: to } satisfies Api.KeptDataAttachBody, ids),
    };
    this.eggs = {
      // The script's own bound plus room for the image pull and the container's removal.
      install: (host, id, body, ids = {}) =>
        this.call(host, 'POST', `${instancePath(id)}/install`, body, ids, false, body.timeoutMs + INSTALL_CALL_MARGIN_MS),
      stdin: (host, id, body, ids = {}) => this.call(host, 'POST', `${instancePath(id)}/stdin`, body, ids),
    };
    this.dataImport = {
      importData: (host, id, path, archive, ids = {}) =>
        this.call(host, 'PUT', `${instancePath(id)}/data?path=${encodeURIComponent(path)}`, new RawBody(archive, 'application/gzip'), ids),
    };
    const filesOf = (id: string, sub = '') => `${instancePath(id)}/files${sub}`;
    const q = (params: Record<string, string>) => new URLSearchParams(params).toString();
    this.files = {
      list: (host, id, path, ids = {}) => this.call(host, 'GET', `${filesOf(id)}?${q({ path })}`, undefined, ids),
      stat: (host, id, path, ids = {}) => this.call(host, 'GET', `${filesOf(id, '/stat')}?${q({ path })}`, undefined, ids),
      read: (host, id, path, offset, ids = {}) => {
        const route = `${filesOf(id, '/content')}?${q({ path, offset: String(offset) })}`;
        return this.exchange(host, 'GET', route, undefined, ids, this.deps.timeoutMs, async (answer) => {
          if (answer.status !== 200)
            throw agentError(answer.status, parseJson(await readText(answer.body)), `GET ${route}`, host.controlUrl);
          return {
            size: Number(answer.headers['content-length']),
            modifiedAt: Number(answer.headers[FILE_MODIFIED_HEADER]),
            stream: answer.body,
          };
        });
      },
      write: (host, id, path, content, maxBytes, ids = {}) =>
        this.call(
          host,
          'PUT',
          `${filesOf(id, '/content')}?${q({ path, maxBytes: String(maxBytes) })}`,
          new RawBody(content, FILE_CONTENT_TYPE),
          ids,
        ),
      mkdir: (host, id, path, ids = {}) =>
        this.call(host, 'POST', filesOf(id, '/directory'), { path } satisfies Api.FileDirectoryBody, ids),
      rename: (host, id, from, to, ids = {}) =>
        this.call(host, 'POST', filesOf(id, '/rename'), { from, to } satisfies Api.FileRenameBody, ids),
      remove: (host, id, paths, ids = {}) =>
        this.call(host, 'POST', filesOf(id, '/delete'), { paths: [...paths] } satisfies Api.FileDeleteBody, ids),
      archive: (host, id, paths, destination, ids = {}) =>
        this.call(host, 'POST', filesOf(id, '/archive'), { paths: [...paths], destination } satisfies Api.FileArchiveBody, ids),
      extract: (host, id, path, destination, ids = {}) =>
        this.call(
          host,
          'POST',
          filesOf(id, '/extract'),
          { path, ...(destination !== undefined ? { destination } : {}) } satisfies Api.FileExtractBody,
          ids,
        ),
    };
    this.metrics = {
      stats: async (host, ids = {}) => {
        const body = await this.call<Api.InstanceStatsAnswer>(host, 'GET', '/instances/stats', undefined, ids);
        if (!body || !Array.isArray(body.instances))
          throw new AppError('UPSTREAM_FAILED', `agent at ${host.controlUrl} answered stats without "instances"`);
        return body.instances;
      },
    };
  }

  async inventory(host: DriverHost, ids: CallIds = {}): Promise<Api.InventoryEntry[]> {
    const body = await this.call<Api.InventoryAnswer>(host, 'GET', '/instances', undefined, ids);
    if (!body || !Array.isArray(body.instances))
      throw new AppError('UPSTREAM_FAILED', `agent at ${host.controlUrl} answered an inventory without "instances"`);
    return body.instances;
  }

  create(host: DriverHost, instanceId: string, request: Api.CreateInstanceBody, ids: CallIds = {}): Promise<InstanceEndpoint> {
    return this.call(host, 'PUT', instancePath(instanceId), request, ids);
  }

  start(host: DriverHost, instanceId: string, ids: CallIds = {}): Promise<InstanceEndpoint> {
    return this.power(host, instanceId, 'start', ids);
  }

  stop(host: DriverHost, instanceId: string, request: Api.StopBody, ids: CallIds = {}): Promise<Api.StopAnswer> {
    return this.call(host, 'POST', `${instancePath(instanceId)}/stop`, request, ids);
  }

  kill(host: DriverHost, instanceId: string, ids: CallIds = {}): Promise<Api.KillAnswer> {
    return this.call(host, 'POST', `${instancePath(instanceId)}/kill`, {}, ids);
  }

  pause(host: DriverHost, instanceId: string, ids: CallIds = {}): Promise<InstanceEndpoint> {
    return this.power(host, instanceId, 'pause', ids);
  }

  resume(host: DriverHost, instanceId: string, ids: CallIds = {}): Promise<InstanceEndpoint> {
    return this.power(host, instanceId, 'unpause', ids);
  }

  replace(host: DriverHost, instanceId: string, request: Api.ReplaceBody, ids: CallIds = {}): Promise<Api.ReplaceResult> {
    return this.call(host, 'POST', `${instancePath(instanceId)}/replace`, request, ids);
  }

  remove(host: DriverHost, instanceId: string, scope: Api.DeleteScope = {}, ids: CallIds = {}): Promise<Api.DeleteReport> {
    return this.call(host, 'DELETE', instancePath(instanceId), scope, ids);
  }

  inspect(host: DriverHost, instanceId: string, ids: CallIds = {}): Promise<Api.InstanceDetails> {
    return this.call(host, 'GET', instancePath(instanceId), undefined, ids);
  }

  async logs(host: DriverHost, instanceId: string, request: { tail: number; sinceStart?: boolean }, ids: CallIds = {}): Promise<string> {
    const since = request.sinceStart ? '&since=start' : '';
    const text = await this.call<unknown>(
      host,
      'GET',
      `${instancePath(instanceId)}/logs?tail=${request.tail}${since}`,
      undefined,
      ids,
      true,
    );
    return typeof text === 'string' ? text : '';
  }

  async followLogs(
    host: DriverHost,
    instanceId: string,
    request: { tail: number },
    signal: AbortSignal,
    ids: CallIds = {},
  ): Promise<Readable> {
    // Not through the transport's bounded pool: a followed log holds its socket for hours.
    const route = `${instancePath(instanceId)}/logs?follow=true&tail=${request.tail}`;
    const url = new URL(`${host.controlUrl.replace(/\/+$/, '')}${AGENT_API_PREFIX}${route}`);
    let answer: StreamAnswer;
    try {
      answer = await openStream(url, {
        headers: { ...this.headers(host, ids, undefined), accept: 'text/plain, application/json' },
        signal,
        headTimeoutMs: this.deps.timeoutMs,
      });
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      throw new AppError(
        timedOut ? 'TIMEOUT' : 'HOST_UNAVAILABLE',
        timedOut
          ? `agent at ${host.controlUrl} did not answer GET ${route} within ${this.deps.timeoutMs} ms`
          : `agent at ${host.controlUrl} did not stream GET ${route} (${(err as Error).message})`,
        { cause: err },
      );
    }
    if (answer.status !== 200) throw agentError(answer.status, parseJson(await readSome(answer.body)), `GET ${route}`, host.controlUrl);
    return answer.body;
  }

  cleanup(
    host: DriverHost,
    request: { instanceIds: readonly string[]; keepDataFor?: readonly string[] },
    ids: CallIds = {},
  ): Promise<Api.CleanupReport> {
    const body = request.keepDataFor
      ? { instanceIds: request.instanceIds, keepDataFor: request.keepDataFor }
      : { instanceIds: request.instanceIds };
    return this.call(host, 'POST', '/cleanup', body, ids);
  }

  /**
   * A backup archive as a stream. The timeout bounds the wait for the answer's
   * head only: a world-sized body may take longer than any fixed bound.
   */
  private downloadBackup(
    host: DriverHost,
    instanceId: string,
    backupId: string,
    ids: CallIds,
  ): Promise<{ info: Api.BackupInfo; stream: Readable }> {
    const route = `${backupPath(instanceId, backupId)}/archive`;
    return this.exchange(host, 'GET', route, undefined, ids, this.deps.timeoutMs, async (answer) => {
      if (answer.status < 200 || answer.status > 299)
        throw agentError(answer.status, parseJson(await readText(answer.body)), `GET ${route}`, host.controlUrl);
      const h = (name: string): string => {
        const v = answer.headers[name];
        return (Array.isArray(v) ? v[0] : v) ?? '';
      };
      const paths = h(BACKUP_ARCHIVE_HEADERS.paths);
      const info: Api.BackupInfo = {
        backupId,
        sizeBytes: Number(h('content-length')),
        sha256: h(BACKUP_ARCHIVE_HEADERS.sha256),
        createdAt: h(BACKUP_ARCHIVE_HEADERS.createdAt),
        ...(paths ? { paths: JSON.parse(paths) as string[] } : {}),
      };
      return { info, stream: answer.body };
    });
  }

  /**
   * Every call's headers. The bearer is chosen per host: an enrolled host gets its own call credential (and
   * is only ever called at the controlUrl of its host row, which only an enrolment changes); a legacy host
   * the shared token.
   */
  private headers(host: DriverHost, ids: CallIds, contentType: string | undefined): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (contentType !== undefined) headers['content-type'] = contentType;
    if (host.credentialGeneration !== undefined) {
      if (!this.deps.callCredentials)
        throw new AppError('INTERNAL', `host ${host.id} is enrolled but this driver has no call credentials: it is not called`);
      headers.authorization = `Bearer ${this.deps.callCredentials.of(host.id, host.credentialGeneration)}`;
    } else if (this.deps.token !== undefined) headers.authorization = `Bearer ${this.deps.token}`;
    if (ids.commandId) headers['x-command-id'] = ids.commandId;
    if (ids.requestId) headers['x-request-id'] = ids.requestId;
    const epoch = this.epochOf(ids);
    if (epoch !== null) headers[LEADER_EPOCH_HEADER] = String(epoch);
    return headers;
  }

  private epochOf(ids: CallIds): number | null {
    return ids.epoch ?? this.deps.epoch.epoch();
  }

  /** The engine's announcement of `epoch` to a host (single flight; repeated every ANNOUNCE_EVERY_MS). */
  private announce(host: DriverHost, epoch: number, ids: CallIds): Promise<void> {
    const now = performance.now();
    const last = this.announced.get(host.id);
    if (last && last.epoch === epoch && now - last.at < ANNOUNCE_EVERY_MS) return last.done;
    const done = this.call<Api.LeaderAnswer>(host, 'POST', LEADER_ANNOUNCE_PATH, {}, { ...ids, epoch }).then(
      () => undefined,
      (err: unknown) => {
        this.announced.delete(host.id);
        // An agent from before announcements answers 404: it learns the epoch from the first mutating call instead.
        if (err instanceof AppError && err.code === 'NOT_FOUND') return;
        throw err;
      },
    );
    this.announced.set(host.id, { epoch, at: now, done });
    return done;
  }

  /** start/pause/unpause take an empty JSON body. */
  private power(host: DriverHost, instanceId: string, action: 'start' | 'pause' | 'unpause', ids: CallIds): Promise<InstanceEndpoint> {
    return this.call(host, 'POST', `${instancePath(instanceId)}/${action}`, {}, ids);
  }

  private call<T>(
    host: DriverHost,
    method: string,
    route: string,
    body: unknown,
    ids: CallIds,
    raw = false,
    timeoutMs = this.deps.timeoutMs,
  ): Promise<T> {
    return this.exchange(host, method, route, body, ids, timeoutMs, async (answer) => {
      const text = await readText(answer.body);
      const ok = answer.status >= 200 && answer.status <= 299;
      if (ok && raw) return text as T;
      const parsed = parseJson(text);
      if (ok) return parsed as T;
      throw agentError(answer.status, parsed, `${method} ${route}`, host.controlUrl);
    });
  }

  /**
   * The one path of every call: builds the request, sends it, and hands the
   * answer to `read` (a JSON call reads its body, a download only checks the
   * head) while the timeout still runs. Failures to connect, send or read
   * become retryable HOST_UNAVAILABLE, or TIMEOUT when the bound passed.
   */
  private async exchange<T>(
    host: DriverHost,
    method: string,
    route: string,
    body: unknown,
    ids: CallIds,
    timeoutMs: number,
    read: (answer: AgentAnswer) => Promise<T>,
  ): Promise<T> {
    const controlUrl = host.controlUrl;
    const epoch = this.epochOf(ids);
    if (epoch === null && method !== 'GET' && method !== 'HEAD')
      throw new AppError(
        'DATABASE_UNAVAILABLE',
        `no reconciler lease epoch is known yet (the lease was never read): ${method} ${route} to ${controlUrl} needs one (${LEADER_EPOCH_HEADER})`,
      );
    if (this.deps.announce && epoch !== null && route !== LEADER_ANNOUNCE_PATH) await this.announce(host, epoch, ids);
    const headers = this.headers(
      host,
      ids,
      body === undefined ? undefined : body instanceof RawBody ? body.contentType : 'application/json',
    );
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      const url = new URL(`${controlUrl.replace(/\/+$/, '')}${AGENT_API_PREFIX}${route}`);
      const payload = body === undefined ? undefined : body instanceof RawBody ? body.stream : Buffer.from(JSON.stringify(body));
      return await read(await this.transport.send({ method, url, headers, body: payload, signal: controller.signal }));
    } catch (err) {
      if (err instanceof AppError) throw err;
      const timedOut = controller.signal.aborted;
      throw new AppError(
        timedOut ? 'TIMEOUT' : 'HOST_UNAVAILABLE',
        timedOut
          ? `agent at ${controlUrl} did not answer ${method} ${route} within ${timeoutMs} ms`
          : `agent at ${controlUrl} is unreachable (${(err as Error).message})`,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
    }
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

/**
 * 5xx, 429 and a busy instance may pass; any other 4xx is the request's own fault,
 * and so is an answer that says `retryable: false`. The agent's details travel along.
 * STALE_LEADER is retryable: the command goes back to pending, where the current
 * leader claims it (this process's own gate keeps it from claiming again).
 */
export function agentError(status: number, body: unknown, what: string, controlUrl: string): AppError {
  const e = (body as { error?: { code?: unknown; message?: unknown; details?: unknown; retryable?: unknown } } | undefined)?.error;
  const code: ErrorCode =
    typeof e?.code === 'string' && e.code in ERROR_CATALOGUE ? (e.code as ErrorCode) : status >= 500 ? 'UPSTREAM_FAILED' : 'BAD_REQUEST';
  const message = typeof e?.message === 'string' ? e.message : `HTTP ${status}`;
  // An answer that says `retryable: false` is final (a pull the registry refused for good), whatever its status.
  const final = e?.retryable === false;
  // The code's default (errors.ts: INSTANCE_BUSY and STALE_LEADER are retryable), except that any 5xx or 429 answer is:
  // the agent or its proxy failed now, whatever code it named (an agent's INTERNAL is worth another attempt).
  const retryable = final ? false : status >= 500 || status === 429 ? true : undefined;
  const agentDetails = e?.details !== null && typeof e?.details === 'object' ? (e.details as Record<string, unknown>) : {};
  return new AppError(code, `agent ${controlUrl} refused ${what}: ${message}`, {
    ...(retryable === undefined ? {} : { retryable }),
    details: { ...agentDetails, agentStatus: status },
  });
}
