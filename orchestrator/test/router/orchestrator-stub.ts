// A real HTTP server on 127.0.0.1 speaking the router ⇄ orchestrator contract
// (src/protocol/registry-contract.ts): registry snapshot + SSE stream, wake
// endpoints, transfer claims and session reports. Tests drive its state.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  formatSseEvent,
  parseGroupJoinRequest,
  parseRouterTransferRequest,
  ROUTER_TRANSFERS_PATH,
  parseRouterSessionsBatch,
  parseTransferClaimRequest,
  REGISTRY_PATH,
  REGISTRY_STREAM_PATH,
  ROUTER_SESSIONS_PATH,
  SSE_KEEPALIVE,
  TRANSFER_CLAIM_PATH,
  type RegistryBackend,
  type GroupJoinAnswer,
  type RouterSessionsBatch,
  type RouterTransferRequest,
  type TransferClaim,
  type WakeAction,
} from '../../src/protocol/registry-contract.js';

export const TOKEN = 'router-test-token';

export function backend(instanceId: string, patch: Partial<RegistryBackend> = {}): RegistryBackend {
  return {
    instanceId,
    name: instanceId,
    groupId: 'g',
    sessionId: null,
    status: 'Running',
    address: null,
    players: { online: 0, max: 20 },
    maintenance: false,
    full: false,
    acceptsTransfers: true,
    expectedStartMs: null,
    ...patch,
  };
}

type WakeAnswer = { status: number; body: unknown };

export class OrchestratorStub {
  revision = 0;
  readonly backends = new Map<string, RegistryBackend>();
  readonly wakeRequests: Array<{ instanceId: string; action: WakeAction }> = [];
  readonly transfers = new Map<string, TransferClaim>();
  readonly claims: string[] = [];
  readonly sessionBatches: RouterSessionsBatch[] = [];
  streamConnects = 0;
  /** Answer for the next wake requests (default 202) and a side effect to run after accepting. */
  onWake: (instanceId: string, action: WakeAction) => WakeAnswer = () => ({
    status: 202,
    body: { commandId: `cmd-${this.wakeRequests.length}` },
  });
  sessionsStatus = 204;
  readonly groupJoins: Array<{ groupId: string; player: string; uuid?: string }> = [];
  /**
   * Answer for group joins. Default: the group's best Running member with room (`route`), else a
   * Paused one (`wake`), else a Stopped one (`start`), else 409 CAPACITY_EXHAUSTED.
   */
  onGroupJoin: (groupId: string, player: string) => { status: number; body: unknown } = (groupId) => this.defaultGroupJoin(groupId);
  readonly routerTransfers: RouterTransferRequest[] = [];
  routerTransfersStatus = 202;
  private server: Server | undefined;
  private readonly streams = new Set<ServerResponse>();
  private keepalive: NodeJS.Timeout | undefined;
  port = 0;

  constructor(private readonly keepaliveMs = 15_000) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get openStreams(): number {
    return this.streams.size;
  }

  async start(port = this.port): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    this.keepalive = setInterval(() => this.broadcast(SSE_KEEPALIVE), this.keepaliveMs);
  }

  /** Stops listening and cuts every connection (a crash, as far as the router can tell). */
  async stop(): Promise<void> {
    clearInterval(this.keepalive);
    for (const s of this.streams) s.destroy();
    this.streams.clear();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }

  /** Replaces the whole registry without telling open streams (they see it on re-sync). */
  reset(backends: RegistryBackend[], revision = this.revision + 100): void {
    this.backends.clear();
    for (const b of backends) this.backends.set(b.instanceId, b);
    this.revision = revision;
  }

  upsert(b: RegistryBackend): void {
    this.backends.set(b.instanceId, b);
    this.revision++;
    this.broadcast(formatSseEvent('upsert', { revision: this.revision, backend: b }));
  }

  patch(instanceId: string, patch: Partial<RegistryBackend>): void {
    this.upsert({ ...this.backends.get(instanceId)!, ...patch });
  }

  remove(instanceId: string): void {
    this.backends.delete(instanceId);
    this.revision++;
    this.broadcast(formatSseEvent('remove', { revision: this.revision, instanceId }));
  }

  /** Writes raw text to every open stream (gaps, garbage). */
  broadcast(text: string): void {
    for (const s of this.streams) s.write(text);
  }

  /** Ends every open stream cleanly, as a server restart behind a proxy would. */
  dropStreams(): void {
    for (const s of this.streams) s.end();
    this.streams.clear();
  }

  snapshot(): { revision: number; backends: RegistryBackend[] } {
    return { revision: this.revision, backends: [...this.backends.values()] };
  }

  private defaultGroupJoin(groupId: string): { status: number; body: unknown } {
    // The stub knows a group only by its members: with none it answers as the orchestrator does for a group it does not have.
    if (![...this.backends.values()].some((b) => b.groupId === groupId))
      return { status: 404, body: { error: { code: 'GROUP_NOT_FOUND', message: `group ${groupId} does not exist` } } };
    const members = [...this.backends.values()].filter((b) => b.groupId === groupId && !b.maintenance);
    const pick = (status: RegistryBackend['status']): RegistryBackend | undefined => members.find((b) => b.status === status && !b.full);
    const answer = (b: RegistryBackend, action: GroupJoinAnswer['action']): { status: number; body: GroupJoinAnswer } => {
      if (action === 'wake' || action === 'start')
        this.wakeRequests.push({ instanceId: b.instanceId, action: action === 'wake' ? 'resume' : 'start' });
      return {
        status: 200,
        body: { instanceId: b.instanceId, action, commandId: action === 'route' ? null : `cmd-join-${this.groupJoins.length}` },
      };
    };
    const running = pick('Running');
    if (running) return answer(running, 'route');
    const paused = pick('Paused');
    if (paused) return answer(paused, 'wake');
    const stopped = pick('Stopped');
    if (stopped) return answer(stopped, 'start');
    return { status: 409, body: { error: { code: 'CAPACITY_EXHAUSTED', message: `no instance of ${groupId} has room` } } };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body?: unknown): void => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${TOKEN}`)
      return send(401, { error: { code: 'UNAUTHORIZED', message: 'missing or bad token' } });
    const path = (req.url ?? '').split('?')[0]!;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const json = (): unknown => (text ? JSON.parse(text) : undefined);

    if (req.method === 'GET' && path === REGISTRY_PATH) return send(200, this.snapshot());
    if (req.method === 'GET' && path === REGISTRY_STREAM_PATH) {
      this.streamConnects++;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      res.write(formatSseEvent('snapshot', this.snapshot()));
      this.streams.add(res);
      res.on('close', () => this.streams.delete(res));
      return;
    }
    const wake = /^\/api\/v1\/instances\/([^/]+)\/(resume|start)$/.exec(path);
    if (req.method === 'POST' && wake) {
      const instanceId = decodeURIComponent(wake[1]!);
      const action = wake[2] as WakeAction;
      this.wakeRequests.push({ instanceId, action });
      const answer = this.onWake(instanceId, action);
      return send(answer.status, answer.body);
    }
    const join = /^\/api\/v1\/router\/groups\/([^/]+)\/join$/.exec(path);
    if (req.method === 'POST' && join) {
      const groupId = decodeURIComponent(join[1]!);
      const body = parseGroupJoinRequest(json());
      this.groupJoins.push({ groupId, ...body });
      const answer = this.onGroupJoin(groupId, body.player);
      return send(answer.status, answer.body);
    }
    if (req.method === 'POST' && path === ROUTER_TRANSFERS_PATH) {
      this.routerTransfers.push(parseRouterTransferRequest(json()));
      return send(
        this.routerTransfersStatus,
        this.routerTransfersStatus < 300 ? { accepted: true } : { error: { code: 'CONFLICT', message: 'transfer refused' } },
      );
    }
    if (req.method === 'POST' && path === TRANSFER_CLAIM_PATH) {
      const { player } = parseTransferClaimRequest(json());
      this.claims.push(player);
      const claim = this.transfers.get(player);
      if (!claim) return send(404, { error: { code: 'NOT_FOUND', message: `no pending transfer for ${player}` } });
      this.transfers.delete(player);
      return send(200, claim);
    }
    if (req.method === 'POST' && path === ROUTER_SESSIONS_PATH) {
      if (this.sessionsStatus !== 204) return send(this.sessionsStatus, { error: { code: 'INTERNAL', message: 'unavailable' } });
      this.sessionBatches.push(parseRouterSessionsBatch(json()));
      return send(204);
    }
    send(404, { error: { code: 'NOT_FOUND', message: `${req.method} ${path}` } });
  }
}
