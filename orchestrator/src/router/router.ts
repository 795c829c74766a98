// The edge router: a net.Server that hands each connection to ClientConnection
// with the resolver, limits and metrics injected. Knows nothing about where
// routing plans come from (static file, or the registry with an orchestrator).
// `reload` swaps the configuration for new connections; open ones keep theirs.

import { createServer, type AddressInfo, type Server } from 'node:net';
import type { Logger } from '../shared/logger.js';
import { realTimers, type Timers } from '../shared/timers.js';
import { pingServer } from '../protocol/status-client.js';
import { parseCidr } from './cidr.js';
import { systemClock, type Clock } from './clock.js';
import type { RouterFileConfig } from './config.js';
import { ClientConnection, type ConnectionDeps } from './connection.js';
import { tcpDialer, type Dialer } from './dialer.js';
import { ConnectionLimiter, LoginRateLimiter } from './limits.js';
import { RouterMetrics } from './metrics.js';
import { OutcomeLog } from './outcome-log.js';
import { noopSessionReporter, type BackendResolver, type SessionReporter, type WakeCoordinator } from './resolver.js';

export type RouterRuntimeConfig = Pick<RouterFileConfig, 'limits' | 'status' | 'messages' | 'proxyProtocol'>;

export interface RouterDeps {
  config: RouterRuntimeConfig;
  resolver: BackendResolver;
  logger: Logger;
  /** The wake coordinator (with an orchestrator). */
  waker?: WakeCoordinator;
  sessions?: SessionReporter;
  metrics?: RouterMetrics;
  clock?: Clock;
  timers?: Timers;
  /** Rate bound of the per-login outcome lines. */
  outcomeLogRate?: { burst: number; perSecond: number };
  dial?: Dialer;
  pingServer?: ConnectionDeps['pingServer'];
}

export class Router {
  readonly metrics: RouterMetrics;
  private readonly server: Server;
  private readonly connections = new Set<ClientConnection>();
  /** What new connections get; replaced whole by reload so open connections keep the object they started with. */
  private deps: ConnectionDeps;

  constructor(deps: RouterDeps) {
    const { limits } = deps.config;
    this.metrics = deps.metrics ?? new RouterMetrics();
    const clock = deps.clock ?? systemClock;
    this.deps = {
      ...Router.configPart(deps.config),
      resolver: deps.resolver,
      wakes: deps.waker,
      sessions: deps.sessions ?? noopSessionReporter,
      metrics: this.metrics,
      logger: deps.logger,
      outcomes: new OutcomeLog(deps.logger, clock, deps.outcomeLogRate),
      connectionLimiter: new ConnectionLimiter(limits.maxConnectionsPerIp),
      playerLimiter: new ConnectionLimiter(limits.maxPlayersPerIp),
      loginLimiter: new LoginRateLimiter(limits.loginRatelimitMs, () => clock.now()),
      dial: deps.dial ?? tcpDialer,
      pingServer: deps.pingServer ?? pingServer,
      clock,
      timers: deps.timers ?? realTimers,
    };
    const done = (conn: ClientConnection): void => void this.connections.delete(conn);
    this.server = createServer({ noDelay: true }, (socket) => {
      const conn = new ClientConnection(socket, this.deps, done);
      this.connections.add(conn);
      conn.start();
    });
    this.server.on('error', (err) => deps.logger.error({ err }, 'router listener error'));
  }

  private static configPart(
    config: RouterRuntimeConfig,
  ): Pick<ConnectionDeps, 'limits' | 'status' | 'messages' | 'sendProxyToBackends' | 'trustedCidrs'> {
    return {
      limits: config.limits,
      status: config.status,
      messages: config.messages,
      sendProxyToBackends: config.proxyProtocol.sendToBackends,
      trustedCidrs: config.proxyProtocol.trustedCidrs.map(parseCidr),
    };
  }

  /**
   * Applies a validated configuration to new connections. Established sessions are never touched;
   * the limiters keep their counts (only their bounds change) so open connections release correctly.
   */
  reload(config: RouterRuntimeConfig, resolver: BackendResolver = this.deps.resolver): void {
    const { limits } = config;
    this.deps.connectionLimiter.setMax(limits.maxConnectionsPerIp);
    this.deps.playerLimiter.setMax(limits.maxPlayersPerIp);
    this.deps.loginLimiter.setInterval(limits.loginRatelimitMs);
    this.deps = { ...this.deps, ...Router.configPart(config), resolver };
  }

  get resolver(): BackendResolver {
    return this.deps.resolver;
  }

  listen(port: number, host: string): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.removeListener('error', onError);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  get activeConnections(): number {
    return this.connections.size;
  }

  /** Stops accepting and closes every open connection (both sides). */
  async close(): Promise<void> {
    for (const conn of this.connections) conn.destroy();
    if (!this.server.listening) return;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
