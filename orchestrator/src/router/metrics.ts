// Router metrics (prom-client, on its own registry: no module singletons) and
// the small HTTP listener that serves them on `[metrics] bind`.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export type ConnectionOutcome =
  | 'proxied'
  | 'status_local'
  | 'legacy_local'
  | 'refused'
  | 'rate_limited'
  | 'unreachable'
  | 'wake_timeout'
  | 'start_disconnect'
  | 'timeout'
  | 'malformed'
  | 'oversized'
  | 'client_closed';

export class RouterMetrics {
  readonly registry = new Registry();
  readonly connectionsActive = new Gauge({
    name: 'endercloud_router_connections_active',
    help: 'Open client connections',
    registers: [this.registry],
  });
  readonly connectionsTotal = new Counter({
    name: 'endercloud_router_connections_total',
    help: 'Closed client connections by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly bytes = new Counter({
    name: 'endercloud_router_bytes_total',
    help: 'Bytes relayed, by direction (in = from players)',
    labelNames: ['direction'] as const,
    registers: [this.registry],
  });
  readonly statusAnswers = new Counter({
    name: 'endercloud_router_status_answers_total',
    help: 'Status pings answered by the router itself, by state',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'endercloud_router_rate_limited_total',
    help: 'Connections refused by a limit',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  readonly wakes = new Counter({
    name: 'endercloud_router_wakes_total',
    help: 'Wake-on-connect attempts by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly wakeSeconds = new Histogram({
    name: 'endercloud_router_wake_seconds',
    help: 'Login held → backend connected, for woken backends',
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30],
    registers: [this.registry],
  });

  // Per target: the `[servers]` name (or registry name for a transfer), so the label set is what the operator configured.
  readonly targetConnections = new Counter({
    name: 'endercloud_router_target_connections_total',
    help: 'Connections piped to a backend, by target',
    labelNames: ['target'] as const,
    registers: [this.registry],
  });
  readonly targetPlayers = new Gauge({
    name: 'endercloud_router_target_players_active',
    help: 'Logged-in players piped to a backend now, by target',
    labelNames: ['target'] as const,
    registers: [this.registry],
  });
  readonly targetBytes = new Counter({
    name: 'endercloud_router_target_bytes_total',
    help: 'Bytes relayed to/from players, by target and direction (in = from players)',
    labelNames: ['target', 'direction'] as const,
    registers: [this.registry],
  });
  readonly targetWakes = new Counter({
    name: 'endercloud_router_target_wakes_total',
    help: 'Held logins (wake, start, join) by target and result',
    labelNames: ['target', 'result'] as const,
    registers: [this.registry],
  });
  readonly targetWakeSeconds = new Histogram({
    name: 'endercloud_router_target_wake_seconds',
    help: 'Login held → backend connected, by target',
    labelNames: ['target'] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30],
    registers: [this.registry],
  });

  /** Current value of a labelled counter (for tests and logs). */
  async value(metric: Counter<string> | Gauge<string>, labels: Record<string, string> = {}): Promise<number> {
    const data = await metric.get();
    return data.values.filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((a, v) => a + v.value, 0);
  }
}

/** Serves GET /metrics; everything else is 404. */
export async function startMetricsServer(
  metrics: RouterMetrics,
  host: string,
  port: number,
): Promise<{ server: Server; address: AddressInfo }> {
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.split('?')[0] === '/metrics') {
      metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(text);
        },
        () => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { code: 'INTERNAL', message: 'metrics collection failed' } }));
        },
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'only GET /metrics is served here' } }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, address: server.address() as AddressInfo };
}
