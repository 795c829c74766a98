// `npm run router`: loads the configuration and starts the player listener and
// the metrics listener. With ENDERCLOUD_ORCHESTRATOR_URL it follows the registry,
// wakes instances and reports sessions; without it, it is a static router.
// SIGHUP or an edit of the config file reloads it for new connections.

import { loadOrExit } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { loadRouterConfig } from './config.js';
import { RouterMetrics, startMetricsServer } from './metrics.js';
import { createReloader, watchConfigFile } from './reload.js';
import { Router } from './router.js';
import { buildRouterParts } from './router-parts.js';

async function main(): Promise<void> {
  const config = loadOrExit(() => loadRouterConfig(), 'router');
  const logger = createLogger('router', 'info');
  const metrics = new RouterMetrics();
  const parts = buildRouterParts(config, logger, metrics);
  if (config.orchestratorUrl)
    logger.info({ orchestrator: config.orchestratorUrl, routerId: config.routerId }, 'following the orchestrator registry');
  const router = new Router({
    config,
    resolver: parts.resolver,
    logger,
    metrics,
    ...(parts.waker ? { waker: parts.waker } : {}),
    ...(parts.sessions ? { sessions: parts.sessions } : {}),
  });
  const address = await router.listen(config.bind.port, config.bind.host);
  logger.info({ address: `${address.address}:${address.port}`, servers: Object.keys(config.routing.servers).length }, 'router listening');
  const metricsServer = config.metrics ? await startMetricsServer(metrics, config.metrics.host, config.metrics.port) : undefined;
  if (metricsServer)
    logger.info({ address: `${metricsServer.address.address}:${metricsServer.address.port}` }, 'metrics listening on /metrics');

  const reloader = createReloader(config, router, parts, logger);
  const watcher = watchConfigFile(config.configPath, () => reloader.reload('file change'));
  process.on('SIGHUP', () => reloader.reload('SIGHUP'));

  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'shutting down');
    watcher.close();
    metricsServer?.server.close();
    router
      .close()
      .then(() => parts.close())
      .then(
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
