// A whole EnderCloud edge on the real Docker engine, in one process: an
// orchestrator (SQLite), an agent with its heartbeats, the Minecraft-protocol
// test-server template and group, and routers assembled by buildRouterParts as
// `npm run router` does. Used by test/e2e/router.test.ts and bench/router.ts.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Heartbeater } from '../../src/agent/heartbeat.js';
import { realTimers } from '../../src/shared/timers.js';
import { parseRouterToml, type RouterConfig } from '../../src/router/config.js';
import { RouterMetrics } from '../../src/router/metrics.js';
import { buildRouterParts, type RouterParts } from '../../src/router/router-parts.js';
import { Router } from '../../src/router/router.js';
import { orchestratorConfig, type OrchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { createTestAgent, randomPortRange, removeNetwork, type TestAgent } from './agent-harness.js';
import { removeContainersByLabel, uniqueId } from './docker.js';
import { ensureImage } from './images.js';
import { mcServerImage } from './mc-server.js';
import { freePort } from './registry.js';

const silent = pino({ level: 'silent' });
export const RCON_PASSWORD_VARIABLE = 'RCON_PASSWORD';

/**
 * A router following the orchestrator at `orchestratorUrl`, configured from `toml` with the
 * test limits (no login rate limit, no per-IP cap) and short backoffs; resolves once its
 * registry stream is connected. The caller closes it.
 */
export async function startTestRouter(
  toml: string,
  o: { orchestratorUrl: string; routerToken: string; configPath: string; routerId?: string; port?: number },
): Promise<StackRouter> {
  const parsed = parseRouterToml(toml);
  const routerConfig: RouterConfig = {
    ...parsed,
    limits: { ...parsed.limits, loginRatelimitMs: 0, maxConnectionsPerIp: 100_000 },
    configPath: o.configPath,
    orchestratorUrl: o.orchestratorUrl,
    routerToken: o.routerToken,
    routerId: o.routerId ?? uniqueId('router'),
  };
  const metrics = new RouterMetrics();
  const parts = buildRouterParts(routerConfig, silent, metrics, {
    registryBackoff: { initialMs: 100, maxMs: 500 },
    sessionBackoff: { initialMs: 100, maxMs: 500 },
    sessionFlushMs: 100,
  });
  const router = new Router({
    config: routerConfig,
    resolver: parts.resolver,
    waker: parts.waker!,
    sessions: parts.sessions!,
    metrics,
    logger: silent,
  });
  const address = await router.listen(o.port ?? 0, '127.0.0.1');
  let closed = false;
  const r: StackRouter = {
    router,
    parts,
    metrics,
    port: address.port,
    async close() {
      if (closed) return;
      closed = true;
      await router.close();
      await parts.close();
    },
  };
  try {
    await until('router registry sync', () => parts.registry!.connected, 10_000);
  } catch (err) {
    await r.close();
    throw err;
  }
  return r;
}

export interface StackRouter {
  router: Router;
  parts: RouterParts;
  metrics: RouterMetrics;
  port: number;
  close(): Promise<void>;
}

export interface Stack {
  run: string;
  hostId: string;
  adminToken: string;
  routerToken: string;
  routerPort: number;
  orchestrator: Orchestrator;
  agent: TestAgent;
  api<T = unknown>(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: T }>;
  /** Creates an instance of the test-server group (variant `fast` or `slow`) and waits for `state`. */
  createInstance(
    name: string,
    opts?: { variant?: 'fast' | 'slow'; start?: boolean; state?: string },
  ): Promise<{ id: string; endpoint: { host: string; port: number } | null }>;
  waitForState(id: string, state: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** A router whose `[servers]` / `try` are the TOML given; the main one listens on routerPort. */
  startRouter(toml: string, opts?: { port?: number; routerId?: string }): Promise<StackRouter>;
  stopOrchestrator(): Promise<void>;
  restartOrchestrator(): Promise<void>;
  close(): Promise<void>;
}

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function startStack(prefix = 'rtr', opts: { routerScopes?: string[]; env?: Record<string, string> } = {}): Promise<Stack> {
  const run = uniqueId(prefix);
  const base = mkdtempSync(join(tmpdir(), `ec-${prefix}-`));
  const adminToken = `admin-${run}-${'a'.repeat(16)}`;
  const agentToken = `agent-${run}-${'b'.repeat(16)}`;
  const hostId = `${run}-host`.toLowerCase();
  const network = `${run}-net`;
  const image = await ensureImage(mcServerImage);
  const [orchestratorPort, routerPort, agentPort] = [await freePort(), await freePort(), await freePort()];
  const config: Readonly<OrchestratorConfig> = orchestratorConfig({
    ENDERCLOUD_LISTEN: `127.0.0.1:${orchestratorPort}`,
    ENDERCLOUD_DATA_DIR: join(base, 'orchestrator'),
    ENDERCLOUD_ADMIN_TOKEN: adminToken,
    ENDERCLOUD_AGENT_TOKEN: agentToken,
    ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
    ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
    ENDERCLOUD_COMMAND_RETRY_MAX: '1s',
    ENDERCLOUD_OFFLINE_SWEEP_INTERVAL: '200ms',
    // A loaded CI machine (the multihost dockerds, the panel's Chromium) can stall a beat or two:
    // a host flapping OFFLINE makes every instance Stale to the router ("No server is configured").
    ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '10',
    ENDERCLOUD_SUPERVISE_INTERVAL: '200ms',
    ENDERCLOUD_CONTAINER_USER: '0:0',
    ENDERCLOUD_ROUTER_PUBLIC_ADDRESS: `127.0.0.1:${routerPort}`,
    ENDERCLOUD_LOG_LEVEL: 'silent',
    ...opts.env,
  });
  const deps = { logger: silent };
  let orchestrator = await startOrchestrator(config, deps);
  const url = orchestrator.url;
  const portRange = randomPortRange(20);
  const agent = await createTestAgent({ agentId: hostId, orchestratorUrl: url, portRange, network, token: agentToken });
  await agent.app.listen({ host: '127.0.0.1', port: agentPort });
  const heartbeater = new Heartbeater({
    orchestratorUrl: url,
    agentId: hostId,
    token: agentToken,
    intervalMs: 300,
    fetch: globalThis.fetch,
    timers: realTimers,
    now: () => Date.now(),
    logger: silent,
    body: async () => ({
      controlUrl: `http://127.0.0.1:${agentPort}`,
      gameAddress: '127.0.0.1',
      version: 'test',
      heartbeatIntervalMs: 300,
      resources: { cpuCount: 2, memoryTotalBytes: 8 * 1024 ** 3, memoryAvailableBytes: 8 * 1024 ** 3, diskFreeBytes: null },
      portRange,
    }),
  });
  heartbeater.start();
  const routers: StackRouter[] = [];

  const api: Stack['api'] = async (method, path, body, token = adminToken) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as never };
  };
  const must = async <T>(method: string, path: string, body?: unknown, expected = [200, 201, 202]): Promise<T> => {
    const r = await api<T>(method, path, body);
    if (!expected.includes(r.status)) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };

  const stack: Stack = {
    run,
    hostId,
    adminToken,
    routerToken: '',
    routerPort,
    orchestrator,
    agent,
    api,
    async waitForState(id, state, timeoutMs = 30_000) {
      let last = '';
      try {
        return await until(
          `instance ${id} ${state}`,
          async () => {
            const r = await api<Record<string, unknown>>('GET', `/api/v1/instances/${id}`);
            last = `${String(r.body?.state)}: ${String(r.body?.stateReason)}`;
            return r.status === 200 && r.body?.state === state ? r.body : undefined;
          },
          timeoutMs,
          100,
        );
      } catch (err) {
        throw new Error(`${(err as Error).message} (last state ${last})`);
      }
    },
    async createInstance(name, opts = {}) {
      const created = await must<{ id: string }>('POST', '/api/v1/instances', {
        groupId: `${run}-mc`,
        variantId: opts.variant ?? 'fast',
        name,
        start: opts.start ?? true,
        user: { mode: 'image' },
      });
      const body = await stack.waitForState(created.id, opts.state ?? (opts.start === false ? 'stopped' : 'online'));
      return { id: created.id, endpoint: (body.endpoint as { host: string; port: number } | null) ?? null };
    },
    async startRouter(toml, opts = {}) {
      const r = await startTestRouter(toml, { orchestratorUrl: url, routerToken: stack.routerToken, configPath: 'stack.toml', ...opts });
      routers.push(r);
      return r;
    },
    async stopOrchestrator() {
      await orchestrator.stop();
    },
    async restartOrchestrator() {
      orchestrator = await startOrchestrator(config, deps);
      stack.orchestrator = orchestrator;
    },
    async close() {
      for (const r of routers) await r.close().catch(() => undefined);
      await heartbeater.stop().catch(() => undefined);
      await orchestrator.stop().catch(() => undefined);
      await agent.close().catch(() => undefined);
      await removeContainersByLabel({ 'orchestrator.host': hostId });
      await removeNetwork(network);
      rmSync(base, { recursive: true, force: true });
    },
  };

  try {
    await until(
      'agent host ONLINE',
      async () => (await api<{ status: string }>('GET', `/api/v1/hosts/${hostId}`)).body?.status === 'ONLINE',
      30_000,
      100,
    );
    // 256 MB: at 128 MB the test server was OOM-killed after ~14 logins in a row (the benchmark's wake loop).
    await must('PUT', `/api/v1/templates/${run}-mc/versions/1`, {
      image,
      resources: { memoryMb: 256 },
      containerPort: 25565,
      env: { ACCEPTS_TRANSFERS: 'true', MAX_PLAYERS: '50' },
      variables: [{ name: RCON_PASSWORD_VARIABLE, type: 'string', secret: true }],
      readiness: { kind: 'minecraft', startupTimeoutMs: 30_000, intervalMs: 200 },
      stop: { signal: 'SIGTERM', timeoutMs: 5000, rcon: { port: 25575, passwordVariable: RCON_PASSWORD_VARIABLE } },
      dataPaths: ['playerdata'],
    });
    await must('PUT', `/api/v1/groups/${run}-mc`, {
      kind: 'persistent',
      variants: [
        { id: 'fast', template: { name: `${run}-mc`, version: '1' }, env: {} },
        // Stands in for world generation: keeps an instance Starting long enough to ping it there.
        { id: 'slow', template: { name: `${run}-mc`, version: '1' }, env: { STARTUP_DELAY_SECONDS: '3' } },
      ],
    });
    stack.routerToken = (
      await must<{ secret: string }>('POST', '/api/v1/tokens', { name: `${run}-router`, scopes: opts.routerScopes ?? ['router'] })
    ).secret;
  } catch (err) {
    await stack.close();
    throw err;
  }
  return stack;
}
