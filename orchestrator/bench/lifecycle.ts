// Benchmark: create → online of the Minecraft-protocol test server through the
// whole stack (API → durable command → agent → Docker → readiness probe) vs a
// raw Engine API create+start+first successful Server List Ping of the same
// image, alternated, N each in one run; prints the medians, the ratio (goal
// ≤ 1.15) and the median graceful stop time (RCON stop → stopped).
//   npx tsx bench/lifecycle.ts [N]
// Needs the Docker engine; builds the test server image if missing; cleans up.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { pingServer } from '../src/protocol/status-client.js';
import { minecraftStatusReady } from '../src/lifecycle/readiness.js';
import { orchestratorConfig } from '../src/server/config.js';
import { buildOrchestrator, type Orchestrator } from '../src/server/orchestrator.js';
import { createTestAgent, randomPortRange, removeNetwork, startFakeOrchestrator } from '../test/support/agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from '../test/support/docker.js';
import { ensureImage } from '../test/support/images.js';
import { mcServerImage } from '../test/support/mc-server.js';
import { freePort } from '../test/support/registry.js';

const N = Number(process.argv[2] ?? 5);
const RUN = uniqueId('bench-lc');
const AGENT_ID = `${RUN}-host`;
const NETWORK = `${RUN}-net`;
const TOKEN = `admin-${RUN}-0123456789abcdef`;
const AGENT_TOKEN = `agent-${RUN}-0123456789abcdef`;
const PROBE_MS = 100;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function api(
  o: Orchestrator,
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await o.app.inject({
    method: method as 'GET',
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${TOKEN}` },
    ...(body === undefined ? {} : { payload: body as object }),
  });
  return { status: res.statusCode, body: JSON.parse(res.body || '{}') as Record<string, unknown> };
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

async function main(): Promise<void> {
  const image = await ensureImage(mcServerImage);
  const layers = await startFakeOrchestrator();
  const portRange = randomPortRange(40);
  const agent = await createTestAgent({ agentId: AGENT_ID, orchestratorUrl: layers.url, portRange, network: NETWORK, token: AGENT_TOKEN });
  await agent.app.listen({ host: '127.0.0.1', port: 0 });
  const address = agent.app.server.address();
  const agentUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'ec-bench-lc-'));
  const o = await buildOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_DATA_DIR: dataDir,
      ENDERCLOUD_LISTEN: '127.0.0.1:0',
      ENDERCLOUD_ADMIN_TOKEN: TOKEN,
      ENDERCLOUD_AGENT_TOKEN: AGENT_TOKEN,
      ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
      ENDERCLOUD_SUPERVISE_INTERVAL: '500ms',
    }),
    { logger: pino({ level: 'silent' }), runOfflineDetector: false },
  );
  try {
    await o.app.inject({
      method: 'POST',
      url: `/api/v1/agents/${AGENT_ID}/heartbeat`,
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
      payload: {
        controlUrl: agentUrl,
        gameAddress: '127.0.0.1',
        version: 'bench',
        portRange,
        heartbeatIntervalMs: 1000,
        resources: { cpuCount: 2, memoryTotalBytes: 16 * 1024 ** 3, memoryAvailableBytes: 8 * 1024 ** 3, diskFreeBytes: 10 * 1024 ** 3 },
      },
    });
    await o.ctx.hosts.whenIdle();
    const put = async (url: string, body: unknown) => {
      const res = await api(o, 'PUT', url, body);
      if (res.status >= 300) throw new Error(`PUT ${url}: ${JSON.stringify(res.body)}`);
    };
    await put('/templates/bench/versions/1', {
      // The default unprivileged `endercloud` user: the product path (the runtime directory is created owned by it).
      image,
      resources: { memoryMb: 256 },
      variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true }],
      readiness: { kind: 'minecraft', startupTimeoutMs: 60_000, intervalMs: PROBE_MS, probeTimeoutMs: 1000 },
      stop: { signal: 'SIGTERM', timeoutMs: 10_000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
    });
    await put('/groups/bench', { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'bench', version: '1' } }] });

    const stack: number[] = [];
    const raw: number[] = [];
    const stops: number[] = [];
    for (let i = 0; i <= N; i++) {
      // Round 0 warms the image, the network and the code paths; it is not counted.
      let t = performance.now();
      const created = await api(o, 'POST', '/instances', { groupId: 'bench', variantId: 'v' });
      if (created.status !== 202) throw new Error(`create failed: ${JSON.stringify(created.body)}`);
      const id = String(created.body.id);
      await until('online', async () => (await api(o, 'GET', `/instances/${id}`)).body.state === 'online').catch(async (err: Error) => {
        throw new Error(
          `${err.message}: ${JSON.stringify((await api(o, 'GET', `/instances/${id}`)).body)} ${JSON.stringify((await api(o, 'GET', `/commands?instanceId=${id}`)).body)}`,
        );
      });
      if (i > 0) stack.push(performance.now() - t);
      t = performance.now();
      await api(o, 'POST', `/instances/${id}/stop`);
      await until('stopped', async () => (await api(o, 'GET', `/instances/${id}`)).body.state === 'stopped');
      if (i > 0) stops.push(performance.now() - t);
      await api(o, 'DELETE', `/instances/${id}`, { scopes: ['container', 'technical', 'player_data'], confirm: String(created.body.name) });
      await until('deleted', async () => (await api(o, 'GET', `/instances/${id}`)).status === 404);

      const hostPort = await freePort();
      t = performance.now();
      const c = await docker().createContainer({
        name: `${RUN}-raw-${i}`,
        Image: image,
        Labels: { 'orchestrator.host': AGENT_ID },
        ExposedPorts: { '25565/tcp': {} },
        HostConfig: { PortBindings: { '25565/tcp': [{ HostIp: '127.0.0.1', HostPort: String(hostPort) }] }, NetworkMode: NETWORK },
      });
      await c.start();
      await until('raw ping', async () => {
        try {
          return minecraftStatusReady((await pingServer('127.0.0.1', hostPort, { timeoutMs: 1000 })).status);
        } catch {
          await sleep(PROBE_MS - 10);
          return false;
        }
      });
      if (i > 0) raw.push(performance.now() - t);
      await c.remove({ force: true });
    }
    const s = median(stack);
    const r = median(raw);
    console.log(`create → online, Minecraft-protocol test server, N=${N} each (alternated, after one warm-up round)`);
    console.log(`  whole stack (API → command → agent → probe)   median ${s.toFixed(0)} ms`);
    console.log(`  raw Engine create+start+first ping            median ${r.toFixed(0)} ms`);
    console.log(`  ratio stack/raw                               ${(s / r).toFixed(2)} (goal <= 1.15)`);
    console.log(`  graceful stop (RCON stop → stopped)           median ${median(stops).toFixed(0)} ms`);
  } finally {
    await o.stop();
    await removeContainersByLabel({ 'orchestrator.host': AGENT_ID });
    await agent.close();
    await layers.close();
    await removeNetwork(NETWORK);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
