// The edge router: a net.Server that hands each connection to ClientConnection
// with the resolver, limits and metrics injected. Knows nothing about where
// routing decisions come from (static file today, registry with an orchestrator).

import { createServer, type AddressInfo, type Server } from 'node:net';
import type { Logger } from '../shared/logger.js';
import { pingServer } from '../protocol/status-client.js';
import { parseCidr } from './cidr.js';
import type { RouterFileConfig } from './config.js';
import { ClientConnection, type ConnectionDeps } from './connection.js';
import { tcpDialer, type Dialer } from './dialer.js';
import { ConnectionLimiter, LoginRateLimiter } from './limits.js';
import { RouterMetrics } from './metrics.js';
import { noopSessionReporter, type BackendResolver, type SessionReporter, type Waker } from './resolver.js';

export interface RouterDeps {
  config: Pick<RouterFileConfig, 'limits' | 'status' | 'messages' | 'proxyProtocol'>;
  resolver: BackendResolver;
  logger: Logger;
  waker?: Waker;
  sessions?: SessionReporter;
  metrics?: RouterMetrics;
  /** Clock for the login rate limiter. */
  now?: () => number;
  dial?: Dialer;
  pingServer?: ConnectionDeps['pingServer'];
}

export class Router {
  readonly metrics: RouterMetrics;
  private readonly server: Server;
  private readonly connections = new Set<ClientConnection>();
  private readonly deps: ConnectionDeps;

  constructor(deps: RouterDeps) {
    const { limits, status, messages, proxyProtocol } = deps.config;
    this.metrics = deps.metrics ?? new RouterMetrics();
    this.deps = {
      limits,
      status,
      messages,
      sendProxyToBackends: proxyProtocol.sendToBackends,
      trustedCidrs: proxyProtocol.trustedCidrs.map(parseCidr),
      resolver: deps.resolver,
      waker: deps.waker,
      sessions: deps.sessions ?? noopSessionReporter,
      metrics: this.metrics,
      logger: deps.logger,
      connectionLimiter: new ConnectionLimiter(limits.maxConnectionsPerIp),
      loginLimiter: new LoginRateLimiter(limits.loginRatelimitMs, deps.now ?? Date.now),
      dial: deps.dial ?? tcpDialer,
      pingServer: deps.pingServer ?? pingServer,
    };
    this.server = createServer({ noDelay: true }, (socket) => {
      const conn = new ClientConnection(socket, this.deps, () => this.connections.delete(conn));
      this.connections.add(conn);
      conn.start();
    });
    this.server.on('error', (err) => deps.logger.error({ err }, 'router listener error'));
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
