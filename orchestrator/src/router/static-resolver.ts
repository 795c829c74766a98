// Config-driven routing: the forced host's list when the cleaned address
// matches, else `try`; only `host:port` entries (instance:/group: entries need
// a registry and are skipped here). Pure: the Router does the dialing.

import type { BackendResolver, BackendTarget, RoutePlan, RouteRequest } from './resolver.js';
import type { RoutingConfig } from './config.js';

export class StaticResolver implements BackendResolver {
  constructor(
    readonly routing: RoutingConfig,
    private readonly noBackendMessage = 'No server is configured for this address.',
  ) {}

  /** The ordered server names for an address: forced host list, else `try`. */
  candidateNames(serverAddress: string): readonly string[] {
    return this.routing.forcedHosts[serverAddress] ?? this.routing.try;
  }

  resolve(request: RouteRequest): RoutePlan {
    const candidates: BackendTarget[] = [];
    for (const name of this.candidateNames(request.serverAddress)) {
      const entry = this.routing.servers[name];
      if (entry?.kind === 'address') candidates.push({ name, host: entry.host, port: entry.port });
    }
    if (candidates.length > 0) return { kind: 'route', candidates };
    return request.intent === 'status'
      ? { kind: 'status', state: 'NoBackend' }
      : { kind: 'refuse', reason: 'no_backend', message: this.noBackendMessage };
  }
}
