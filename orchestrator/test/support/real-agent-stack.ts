// One host on the real Docker engine, for the server and egg tests: a Docker
// network labelled with the agent id, the layer stand-in (agent-harness.ts), a
// real in-process agent on 127.0.0.1, and an in-process orchestrator (SQLite
// in a temp dir) that has taken one heartbeat from it. close() removes what it
// made (containers by the host label, the network, the temp dirs), also when
// the start failed half-way or a test failed.

import { rm } from 'node:fs/promises';
import { expect } from 'vitest';
import { orchestratorConfig } from '../../src/server/config.js';
import { buildOrchestrator, type Orchestrator, type OrchestratorDeps } from '../../src/server/orchestrator.js';
import type { PortRange } from '../../src/shared/config.js';
import { heartbeatBody, newDataDir, silentLogger, type Loose } from '../server/support.js';
import {
  createTestAgent,
  randomPortRange,
  removeNetwork,
  startFakeOrchestrator,
  type FakeOrchestrator,
  type TestAgent,
} from './agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from './docker.js';

export interface RealAgentStackOptions {
  /** Also the label value of its containers and network; default a unique one. */
  agentId?: string;
  /** The agent's game ports; default 10 of randomPortRange. */
  portRange?: PortRange;
  /** Orchestrator settings over the stack's own (data dir, listen, tokens, 50ms poll, 150ms supervise). */
  env?: Record<string, string>;
  /** Over { logger: silent, runOfflineDetector: false }. */
  deps?: OrchestratorDeps;
  /** Fields of the one heartbeat over heartbeatBody's (resources default: 2 CPUs, 8 GiB, 4 GiB available). */
  heartbeat?: Record<string, unknown>;
  /** The control URL the orchestrator is given for the agent's (e.g. a proxy in front of it); default the agent's. */
  controlUrl?: (agentUrl: string) => Promise<string>;
}

export interface StackCall {
  status: number;
  /** Parsed JSON, or the text when the answer is not JSON. */
  body: Loose;
  raw: Buffer;
}

export interface RealAgentStack {
  agentId: string;
  adminToken: string;
  agentToken: string;
  portRange: PortRange;
  agent: TestAgent;
  /** The orchestrator running now (restart() replaces it). */
  o: Orchestrator;
  dataDir: string;
  /** inject() into /api/v1 of the current orchestrator, with the admin token unless `token` is given. */
  call(method: string, url: string, body?: unknown, opts?: { token?: string; headers?: Record<string, string> }): Promise<StackCall>;
  /** Stops the orchestrator and starts a new one on the same data dir, with `env` over the stack's settings. */
  restart(env?: Record<string, string>): Promise<Orchestrator>;
  close(): Promise<void>;
}

export async function startRealAgentStack(opts: RealAgentStackOptions = {}): Promise<RealAgentStack> {
  const agentId = opts.agentId ?? `${uniqueId('stack')}-host`;
  const network = `${agentId}-net`;
  const agentToken = `agent-${agentId}-0123456789abcdef`;
  const adminToken = `admin-${agentId}-0123456789abcdef`;
  const portRange = opts.portRange ?? randomPortRange(10);
  let layers: FakeOrchestrator | undefined;
  let agent: TestAgent | undefined;
  let dataDir: string | undefined;
  let o: Orchestrator | undefined;

  const build = async (env: Record<string, string> = {}) =>
    buildOrchestrator(
      orchestratorConfig({
        ENDERCLOUD_DATA_DIR: dataDir!,
        ENDERCLOUD_LISTEN: '127.0.0.1:0',
        ENDERCLOUD_ADMIN_TOKEN: adminToken,
        ENDERCLOUD_AGENT_TOKEN: agentToken,
        ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
        ENDERCLOUD_SUPERVISE_INTERVAL: '150ms',
        ...opts.env,
        ...env,
      }),
      { logger: silentLogger, runOfflineDetector: false, ...opts.deps },
    );

  // Every step runs even when an earlier one failed; the first failure is thrown at the end.
  async function close(): Promise<void> {
    let failure: unknown;
    const step = async (fn: () => Promise<unknown>) => fn().catch((err: unknown) => void (failure ??= err));
    await o?.stop().catch(() => undefined);
    await step(() => removeContainersByLabel({ 'orchestrator.host': agentId }));
    if (agent) await step(() => agent!.close());
    if (layers) await step(() => layers!.close());
    await step(() => removeNetwork(network));
    if (dataDir) await step(() => rm(dataDir!, { recursive: true, force: true }));
    if (failure !== undefined) throw failure;
  }

  try {
    await docker().createNetwork({ Name: network, Labels: { 'orchestrator.host': agentId } });
    layers = await startFakeOrchestrator();
    agent = await createTestAgent({ agentId, orchestratorUrl: layers.url, portRange, network, token: agentToken });
    const agentUrl = await agent.app.listen({ host: '127.0.0.1', port: 0 });
    dataDir = await newDataDir();
    o = await build();
    const hb = await o.app.inject({
      method: 'POST',
      url: `/api/v1/agents/${agentId}/heartbeat`,
      headers: { authorization: `Bearer ${agentToken}` },
      payload: heartbeatBody(opts.controlUrl ? await opts.controlUrl(agentUrl) : agentUrl, {
        portRange,
        resources: {
          cpuCount: 2,
          memoryTotalBytes: 8192 * 1024 ** 2,
          memoryAvailableBytes: 4096 * 1024 ** 2,
          diskFreeBytes: 10 * 1024 ** 3,
        },
        ...opts.heartbeat,
      }),
    });
    expect(hb.statusCode, hb.body).toBe(200);
    await o.ctx.hosts.whenIdle();
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }

  const stack: RealAgentStack = {
    agentId,
    adminToken,
    agentToken,
    portRange,
    agent,
    o,
    dataDir,
    async call(method, url, body, c = {}) {
      const res = await stack.o.app.inject({
        method: method as 'GET',
        url: `/api/v1${url}`,
        headers: { authorization: `Bearer ${c.token ?? adminToken}`, ...c.headers },
        ...(body === undefined ? {} : { payload: body as object }),
      });
      let parsed: unknown = res.body;
      try {
        parsed = JSON.parse(res.body);
      } catch {
        /* binary or text */
      }
      return { status: res.statusCode, body: parsed, raw: res.rawPayload };
    },
    async restart(env = {}) {
      await stack.o.stop();
      o = undefined;
      o = stack.o = await build(env);
      return stack.o;
    },
    close,
  };
  return stack;
}

/** Polls `fn` every `intervalMs` until it returns a value (not undefined or false); throws naming `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
