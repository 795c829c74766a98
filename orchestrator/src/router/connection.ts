// One player connection: optional PROXY v2 header from a trusted balancer,
// handshake (and Login Start) under a deadline and size limits, a route plan,
// then a pipe to the backend that first replays every byte read. Logins run
// their plan in login-runner.ts; time comes from the injected clock and timers.

import type { Socket } from 'node:net';
import type { Logger } from '../shared/logger.js';
import type { Timers } from '../shared/timers.js';
import { ProtocolError } from '../protocol/codec.js';
import { cleanServerAddress } from '../protocol/address.js';
import { FrameReader } from '../protocol/frame-reader.js';
import {
  isLegacyPing,
  LEGACY_UNKNOWN_PROTOCOL,
  parseLegacyPing,
  writeLegacyPingResponse,
  type LegacyPing,
} from '../protocol/legacy-ping.js';
import {
  isStatusRequest,
  parseHandshake,
  parseLoginStart,
  parsePing,
  writeLoginDisconnect,
  writePong,
  writeStatusResponse,
  type Handshake,
} from '../protocol/packets.js';
import {
  MAX_PROXY_V2_BYTES,
  mayBeProxyV2,
  normalizeAddress,
  parseProxyV2Header,
  writeProxyV2Header,
  type ProxyHeader,
} from '../protocol/proxy-protocol.js';
import type { PingOptions, PingResult } from '../protocol/status-client.js';
import { anyCidrContains, clientKey, type Cidr } from './cidr.js';
import type { Clock } from './clock.js';
import type { LimitsConfig, MessagesConfig, StatusConfig } from './config.js';
import { forwardBytes } from './byte-pipe.js';
import { dialFirst, type Dialed, type Dialer } from './dialer.js';
import type { ConnectionLimiter, LoginRateLimiter } from './limits.js';
import { legacyFromStatus, localLegacyStatus, localStateForPlan, localStatusJson } from './local-status.js';
import { runLoginPlan, type LoginContext } from './login-runner.js';
import type { ConnectionOutcome, RouterMetrics } from './metrics.js';
import type { LoginOutcome, OutcomeLog } from './outcome-log.js';
import type {
  BackendResolver,
  BackendTarget,
  Intent,
  LocalStatusState,
  RoutePlan,
  SessionInfo,
  SessionReporter,
  WakeCoordinator,
} from './resolver.js';

export interface ConnectionDeps {
  limits: LimitsConfig;
  status: StatusConfig;
  messages: MessagesConfig;
  sendProxyToBackends: boolean;
  trustedCidrs: readonly Cidr[];
  resolver: BackendResolver;
  wakes: WakeCoordinator | undefined;
  sessions: SessionReporter;
  metrics: RouterMetrics;
  logger: Logger;
  outcomes: OutcomeLog;
  /** Connections that have not logged in yet (slowloris defence). */
  connectionLimiter: ConnectionLimiter;
  /** Logged-in players per address (`max_players_per_ip`; 0 = unlimited). */
  playerLimiter: ConnectionLimiter;
  loginLimiter: LoginRateLimiter;
  clock: Clock;
  timers: Timers;
  dial: Dialer;
  pingServer: (host: string, port: number, options: PingOptions) => Promise<PingResult>;
}

/** Ends the connection with an outcome; thrown from deep inside the flow. */
class Dropped extends Error {
  constructor(
    readonly outcome: ConnectionOutcome,
    message: string,
  ) {
    super(message);
  }
}

/** How long a legacy `FE`/`FE 01` may wait for the rest of a longer legacy form. */
const LEGACY_SETTLE_MS = 100;
/** Status request + ping, with room for a repeated request; more is not a status client. */
const MAX_STATUS_PACKETS = 4;
const BACKEND_LINGER_MS = 5000;
/**
 * What `frames` becomes once the connection pipes: the handshake bytes are replayed and nothing
 * reads frames again (the data listener that pushes is removed first), so an idle session holds
 * no copy of them. Shared, never pushed to.
 */
const DRAINED = new FrameReader();

/**
 * Socket listeners shared by every connection (Node calls them with the socket as `this`; the
 * connection is found by its sockets): per-connection closures and the contexts they capture
 * cost an idle session about half a KiB (docs/router.md, "Memory per idle connection"). A
 * WeakMap rather than a property on the socket, for the reason given in byte-pipe.ts.
 */
const owners = new WeakMap<Socket, ClientConnection>();
function destroyOnError(this: Socket): void {
  this.destroy();
}
function playerData(this: Socket, chunk: Buffer): void {
  owners.get(this)?.received(chunk);
}
function playerClosed(this: Socket): void {
  owners.get(this)?.closedByPlayer();
}
const destroySocket = (socket: Socket): void => void socket.destroy();
function backendClosed(this: Socket, hadError: boolean): void {
  owners.get(this)?.closedByBackend(hadError);
}

export class ClientConnection implements LoginContext {
  private frames = new FrameReader();
  private notify: (() => void) | undefined;
  private ended = false;
  private outcome: ConnectionOutcome = 'client_closed';
  private clientAddress: string;
  private clientPort: number;
  private limiterKey: string | undefined;
  private playerKey: string | undefined;
  private timer: unknown;
  private backend: Socket | undefined;
  private target: BackendTarget | undefined;
  /** Created on first use (held logins, fallback watches): most sessions never need one. */
  private closed: AbortController | undefined;
  private session: SessionInfo | undefined;
  private readonly acceptedAt: number;
  private sessionStart = 0;
  private serverAddress = '';
  private readonly budget: number;

  constructor(
    private readonly socket: Socket,
    readonly deps: ConnectionDeps,
    private readonly onDone: (conn: ClientConnection) => void,
  ) {
    this.clientAddress = normalizeAddress(socket.remoteAddress ?? '');
    this.clientPort = socket.remotePort ?? 0;
    this.acceptedAt = deps.clock.now();
    this.budget =
      this.frameLimit('maxHandshakeSize') + this.frameLimit('maxLoginStartSize') + 256 + (this.fromTrustedProxy() ? MAX_PROXY_V2_BYTES : 0);
  }

  start(): void {
    this.socket.setNoDelay(true);
    owners.set(this.socket, this);
    this.socket.on('data', playerData);
    this.socket.on('error', destroyOnError);
    this.socket.on('close', playerClosed);
    this.deps.metrics.connectionsActive.inc();
    this.armTimer(this.deps.limits.handshakeTimeoutMs);
    this.run().catch((err: unknown) => this.fail(err));
  }

  /** Closes both sides now (router shutdown). */
  destroy(): void {
    this.socket.destroy();
    this.backend?.destroy();
  }

  /** Aborted when the player's connection closes. */
  get closedSignal(): AbortSignal {
    this.closed ??= new AbortController();
    if (this.ended) this.closed.abort();
    return this.closed.signal;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /**
   * The largest frame read in a phase: its own limit, capped by `max_packet_size` (the ceiling for
   * every frame the router decodes). FrameReader refuses a larger declared length as soon as the
   * length prefix is in, before any of the body is waited for (docs/router.md, limits).
   */
  private frameLimit(phase: 'maxHandshakeSize' | 'maxLoginStartSize'): number {
    return Math.min(this.deps.limits[phase], this.deps.limits.maxPacketSize);
  }

  private fromTrustedProxy(): boolean {
    return this.deps.trustedCidrs.length > 0 && anyCidrContains(this.deps.trustedCidrs, this.clientAddress);
  }

  /** Bytes before routing (the `data` listener until the pipe starts). */
  received(chunk: Buffer): void {
    if (this.frames.receivedBytes + chunk.length > this.budget) {
      this.drop('oversized', `more than ${this.budget} bytes before routing`);
      return;
    }
    this.frames.push(chunk);
    this.notify?.();
  }

  /** The backend's socket closed: the player's follows (at once after an error, else after what is queued). */
  closedByBackend(hadError: boolean): void {
    if (hadError) this.socket.destroy();
    else this.socket.end();
  }

  /** The player's socket closed. */
  closedByPlayer(): void {
    this.ended = true;
    this.notify?.();
    this.closed?.abort();
    this.clearTimer();
    if (this.backend && !this.backend.destroyed) {
      this.backend.end();
      setTimeout(destroySocket, BACKEND_LINGER_MS, this.backend).unref();
    }
    this.releasePreLoginSlot();
    if (this.playerKey !== undefined) this.deps.playerLimiter.release(this.playerKey);
    const m = this.deps.metrics;
    m.connectionsActive.dec();
    m.connectionsTotal.inc({ outcome: this.outcome });
    m.bytes.inc({ direction: 'in' }, this.socket.bytesRead);
    m.bytes.inc({ direction: 'out' }, this.socket.bytesWritten);
    if (this.target) {
      m.targetBytes.inc({ target: this.target.name, direction: 'in' }, this.socket.bytesRead);
      m.targetBytes.inc({ target: this.target.name, direction: 'out' }, this.socket.bytesWritten);
      if (this.session) m.targetPlayers.dec({ target: this.target.name });
    }
    if (this.session?.backend) {
      this.deps.sessions.disconnected(this.session, {
        durationMs: this.deps.clock.now() - this.sessionStart,
        bytesIn: this.socket.bytesRead,
        bytesOut: this.socket.bytesWritten,
      });
    }
    this.onDone(this);
  }

  private releasePreLoginSlot(): void {
    if (this.limiterKey !== undefined) this.deps.connectionLimiter.release(this.limiterKey);
    this.limiterKey = undefined;
  }

  private armTimer(ms: number): void {
    this.clearTimer();
    this.timer = this.deps.timers.setTimeout(() => this.drop('timeout', `no complete packet within ${ms} ms`), ms);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.deps.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private drop(outcome: ConnectionOutcome, reason: string): void {
    if (this.ended) return;
    this.outcome = outcome;
    this.deps.logger.debug({ client: this.clientAddress, outcome, reason }, 'connection dropped');
    this.socket.destroy();
  }

  private fail(err: unknown): void {
    if (err instanceof Dropped) return this.drop(err.outcome, err.message);
    if (err instanceof ProtocolError) return this.drop(err.kind, err.message);
    if (this.ended) return;
    this.deps.logger.warn({ err, client: this.clientAddress }, 'connection failed');
    this.drop('malformed', err instanceof Error ? err.message : String(err));
  }

  /** Re-tries `attempt` after each arriving chunk; bounded by the byte budget and the deadline. */
  private async waitFor<T>(attempt: () => T | undefined, settleMs?: number): Promise<T> {
    for (;;) {
      if (this.ended) throw new Dropped('client_closed', 'client closed the connection');
      const value = attempt();
      if (value !== undefined) return value;
      await new Promise<void>((resolve) => {
        this.notify = resolve;
        if (settleMs !== undefined) this.deps.timers.setTimeout(resolve, settleMs);
      });
      this.notify = undefined;
    }
  }

  private async run(): Promise<void> {
    if (this.fromTrustedProxy()) await this.readProxyHeader();
    this.limiterKey = clientKey(this.clientAddress);
    if (!this.deps.connectionLimiter.tryAcquire(this.limiterKey)) {
      this.limiterKey = undefined;
      this.deps.metrics.rateLimited.inc({ limit: 'connections' });
      throw new Dropped('rate_limited', 'too many connections from this address');
    }
    await this.waitFor(() => (this.frames.pendingBytes > 0 ? true : undefined));
    if (isLegacyPing(this.frames.peek())) return this.handleLegacy(await this.readLegacyPing());
    const handshake = parseHandshake(await this.waitFor(() => this.frames.next(this.frameLimit('maxHandshakeSize'))));
    this.serverAddress = cleanServerAddress(handshake.serverAddress);
    if (handshake.nextState === 1) return this.handleStatus(handshake, this.serverAddress);
    const loginFrame = await this.waitFor(() => this.frames.next(this.frameLimit('maxLoginStartSize')));
    const player = parseLoginStart(loginFrame, handshake.protocolVersion);
    this.clearTimer();
    // Logged in as far as the router is concerned: the pre-login cap no longer applies.
    this.releasePreLoginSlot();
    return this.handleLogin(handshake, this.serverAddress, player);
  }

  /** A trusted balancer may send PROXY v2 first; anything else is read as Minecraft. */
  private async readProxyHeader(): Promise<void> {
    const parsed = await this.waitFor<{ header: ProxyHeader; size: number } | false>(() => {
      const buf = this.frames.peek();
      if (!mayBeProxyV2(buf)) return false;
      return parseProxyV2Header(buf);
    });
    if (parsed === false) return;
    if (parsed.header.command === 'proxy') {
      this.clientAddress = normalizeAddress(parsed.header.sourceAddress);
      this.clientPort = parsed.header.sourcePort;
    }
    const rest = this.frames.peek().subarray(parsed.size);
    this.frames = new FrameReader();
    if (rest.length > 0) this.frames.push(Buffer.from(rest));
  }

  private async readLegacyPing(): Promise<LegacyPing> {
    const settleAt = this.deps.clock.now() + LEGACY_SETTLE_MS;
    return this.waitFor(() => parseLegacyPing(this.frames.peek(), this.deps.clock.now() >= settleAt), LEGACY_SETTLE_MS);
  }

  private async resolve(
    intent: Intent,
    serverAddress: string,
    protocolVersion: number,
    player?: SessionInfo['player'],
  ): Promise<RoutePlan> {
    const request = { serverAddress, intent, protocolVersion, clientAddress: this.clientAddress, ...(player ? { player } : {}) };
    return this.deps.resolver.resolve(request);
  }

  dialCandidates(candidates: readonly BackendTarget[], timeoutMs = this.deps.limits.backendDialTimeoutMs): Promise<Dialed | undefined> {
    return dialFirst(candidates, this.deps.dial, timeoutMs, (target, err) =>
      this.deps.logger.info({ backend: target.name, err: (err as Error).message }, 'backend unreachable, trying the next candidate'),
    );
  }

  private async handleStatus(handshake: Handshake, serverAddress: string): Promise<void> {
    this.clearTimer(); // dialing is bounded by the dial timeout; local answering re-arms it
    const plan = await this.resolve('status', serverAddress, handshake.protocolVersion);
    if (plan.kind === 'route') {
      const dialed = await this.dialCandidates(plan.candidates);
      if (dialed) return this.pipe(dialed);
    }
    return this.answerStatusLocally(handshake.protocolVersion, localStateForPlan(plan));
  }

  /** Answers request and ping from the bytes already buffered (one segment works as well as many). */
  private async answerStatusLocally(protocolVersion: number, state: LocalStatusState): Promise<void> {
    this.outcome = 'status_local';
    this.deps.metrics.statusAnswers.inc({ state });
    let answered = false;
    for (let i = 0; i < MAX_STATUS_PACKETS; i++) {
      this.armTimer(this.deps.limits.handshakeTimeoutMs);
      const frame = await this.waitFor(() => this.frames.next(this.frameLimit('maxHandshakeSize')));
      if (isStatusRequest(frame) && !answered) {
        answered = true;
        this.socket.write(writeStatusResponse(localStatusJson(state, protocolVersion, this.deps.status)));
        continue;
      }
      this.clearTimer();
      this.socket.end(writePong(parsePing(frame)));
      return;
    }
    throw new Dropped('malformed', 'too many status packets');
  }

  private async handleLegacy(ping: LegacyPing): Promise<void> {
    this.clearTimer(); // backend pings are bounded by the dial timeout
    const protocolVersion = ping.protocolVersion ?? LEGACY_UNKNOWN_PROTOCOL;
    const plan = await this.resolve('status', cleanServerAddress(ping.host ?? ''), protocolVersion);
    let answer = undefined as Buffer | undefined;
    const state: LocalStatusState = localStateForPlan(plan);
    if (plan.kind === 'route') {
      // Ask the backend with a modern ping and translate: works with backends that dropped legacy support.
      for (const target of plan.candidates) {
        try {
          const result = await this.deps.pingServer(target.host, target.port, {
            timeoutMs: this.deps.limits.backendDialTimeoutMs,
            maxFrameSize: this.deps.limits.maxPacketSize,
          });
          answer = writeLegacyPingResponse(ping.kind, legacyFromStatus(result.status, protocolVersion));
          break;
        } catch {
          // next candidate
        }
      }
    }
    if (!answer) {
      this.deps.metrics.statusAnswers.inc({ state });
      answer = writeLegacyPingResponse(ping.kind, localLegacyStatus(state, protocolVersion, this.deps.status));
    }
    this.outcome = 'legacy_local';
    this.clearTimer();
    if (!this.ended) this.socket.end(answer);
  }

  private async handleLogin(handshake: Handshake, serverAddress: string, player: SessionInfo['player']): Promise<void> {
    this.session = { player, clientAddress: this.clientAddress };
    const key = clientKey(this.clientAddress);
    if (!this.deps.loginLimiter.allow(key)) {
      this.deps.metrics.rateLimited.inc({ limit: 'login' });
      return this.disconnect('rate_limited', this.deps.messages.rateLimited, 'rate_limited');
    }
    if (!this.deps.playerLimiter.tryAcquire(key)) {
      this.deps.metrics.rateLimited.inc({ limit: 'players' });
      return this.disconnect('rate_limited', this.deps.messages.playersPerIp, 'players_per_ip');
    }
    this.playerKey = key;
    const intent: Intent = handshake.nextState === 3 ? 'transfer' : 'login';
    const plan = await this.resolve(intent, serverAddress, handshake.protocolVersion, player);
    if (this.ended) return;
    return runLoginPlan(plan, this, player);
  }

  /** Records the held instance on the session (for the report). */
  holding(instanceId: string): void {
    if (this.session) this.session = { ...this.session, instanceId };
  }

  /** One line per login outcome (rate-bounded). */
  logOutcome(outcome: LoginOutcome, target: BackendTarget | null, reason?: string): void {
    this.deps.outcomes.log({
      player: this.session?.player.name ?? '',
      client: this.clientAddress,
      address: this.serverAddress,
      target: target?.name ?? null,
      outcome,
      ...(reason !== undefined ? { reason } : {}),
      durationMs: this.deps.clock.now() - this.acceptedAt,
    });
  }

  disconnect(outcome: ConnectionOutcome, message: string, reason: string = outcome): void {
    this.clearTimer();
    if (this.ended) return;
    this.outcome = outcome;
    if (this.session) {
      this.deps.sessions.loginDenied(this.session, outcome);
      this.logOutcome('refused', null, reason);
    }
    this.socket.end(writeLoginDisconnect(message));
  }

  /** Replays every byte read so far, then forwards both ways with backpressure; after this, bytes only. */
  pipe({ socket: backend, target }: Dialed, outcome: LoginOutcome = 'routed'): void {
    if (this.ended) {
      backend.destroy();
      return;
    }
    this.clearTimer();
    this.backend = backend;
    this.target = target;
    this.outcome = 'proxied';
    this.socket.removeListener('data', playerData);
    this.socket.pause();
    backend.setNoDelay(true);
    owners.set(backend, this);
    backend.on('error', destroyOnError);
    backend.on('close', backendClosed);
    if (this.deps.sendProxyToBackends) {
      backend.write(
        writeProxyV2Header({
          sourceAddress: this.clientAddress,
          sourcePort: this.clientPort,
          destinationAddress: normalizeAddress(this.socket.localAddress ?? '127.0.0.1'),
          destinationPort: this.socket.localPort ?? 0,
        }),
      );
    }
    backend.write(this.frames.received());
    this.frames = DRAINED;
    forwardBytes(this.socket, backend);
    forwardBytes(backend, this.socket);
    this.deps.metrics.targetConnections.inc({ target: target.name });
    if (this.session) {
      // Object literals, not a spread: a spread copy got a hidden class of its own per session (~0.2 KiB).
      const { player, clientAddress, instanceId } = this.session;
      this.session =
        instanceId === undefined ? { player, clientAddress, backend: target } : { player, clientAddress, instanceId, backend: target };
      this.sessionStart = this.deps.clock.now();
      this.deps.metrics.targetPlayers.inc({ target: target.name });
      this.deps.sessions.loginAccepted(this.session);
      this.logOutcome(outcome, target);
    }
  }
}
