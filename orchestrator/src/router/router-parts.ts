// Builds the routing parts from the configuration: with an orchestrator the
// registry client, registry resolver, waker and session reporter (wired here so
// tests run the same assembly); without one the static resolver.

import type { Logger } from '../shared/logger.js';
import type { RouterConfig } from './config.js';
import type { RouterMetrics } from './metrics.js';
import { OrchestratorApi } from './orchestrator-api.js';
import { RegistryClient, type BackoffPolicy } from './registry-client.js';
import { RegistryResolver, unknownTargets } from './registry-resolver.js';
import type { BackendResolver, SessionReporter, WakeCoordinator } from './resolver.js';
import { OrchestratorWakeCoordinator } from './wake-coordinator.js';
import { OrchestratorSessionReporter } from './session-reporter.js';
import { StaticResolver } from './static-resolver.js';

export interface RouterParts {
  resolver: BackendResolver;
  /** The wake coordinator (with an orchestrator). */
  waker?: WakeCoordinator;
  sessions?: SessionReporter;
  /** Present with an orchestrator (tests wait on it; the router only reads through the resolver). */
  registry?: RegistryClient;
  /**
   * A resolver for a reloaded configuration (same registry, coordinator and reporter); warns about
   * `[servers]` entries the registry does not know.
   */
  reconfigure(config: Readonly<RouterConfig>): BackendResolver;
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

/** Entries that cannot act without an orchestrator, one line each naming the entry. */
export function staticModeWarnings(config: Pick<RouterConfig, 'routing'>): string[] {
  const out: string[] = [];
  for (const [name, entry] of Object.entries(config.routing.servers)) {
    if (entry.kind !== 'address') out.push(`servers.${name}: "${entry.kind}:${entry.id}" is skipped without ENDERCLOUD_ORCHESTRATOR_URL`);
  }
  if (config.routing.fallback !== undefined)
    out.push('wake.fallback: has no effect without ENDERCLOUD_ORCHESTRATOR_URL (nothing is woken)');
  return out;
}

/** The registry-backed parts when an orchestrator is configured, else the static resolver. */
export function buildRouterParts(
  config: Readonly<RouterConfig>,
  logger: Logger,
  metrics: RouterMetrics,
  tuning: RouterPartsTuning = {},
): RouterParts {
  if (!config.orchestratorUrl) {
    const reconfigure = (c: Readonly<RouterConfig>): BackendResolver => {
      for (const line of staticModeWarnings(c)) logger.warn({ entry: line.split(':')[0] }, line);
      return new StaticResolver(c.routing, c.messages.noBackend);
    };
    return { resolver: reconfigure(config), reconfigure, close: async () => undefined };
  }
  const connection = { baseUrl: config.orchestratorUrl, token: config.routerToken, ...(tuning.fetch ? { fetch: tuning.fetch } : {}) };
  const api = new OrchestratorApi(connection);
  const registry = new RegistryClient({
    ...connection,
    logger,
    metricsRegistry: metrics.registry,
    ...(tuning.registryBackoff ? { backoff: tuning.registryBackoff } : {}),
  });
  const holdTimeoutMs = config.limits.wakeHoldTimeoutMs;
  const waker = new OrchestratorWakeCoordinator({ api, registry, holdTimeoutMs, logger, metricsRegistry: metrics.registry });
  const sessions = new OrchestratorSessionReporter({
    api,
    routerId: config.routerId,
    logger,
    metricsRegistry: metrics.registry,
    ...(tuning.sessionBackoff ? { backoff: tuning.sessionBackoff } : {}),
    ...(tuning.sessionFlushMs !== undefined ? { flushIntervalMs: tuning.sessionFlushMs } : {}),
  });
  const makeResolver = (c: Readonly<RouterConfig>): RegistryResolver =>
    new RegistryResolver({
      routing: c.routing,
      registry,
      messages: c.messages,
      holdTimeoutMs: c.limits.wakeHoldTimeoutMs,
      transfers: api,
      logger,
      ...(tuning.holdSlackMs !== undefined ? { holdSlackMs: tuning.holdSlackMs } : {}),
    });
  let current = config;
  const warnUnknown = (): void => {
    for (const line of unknownTargets(current.routing, registry)) logger.warn({ entry: line.split(':')[0] }, line);
  };
  // At start the registry is empty: check once the first snapshot is in.
  const unsubscribeFirst = registry.subscribe((change) => {
    if (change.kind !== 'snapshot') return;
    unsubscribeFirst();
    warnUnknown();
  });
  const reconfigure = (c: Readonly<RouterConfig>): BackendResolver => {
    current = c;
    waker.setHoldTimeout(c.limits.wakeHoldTimeoutMs);
    if (registry.synced) warnUnknown();
    return makeResolver(c);
  };
  const resolver = makeResolver(config);
  registry.start();
  sessions.start();
  return {
    resolver,
    waker,
    sessions,
    registry,
    reconfigure,
    close: async () => {
      unsubscribeFirst();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([sessions.flush(), new Promise((r) => (timer = setTimeout(r, SHUTDOWN_FLUSH_MS)))]);
      clearTimeout(timer);
      sessions.stop();
      waker.close();
      await registry.stop();
    },
  };
}
