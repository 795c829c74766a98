// `npm run router`: loads the configuration, builds the static resolver (the
// registry-backed resolver plugs in here once the orchestrator integration lands),
// starts the player listener and the metrics listener, and shuts down on signals.

import { loadOrExit } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { loadRouterConfig } from './config.js';
import { startMetricsServer } from './metrics.js';
import { Router } from './router.js';
import { StaticResolver } from './static-resolver.js';

async function main(): Promise<void> {
  const config = loadOrExit(() => loadRouterConfig(), 'router');
  const logger = createLogger('router', 'info');
  if (config.orchestratorUrl) {
    logger.warn({ orchestrator: config.orchestratorUrl }, 'registry integration is not built yet: routing from [servers] host:port entries only');
  }
  const resolver = new StaticResolver(config.routing, config.messages.noBackend);
  const router = new Router({ config, resolver, logger });
  const address = await router.listen(config.bind.port, config.bind.host);
  logger.info({ address: `${address.address}:${address.port}`, servers: Object.keys(config.routing.servers).length }, 'router listening');
  const metrics = config.metrics ? await startMetricsServer(router.metrics, config.metrics.host, config.metrics.port) : undefined;
  if (metrics) logger.info({ address: `${metrics.address.address}:${metrics.address.port}` }, 'metrics listening on /metrics');

  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'shutting down');
    metrics?.server.close();
    router.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err: unknown) => {
  process.stderr.write(`router: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
