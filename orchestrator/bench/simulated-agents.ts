// SIMULATION: a few HTTP listeners that play any number of agents (no Docker), for
// the control-plane benchmark and the ectl command tests. Each simulated agent
// lives under `controlUrl(agentId)` (`http://127.0.0.1:<port>/sim/<agentId>`) and answers the agent API calls the
// orchestrator makes: inventory, create (idempotent), cleanup, health.
// With `inventoryDigests`, heartbeat bodies carry the digest a real agent
// computes (src/agent/inventory-digest.ts) over the full inventory entries the
// simulated agent lists; change a simulated inventory through putContainer then.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InventoryEntry } from '../src/contracts/agent-api.js';
import { inventoryDigest } from '../src/agent/inventory-digest.js';

export interface SimulatedContainer {
  instanceId: string;
  containerId: string;
  containerName: string;
  hostPort: number | null;
  endpoint: string | null;
  state: string;
  groupId: string | null;
  variantId: string | null;
  sessionId: string | null;
  /** Inventory extras (defaults: image `simulated`, no labels, never exited). */
  image?: string;
  labels?: Record<string, string>;
}

export interface SimulatedAgents {
  controlUrl(agentId: string): string;
  /** Containers per simulated agent (what a real agent would have in Docker). */
  containers: Map<string, Map<string, SimulatedContainer>>;
  /** Heartbeat body a real agent would send (resources in the store's own shape). */
  heartbeatBody(agentId: string, memoryMb?: number): Record<string, unknown>;
  /** Adds or replaces one container of a simulated agent (keeps its inventory digest current). */
  putContainer(agentId: string, container: SimulatedContainer): void;
  /** Inventory calls (GET /instances) over all simulated agents: answered, in flight now, most in flight at once. */
  inventoryCalls: { total: number; inFlight: number; maxInFlight: number };
  close(): Promise<void>;
}

export interface SimulatedAgentsOptions {
  /** Heartbeats carry the inventory digest, as real agents send it. */
  inventoryDigests?: boolean;
  /** Each inventory answer waits this long (a slow agent; default none). */
  inventoryDelayMs?: number;
}

/** A simulated container as the agent API's full inventory entry. */
function inventoryEntry(c: SimulatedContainer): InventoryEntry {
  return {
    instanceId: c.instanceId,
    containerId: c.containerId,
    containerName: c.containerName,
    hostPort: c.hostPort,
    endpoint: c.endpoint,
    state: c.state as InventoryEntry['state'],
    groupId: c.groupId,
    variantId: c.variantId,
    sessionId: c.sessionId,
    image: c.image ?? 'simulated',
    user: null,
    labels: c.labels ?? {},
    exitCode: null,
    oomKilled: false,
    startedAt: null,
    finishedAt: null,
    restartCount: 0,
  };
}

/** Listeners the simulated agents share (see startSimulatedAgents). */
const LISTENERS = 8;

export async function startSimulatedAgents(options: SimulatedAgentsOptions = {}): Promise<SimulatedAgents> {
  const containers = new Map<string, Map<string, SimulatedContainer>>();
  /** Digest per agent, dropped when putContainer changes its inventory. */
  const digests = new Map<string, string>();
  /**
   * With digests (inventories change only through putContainer and PUT): the inventory answer's
   * body per agent, dropped with its digest, so the simulated agents' own work in this process
   * stays small next to the orchestrator's.
   */
  const inventoryBodies = new Map<string, string>();
  const digestOf = (agentId: string): string => {
    let d = digests.get(agentId);
    if (d === undefined) {
      d = inventoryDigest([...(containers.get(agentId)?.values() ?? [])].map(inventoryEntry));
      digests.set(agentId, d);
    }
    return d;
  };
  const inventoryCalls = { total: 0, inFlight: 0, maxInFlight: 0 };
  let nextPort = 30000;
  const send = (res: import('node:http').ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = /^\/sim\/([^/]+)\/api\/v1(\/.*)$/.exec((req.url ?? '').split('?')[0]!);
      if (!m) return send(res, 404, { error: { code: 'NOT_FOUND', message: 'no such simulated agent route' } });
      const agentId = decodeURIComponent(m[1]!);
      const route = m[2]!;
      const mine = containers.get(agentId) ?? new Map<string, SimulatedContainer>();
      containers.set(agentId, mine);
      if (req.method === 'GET' && route === '/health')
        return send(res, 200, { status: 'ok', agentId, version: 'simulated', engine: 'reachable' });
      if (req.method === 'GET' && route === '/instances') {
        let body = inventoryBodies.get(agentId);
        if (body === undefined) {
          body = JSON.stringify({ instances: [...mine.values()].map(inventoryEntry) });
          if (options.inventoryDigests) inventoryBodies.set(agentId, body);
        }
        const answer = body;
        inventoryCalls.maxInFlight = Math.max(inventoryCalls.maxInFlight, ++inventoryCalls.inFlight);
        const reply = (): void => {
          inventoryCalls.inFlight--;
          inventoryCalls.total++;
          res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
        };
        if (options.inventoryDelayMs) setTimeout(reply, options.inventoryDelayMs);
        else reply();
        return;
      }
      if (req.method === 'POST' && route === '/cleanup') return send(res, 200, { removed: [], skipped: [], notFound: [] });
      const inst = /^\/instances\/([^/]+)$/.exec(route);
      if (req.method === 'PUT' && inst) {
        const id = decodeURIComponent(inst[1]!);
        const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { groupId?: string; variantId?: string };
        let c = mine.get(id);
        if (!c) {
          const port = nextPort++;
          c = {
            instanceId: id,
            containerId: `sim-${id}`,
            containerName: `endercloud-sim-${id}`,
            hostPort: port,
            endpoint: `127.0.0.1:${port}`,
            state: 'running',
            groupId: body.groupId ?? null,
            variantId: body.variantId ?? null,
            sessionId: null,
          };
          mine.set(id, c);
          digests.delete(agentId);
          inventoryBodies.delete(agentId);
        }
        return send(res, 200, c);
      }
      send(res, 404, { error: { code: 'NOT_FOUND', message: `simulated agent has no route ${req.method} ${route}` } });
    });
  };
  // A few listeners play every agent, each agent always on the same one. Each real agent has its
  // own address, so its own accept queue and its own keep-alive pool in the orchestrator (32
  // sockets per agent address): one listener would cap the orchestrator at 32 calls in flight and
  // must take a connection from every simulated agent at once (Node's default backlog of 511
  // dropped SYNs at 1,000 hosts and the kernel retried them a second later).
  const servers: Server[] = [];
  for (let n = 0; n < LISTENERS; n++) {
    const server = createServer(handler);
    // As a real agent (Fastify's default): the orchestrator's connections stay open between its calls.
    server.keepAliveTimeout = 72_000;
    await new Promise<void>((r) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, r));
    servers.push(server);
  }
  const urls = servers.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const controlUrl = (agentId: string): string => {
    let hash = 0;
    for (const ch of agentId) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
    return `${urls[hash % urls.length]!}/sim/${encodeURIComponent(agentId)}`;
  };
  return {
    containers,
    inventoryCalls,
    controlUrl,
    heartbeatBody: (agentId, memoryMb = 16384) => ({
      controlUrl: controlUrl(agentId),
      gameAddress: '127.0.0.1',
      version: 'simulated',
      resources: {
        cpuCount: 4,
        memoryTotalBytes: memoryMb * 1024 * 1024,
        memoryAvailableBytes: memoryMb * 1024 * 1024,
        diskFreeBytes: null,
      },
      portRange: { first: 30000, last: 39999 },
      heartbeatIntervalMs: 10_000,
      ...(options.inventoryDigests ? { inventoryDigest: digestOf(agentId) } : {}),
    }),
    putContainer: (agentId, container) => {
      const mine = containers.get(agentId) ?? new Map<string, SimulatedContainer>();
      containers.set(agentId, mine);
      mine.set(container.instanceId, container);
      digests.delete(agentId);
      inventoryBodies.delete(agentId);
    },
    close: async () => {
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((r) => {
              server.closeAllConnections();
              server.close(() => r());
            }),
        ),
      );
    },
  };
}
