// SIMULATION (docs/testing.md "Deterministic simulation"): every agent of the
// simulated cloud, answering the orchestrator's real AgentHostDriver at its byte
// seam, the AgentTransport (src/server/drivers/agent-transport.ts). Requests are
// the agent contract's (src/contracts/agent-api.ts) and every answer is built as
// one of its types, so a change of the contract that this double does not follow
// fails the type-check. No sockets, no timers: an answer is ready at once, and
// "slow" or "timing out" agents move the simulation's manual clock instead.
//
// The double also keeps the books the invariants read: which host holds whose
// world directory and backups, and every effect a command id had (a command
// carried out twice shows up as the same effect recorded twice for one id).

import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type * as Api from '../contracts/agent-api.js';
import { AGENT_API_PREFIX, BACKUP_ARCHIVE_HEADERS, LEADER_ANNOUNCE_PATH, LEADER_EPOCH_HEADER } from '../contracts/agent-api.js';
import type { AgentAnswer, AgentRequest, AgentTransport } from '../server/drivers/agent-transport.js';
import type { ManualClock } from '../server/clock.js';

/** A managed container on a simulated host. */
interface SimContainer {
  instanceId: string;
  containerId: string;
  groupId: string;
  variantId: string;
  sessionId: string | null;
  image: string;
  user: string | null;
  labels: Record<string, string>;
  state: Api.ContainerState;
  hostPort: number;
  exitCode: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  createdAt: number;
  /** The container config it was created with (a replace with the same one is a no-op). */
  config: string;
}

interface SimBackup {
  info: Api.BackupInfo;
  bytes: Buffer;
}

/** Faults armed on one host; each fires on the next call it applies to. */
export interface HostFaults {
  /** Next create pulls its image and fails for good (IMAGE_PULL_FAILED, final). */
  pullFails: number;
  /** Next create/start finds its host port held outside the runtime (HOST_PORT_TAKEN). */
  portTaken: number;
  /** Next backups fail with ENOSPC. */
  diskFull: number;
  /** Next mutating calls act, then their answer is lost (the driver sees a dropped connection). */
  lostAnswers: number;
  /** Each call takes this long (the manual clock moves). */
  slowMs: number;
}

export interface SimHost {
  id: string;
  /** The agent process answers (false: killed, restarting, or the whole machine lost). */
  agentUp: boolean;
  /** The machine runs (false: lost; containers are gone from memory, disks are kept). */
  machineUp: boolean;
  bootId: string;
  portRange: { first: number; last: number };
  containers: Map<string, SimContainer>;
  /** Instance ids with a world directory on this host's disk. */
  data: Set<string>;
  backups: Map<string, Map<string, SimBackup>>;
  faults: HostFaults;
  /** The newest leader epoch this agent has seen (it refuses older ones' mutating calls). */
  epoch: number;
}

/** One effect of a command on a host (the "carried out twice" ledger). */
export interface Effect {
  commandId: string;
  hostId: string;
  instanceId: string;
  verb: string;
}

const BOOT_MS = 1500;
const MUTATING = new Set(['PUT', 'POST', 'DELETE']);

const noFaults = (): HostFaults => ({ pullFails: 0, portTaken: 0, diskFull: 0, lostAnswers: 0, slowMs: 0 });

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryable?: boolean,
  ) {
    super(message);
  }
}

/** The simulated agents of every host: an AgentTransport the real driver talks through. */
export class SimAgents implements AgentTransport {
  readonly hosts = new Map<string, SimHost>();
  readonly effects: Effect[] = [];
  /** Effects recorded twice for one command id (filled as they happen). */
  readonly twice: string[] = [];
  private readonly seen = new Map<string, number>();
  private containerSeq = 0;

  constructor(private readonly clock: ManualClock) {}

  addHost(id: string, portFirst: number): SimHost {
    const host: SimHost = {
      id,
      agentUp: true,
      machineUp: true,
      bootId: `${id}-boot-0`,
      portRange: { first: portFirst, last: portFirst + 49 },
      containers: new Map(),
      data: new Set(),
      backups: new Map(),
      faults: noFaults(),
      epoch: 0,
    };
    this.hosts.set(id, host);
    return host;
  }

  controlUrl(hostId: string): string {
    return `http://${hostId}.sim.invalid:7000`;
  }

  /** The heartbeat a real agent of this host sends every `intervalMs` (the contract's body). */
  heartbeat(host: SimHost, intervalMs: number): Api.AgentHeartbeatBody {
    return {
      controlUrl: this.controlUrl(host.id),
      gameAddress: `${host.id}.game.invalid`,
      version: 'sim',
      bootId: host.bootId,
      resources: { cpuCount: 4, memoryTotalBytes: 4 * 1024 ** 3, memoryAvailableBytes: 3 * 1024 ** 3, diskFreeBytes: 50 * 1024 ** 3 },
      portRange: host.portRange,
      heartbeatIntervalMs: intervalMs,
    };
  }

  /** A container exits by itself (a crash). */
  crash(host: SimHost, instanceId: string): boolean {
    const c = host.containers.get(instanceId);
    if (!c || c.state !== 'running') return false;
    c.state = 'exited';
    c.exitCode = 1;
    c.finishedAt = this.clock.now();
    return true;
  }

  /** The machine is gone: its containers with it (disks stay for when it comes back). */
  loseMachine(host: SimHost): void {
    host.machineUp = false;
    host.agentUp = false;
  }

  /** The machine is back after a reboot: containers exited, the agent a new process. */
  returnMachine(host: SimHost): void {
    host.machineUp = true;
    host.agentUp = true;
    host.bootId = `${host.id}-boot-${this.clock.now()}`;
    for (const c of host.containers.values()) {
      if (c.state === 'running' || c.state === 'paused') {
        c.state = 'exited';
        c.exitCode = 137;
        c.finishedAt = this.clock.now();
      }
    }
  }

  async send(request: AgentRequest): Promise<AgentAnswer> {
    const hostId = request.url.hostname.split('.')[0]!;
    const host = this.hosts.get(hostId);
    if (!host || !host.agentUp) throw Object.assign(new Error(`connect ECONNREFUSED ${request.url.host}`), { code: 'ECONNREFUSED' });
    if (host.faults.slowMs > 0) this.clock.advance(host.faults.slowMs);
    const route = request.url.pathname.slice(AGENT_API_PREFIX.length);
    const mutating = MUTATING.has(request.method);
    const epoch = Number(request.headers[LEADER_EPOCH_HEADER] ?? NaN);
    const body = await readBody(request.body);
    try {
      // As the real agent's fence (agent/epoch-fence.ts): a mutating call must carry an epoch, an older one is refused.
      if (mutating) {
        if (!Number.isFinite(epoch)) throw new Refusal(400, 'BAD_REQUEST', `a mutating call must carry ${LEADER_EPOCH_HEADER}`);
        if (epoch < host.epoch) throw new Refusal(409, 'STALE_LEADER', `epoch ${epoch} is older than ${host.epoch}`);
        host.epoch = epoch;
      }
      // The leader's announcement changes nothing but the epoch (and loses no answer: it is not an effect).
      if (request.method === 'POST' && route === LEADER_ANNOUNCE_PATH) return json(200, { epoch: host.epoch } satisfies Api.LeaderAnswer);
      const answer = this.route(host, request.method, route, request.url.searchParams, body, request.headers['x-command-id'] ?? null);
      if (mutating && host.faults.lostAnswers > 0) {
        host.faults.lostAnswers--;
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      }
      return answer;
    } catch (err) {
      if (err instanceof Refusal) {
        return json(err.status, {
          error: { code: err.code, message: err.message, ...(err.retryable !== undefined ? { retryable: err.retryable } : {}) },
        });
      }
      throw err;
    }
  }

  private effect(host: SimHost, commandId: string | null, instanceId: string, verb: string): void {
    if (commandId === null) return;
    const key = `${commandId}|${instanceId}|${verb}`;
    const n = (this.seen.get(key) ?? 0) + 1;
    this.seen.set(key, n);
    this.effects.push({ commandId, hostId: host.id, instanceId, verb });
    if (n === 2) this.twice.push(`command ${commandId} did "${verb}" on ${instanceId} (host ${host.id}) twice`);
  }

  private route(
    host: SimHost,
    method: string,
    route: string,
    query: URLSearchParams,
    body: unknown,
    commandId: string | null,
  ): AgentAnswer {
    if (method === 'GET' && route === '/instances')
      return json(200, { instances: [...host.containers.values()].map((c) => this.entry(host, c)) } satisfies Api.InventoryAnswer);
    if (method === 'GET' && route === '/instances/stats')
      return json(200, { collectedAt: new Date(this.clock.now()).toISOString(), instances: [] } satisfies Api.InstanceStatsAnswer);
    if (method === 'GET' && route === '/health')
      return json(200, { status: 'ok', agentId: host.id, version: 'sim', engine: 'reachable' } satisfies Api.HealthAnswer);
    if (method === 'POST' && route === '/cleanup') return json(200, this.cleanup(host, body as Api.CleanupBody, commandId));
    if (method === 'GET' && route === '/images/inspect') {
      const ref = query.get('ref') ?? '';
      const id = `sha256:${createHash('sha256').update(ref).digest('hex')}`;
      return json(200, {
        ref,
        id,
        repoDigests: [],
        created: null,
        sizeBytes: 1000,
        user: '',
        pulled: query.get('pull') === 'true',
      } satisfies Api.ImageInfo);
    }
    if (method === 'GET' && route === '/kept-data') return json(200, { keptData: this.kept(host) } satisfies Api.KeptDataList);
    const m = /^\/instances\/([^/]+)(\/.*)?$/.exec(route);
    if (!m) throw new Refusal(404, 'NOT_FOUND', `the simulated agent has no route ${method} ${route}`);
    const id = decodeURIComponent(m[1]!);
    const rest = m[2] ?? '';
    const c = host.containers.get(id);
    const need = (): SimContainer => {
      if (!c) throw new Refusal(404, 'INSTANCE_NOT_FOUND', `no managed container for instance ${id}`);
      return c;
    };
    switch (`${method} ${rest}`) {
      case 'PUT ':
        return json(200, this.create(host, id, body as Api.CreateInstanceBody, commandId));
      case 'GET ':
        return json(200, {
          ...this.entry(host, need()),
          createdAt: new Date(need().createdAt).toISOString(),
        } satisfies Api.InstanceDetails);
      case 'DELETE ':
        return json(200, this.remove(host, id, (body ?? {}) as Api.DeleteScope, commandId));
      case 'POST /start':
        return json(200, this.start(host, need(), commandId));
      case 'POST /pause':
        return json(200, this.setState(host, need(), 'running', 'paused', commandId, 'pause'));
      case 'POST /unpause':
        return json(200, this.setState(host, need(), 'paused', 'running', commandId, 'unpause'));
      case 'POST /stop':
        return json(200, this.stop(host, need(), commandId));
      case 'POST /replace':
        return json(200, this.replace(host, need(), body as Api.ReplaceBody, commandId));
      case 'GET /logs': {
        const x = need();
        const up = x.state === 'running' && x.startedAt !== null && this.clock.now() - x.startedAt >= BOOT_MS;
        return {
          status: 200,
          headers: { 'content-type': 'text/plain' },
          body: Readable.from([Buffer.from(up ? `Starting\nDone (1.5s)! For help, type "help"\n` : 'Starting\n')]),
        };
      }
      case 'POST /backups':
        return json(200, this.backup(host, need(), body as Api.CreateBackupBody, commandId));
      case 'GET /backups':
        return json(200, { backups: [...(host.backups.get(id)?.values() ?? [])].map((b) => b.info) } satisfies Api.BackupList);
      case 'DELETE /backups': {
        const n = host.backups.get(id)?.size ?? 0;
        host.backups.delete(id);
        return json(200, { deleted: n } satisfies Api.BackupsDeleted);
      }
      case 'POST /restore':
        return json(200, this.restore(host, id, body as Api.RestoreBody, commandId));
      case 'POST /rcon':
        return json(200, { response: '' } satisfies Api.RconAnswer);
      default:
        break;
    }
    const b = /^\/backups\/([^/]+)(\/archive)?$/.exec(rest);
    if (b) {
      const backupId = decodeURIComponent(b[1]!);
      const kept = host.backups.get(id)?.get(backupId);
      if (method === 'DELETE' && !b[2]) {
        const deleted = host.backups.get(id)?.delete(backupId) ?? false;
        return json(200, { deleted } satisfies Api.BackupDeleted);
      }
      if (method === 'GET' && b[2]) {
        if (!kept) throw new Refusal(404, 'NOT_FOUND', `no backup ${backupId} of ${id}`);
        return {
          status: 200,
          headers: {
            'content-type': 'application/gzip',
            'content-length': String(kept.bytes.length),
            [BACKUP_ARCHIVE_HEADERS.sha256]: kept.info.sha256,
            [BACKUP_ARCHIVE_HEADERS.createdAt]: kept.info.createdAt,
          },
          body: Readable.from([kept.bytes]),
        };
      }
      if (method === 'PUT' && b[2]) {
        const bytes = body as Buffer;
        const sha256 = createHash('sha256').update(bytes).digest('hex');
        if (sha256 !== query.get('sha256')) throw new Refusal(422, 'CHECKSUM_MISMATCH', `archive hashes to ${sha256}`);
        const info: Api.BackupInfo = {
          backupId,
          sizeBytes: bytes.length,
          sha256,
          createdAt: query.get('createdAt') ?? new Date(this.clock.now()).toISOString(),
        };
        this.backupsOf(host, id).set(backupId, { info, bytes });
        return json(200, info);
      }
    }
    throw new Refusal(404, 'NOT_FOUND', `the simulated agent has no route ${method} ${route}`);
  }

  private entry(host: SimHost, c: SimContainer): Api.InventoryEntry {
    return {
      instanceId: c.instanceId,
      containerId: c.containerId,
      containerName: `endercloud-${c.variantId}-${c.instanceId}`,
      hostPort: c.hostPort,
      endpoint: `${host.id}.game.invalid:${c.hostPort}`,
      state: c.state,
      groupId: c.groupId,
      variantId: c.variantId,
      sessionId: c.sessionId,
      image: c.image,
      user: c.user,
      labels: c.labels,
      exitCode: c.exitCode,
      oomKilled: false,
      startedAt: c.startedAt === null ? null : new Date(c.startedAt).toISOString(),
      finishedAt: c.finishedAt === null ? null : new Date(c.finishedAt).toISOString(),
      restartCount: 0,
    };
  }

  private endpoint(host: SimHost, c: SimContainer): Api.InstanceEndpoint {
    const e = this.entry(host, c);
    return {
      instanceId: e.instanceId,
      containerId: e.containerId,
      containerName: e.containerName,
      hostPort: e.hostPort,
      endpoint: e.endpoint,
      state: e.state,
    };
  }

  private freePort(host: SimHost): number {
    const used = new Set([...host.containers.values()].map((c) => c.hostPort));
    for (let p = host.portRange.first; p <= host.portRange.last; p++) if (!used.has(p)) return p;
    throw new Refusal(503, 'PORT_RANGE_EXHAUSTED', `every port of ${host.portRange.first}-${host.portRange.last} is in use`);
  }

  private portCheck(host: SimHost, c: SimContainer): void {
    if (host.faults.portTaken > 0) {
      host.faults.portTaken--;
      throw new Refusal(409, 'HOST_PORT_TAKEN', `host port ${c.hostPort} is held by a process outside the runtime`, true);
    }
  }

  private create(host: SimHost, id: string, body: Api.CreateInstanceBody, commandId: string | null): Api.InstanceEndpoint {
    const existing = host.containers.get(id);
    if (existing) return this.endpoint(host, existing); // idempotent: a retry answers the container it made
    if (host.faults.pullFails > 0) {
      host.faults.pullFails--;
      throw new Refusal(502, 'IMAGE_PULL_FAILED', `pulling image ${body.image} failed: manifest unknown`, false);
    }
    const c: SimContainer = {
      instanceId: id,
      containerId: `ctr-${++this.containerSeq}`,
      groupId: body.groupId,
      variantId: body.variantId,
      sessionId: body.sessionId ?? null,
      image: body.image,
      user: body.user ?? null,
      labels: body.labels ?? {},
      state: 'created',
      hostPort: this.freePort(host),
      exitCode: null,
      startedAt: null,
      finishedAt: null,
      createdAt: this.clock.now(),
      config: containerConfig(body),
    };
    host.containers.set(id, c);
    host.data.add(id);
    this.effect(host, commandId, id, 'create');
    if (body.start !== false) {
      this.portCheck(host, c);
      c.state = 'running';
      c.startedAt = this.clock.now();
    }
    return this.endpoint(host, c);
  }

  private start(host: SimHost, c: SimContainer, commandId: string | null): Api.InstanceEndpoint {
    if (c.state === 'running') return this.endpoint(host, c);
    if (c.state === 'paused') throw new Refusal(409, 'INSTANCE_CONFLICT', `instance ${c.instanceId} is paused: unpause it`);
    this.portCheck(host, c);
    c.state = 'running';
    c.startedAt = this.clock.now();
    c.exitCode = null;
    this.effect(host, commandId, c.instanceId, `start@${c.containerId}:${c.finishedAt ?? 'new'}`);
    return this.endpoint(host, c);
  }

  private setState(
    host: SimHost,
    c: SimContainer,
    from: Api.ContainerState,
    to: Api.ContainerState,
    commandId: string | null,
    verb: string,
  ): Api.InstanceEndpoint {
    if (c.state === to) return this.endpoint(host, c);
    if (c.state !== from) throw new Refusal(409, 'INSTANCE_NOT_RUNNING', `instance ${c.instanceId} is ${c.state}, not ${from}`);
    c.state = to;
    this.effect(host, commandId, c.instanceId, `${verb}@${c.containerId}:${c.startedAt}`);
    return this.endpoint(host, c);
  }

  private stop(host: SimHost, c: SimContainer, commandId: string | null): Api.StopAnswer {
    if (c.state !== 'running' && c.state !== 'paused')
      return { ...this.endpoint(host, c), method: 'none', killed: false, exitCode: c.exitCode };
    this.effect(host, commandId, c.instanceId, `stop@${c.containerId}:${c.startedAt}`);
    c.state = 'exited';
    c.exitCode = 0;
    c.finishedAt = this.clock.now();
    return { ...this.endpoint(host, c), method: 'signal', killed: false, exitCode: 0 };
  }

  private replace(host: SimHost, c: SimContainer, body: Api.ReplaceBody, commandId: string | null): Api.ReplaceResult {
    const config = containerConfig(body);
    if (config === c.config && !body.newHostPort) {
      // As the real agent (src/agent/replace.ts): already current, but started when asked to.
      if (body.start && (c.state === 'created' || c.state === 'exited')) this.start(host, c, commandId);
      return { ...this.endpoint(host, c), replaced: false, previousContainerId: null, stop: null };
    }
    const previous = c.containerId;
    const wasRunning = c.state === 'running' || c.state === 'paused';
    const next: SimContainer = {
      ...c,
      containerId: `ctr-${++this.containerSeq}`,
      image: body.image,
      sessionId: body.sessionId ?? null,
      labels: body.labels ?? {},
      user: body.user ?? null,
      config,
      state: 'created',
      exitCode: null,
      startedAt: null,
      finishedAt: null,
      createdAt: this.clock.now(),
    };
    if (body.newHostPort) {
      host.containers.delete(c.instanceId);
      next.hostPort = this.freePort(host);
    }
    host.containers.set(c.instanceId, next);
    this.effect(host, commandId, c.instanceId, `replace@${previous}`);
    if (body.start) {
      next.state = 'running';
      next.startedAt = this.clock.now();
    }
    return {
      ...this.endpoint(host, next),
      replaced: true,
      previousContainerId: previous,
      stop: wasRunning ? { method: 'signal', killed: false, exitCode: 0 } : null,
    };
  }

  private remove(host: SimHost, id: string, scope: Api.DeleteScope, commandId: string | null): Api.DeleteReport {
    const containerRemoved = host.containers.delete(id);
    let directoryRemoved = false;
    const pathsRemoved: string[] = [];
    if (scope.paths) pathsRemoved.push(...(host.data.has(id) ? scope.paths : []));
    else if (!scope.keepData) directoryRemoved = host.data.delete(id);
    if (containerRemoved || directoryRemoved) this.effect(host, commandId, id, 'remove');
    return {
      instanceId: id,
      scope: scope.keepData ? 'container' : scope.paths ? 'paths' : 'all',
      containerRemoved,
      directoryRemoved,
      pathsRemoved,
    };
  }

  private cleanup(host: SimHost, body: Api.CleanupBody, commandId: string | null): Api.CleanupReport {
    const report: Api.CleanupReport = { removed: [], skipped: [], notFound: [], dataKept: [] };
    const keep = new Set(body.keepDataFor ?? []);
    for (const id of body.instanceIds) {
      if (!host.containers.delete(id)) {
        report.notFound.push(id);
        continue;
      }
      report.removed.push(id);
      this.effect(host, commandId, id, 'cleanup');
      if (keep.has(id)) report.dataKept.push(id);
      else host.data.delete(id);
    }
    return report;
  }

  private backupsOf(host: SimHost, id: string): Map<string, SimBackup> {
    let m = host.backups.get(id);
    if (!m) host.backups.set(id, (m = new Map()));
    return m;
  }

  private backup(host: SimHost, c: SimContainer, body: Api.CreateBackupBody, commandId: string | null): Api.BackupInfo {
    const existing = host.backups.get(c.instanceId)?.get(body.backupId);
    if (existing) return existing.info; // idempotent per backup id
    if (host.faults.diskFull > 0) {
      host.faults.diskFull--;
      throw new Refusal(500, 'INTERNAL', `writing backup ${body.backupId}: ENOSPC: no space left on device`);
    }
    if (!host.data.has(c.instanceId)) throw new Refusal(404, 'NOT_FOUND', `instance ${c.instanceId} has no data directory`);
    const bytes = Buffer.from(`sim-world ${c.instanceId} ${body.backupId} ${this.clock.now()}`);
    const info: Api.BackupInfo = {
      backupId: body.backupId,
      sizeBytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      createdAt: new Date(this.clock.now()).toISOString(),
      ...(body.paths ? { paths: body.paths } : {}),
    };
    this.backupsOf(host, c.instanceId).set(body.backupId, { info, bytes });
    this.effect(host, commandId, c.instanceId, `backup:${body.backupId}`);
    return info;
  }

  private restore(host: SimHost, id: string, body: Api.RestoreBody, commandId: string | null): Api.RestoreAnswer {
    const kept = host.backups.get(id)?.get(body.backupId);
    if (!kept) throw new Refusal(404, 'NOT_FOUND', `no backup ${body.backupId} of ${id}`);
    host.data.add(id);
    this.effect(host, commandId, id, `restore:${body.backupId}`);
    return { restored: body.backupId, safetyBackupId: null };
  }

  private kept(host: SimHost): Api.KeptDataEntry[] {
    const ids = new Set([...host.data, ...host.backups.keys()]);
    return [...ids]
      .filter((id) => !host.containers.has(id))
      .sort()
      .map((id) => ({ instanceId: id, data: host.data.has(id), backups: [...(host.backups.get(id)?.values() ?? [])].map((b) => b.info) }));
  }
}

function containerConfig(body: Api.CreateInstanceBody | Api.ReplaceBody): string {
  return JSON.stringify({
    image: body.image,
    env: body.env ?? {},
    resources: body.resources,
    command: body.command ?? null,
    labels: body.labels ?? {},
    sessionId: body.sessionId ?? null,
  });
}

function json(status: number, value: unknown): AgentAnswer {
  return { status, headers: { 'content-type': 'application/json' }, body: Readable.from([Buffer.from(JSON.stringify(value))]) };
}

async function readBody(body: AgentRequest['body']): Promise<unknown> {
  if (body === undefined) return undefined;
  if (Buffer.isBuffer(body)) return body.length === 0 ? undefined : JSON.parse(body.toString('utf8'));
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
