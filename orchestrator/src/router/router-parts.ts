// Builds the routing parts from the configuration: with an orchestrator the
// registry client, registry resolver, waker and session reporter (wired here so
// tests run the same assembly); without one the static resolver.

import type { Logger } from '../shared/logger.js';
import type { RouterConfig } from './config.js';
import type { RouterMetrics } from './metrics.js';
import { OrchestratorApi } from './orchestrator-api.js';
import { OrchestratorWaker } from './orchestrator-waker.js';
import { RegistryClient, type BackoffPolicy } from './registry-client.js';
import { RegistryResolver } from './registry-resolver.js';
import type { BackendResolver, SessionReporter, Waker } from './resolver.js';
import { OrchestratorSessionReporter } from './session-reporter.js';
import { StaticResolver } from './static-resolver.js';

export interface RouterParts {
  resolver: BackendResolver;
  waker?: Waker;
  sessions?: SessionReporter;
  /** Present with an orchestrator (tests wait on it; the router only reads through the resolver). */
  registry?: RegistryClient;
  /** Stops the orchestrator integration, sending buffered session reports first (bounded). */
  close(): Promise<void>;
}

/** Timings a test shortens; production uses the defaults. */
export interface RouterPartsTuning {
  fetch?: typeof fetch;
  registryBackoff?: BackoffPolicy;
  sessionBackoff?: BackoffPolicy;
  sessionFlushMs?: number;
  holdSlackMs?: number;
}

const SHUTDOWN_FLUSH_MS = 3000;

/** The registry-backed parts when an orchestrator is configured, else the static resolver. */
export function buildRouterParts(config: Readonly<RouterConfig>, logger: Logger, metrics: RouterMetrics, tuning: RouterPartsTuning = {}): RouterParts {
  if (!config.orchestratorUrl) {
    return { resolver: new StaticResolver(config.routing, config.messages.noBackend), close: async () => undefined };
  }
  const connection = { baseUrl: config.orchestratorUrl, token: config.routerToken, ...(tuning.fetch ? { fetch: tuning.fetch } : {}) };
  const api = new OrchestratorApi(connection);
  const registry = new RegistryClient({ ...connection, logger, metricsRegistry: metrics.registry, ...(tuning.registryBackoff ? { backoff: tuning.registryBackoff } : {}) });
  const holdTimeoutMs = config.limits.wakeHoldTimeoutMs;
  const waker = new OrchestratorWaker({ api, registry, holdTimeoutMs, logger, metricsRegistry: metrics.registry });
  const sessions = new OrchestratorSessionReporter({
    api,
    routerId: config.routerId,
    logger,
    metricsRegistry: metrics.registry,
    ...(tuning.sessionBackoff ? { backoff: tuning.sessionBackoff } : {}),
    ...(tuning.sessionFlushMs !== undefined ? { flushIntervalMs: tuning.sessionFlushMs } : {}),
  });
  const resolver = new RegistryResolver({
    routing: config.routing,
    registry,
    messages: config.messages,
    holdTimeoutMs,
    waker,
    transfers: api,
    logger,
    ...(tuning.holdSlackMs !== undefined ? { holdSlackMs: tuning.holdSlackMs } : {}),
  });
  registry.start();
  sessions.start();
  return {
    resolver,
    waker,
    sessions,
    registry,
    close: async () => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([sessions.flush(), new Promise((r) => (timer = setTimeout(r, SHUTDOWN_FLUSH_MS)))]);
      clearTimeout(timer);
      sessions.stop();
      waker.close();
      await registry.stop();
    },
  };
}
