// GET /instances/stats on the REAL agent app over the in-memory runtime (a
// test double), read through the orchestrator's AgentHostDriver: every running
// or paused container this agent manages, in one call, with the schema of the
// contract; the engine's answer in neutral units (cgroup v1 and v2); and the
// bounded fan-out the route uses.

import { Value } from '@sinclair/typebox/value';
import { afterEach, describe, expect, it } from 'vitest';
import { statsFromEngine } from '../../src/agent/docker-stats.js';
import { collectInstanceStats, mapBounded } from '../../src/agent/stats-routes.js';
import { InstanceStatsAnswer } from '../../src/contracts/agent-api.js';
import { AgentHostDriver } from '../../src/server/drivers/agent-driver.js';
import { AGENT_TOKEN, startFakeAgent } from '../server/support.js';
import { MemoryRuntime } from '../support/memory-runtime.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const MIB = 1024 * 1024;

describe('GET /instances/stats', () => {
  it('answers a sample of every running or paused managed container, not stopped or foreign ones', async () => {
    const agent = await startFakeAgent({ agentId: 'host-a', token: AGENT_TOKEN });
    cleanups.push(() => agent.close());
    agent.inventory.push(
      { instanceId: 'i-run', groupId: 'lobby', variantId: 'v', state: 'running', hostPort: 31000 },
      { instanceId: 'i-paused', groupId: 'lobby', variantId: 'v', state: 'paused', hostPort: 31001 },
      { instanceId: 'i-stopped', groupId: 'lobby', variantId: 'v', state: 'exited', hostPort: 31002 },
    );
    // Another agent's container on the same engine is not ours to report.
    agent.runtime.seed({
      name: 'endercloud-v-other',
      labels: { 'orchestrator.managed': 'true', 'orchestrator.host': 'host-b', 'orchestrator.instance': 'i-other' },
    });

    // The first call mirrors the inventory into the runtime; then the test sets the usage it expects back.
    const res0 = await fetch(`${agent.url}/api/v1/instances/stats`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
    expect(res0.status).toBe(200);
    const byInstance = (id: string) => [...agent.runtime.containers.values()].find((c) => c.labels['orchestrator.instance'] === id)!;
    byInstance('i-run').usage = {
      cpuSecondsTotal: 12.5,
      memoryBytes: 300 * MIB,
      memoryLimitBytes: 512 * MIB,
      networkRxBytes: 1000,
      networkTxBytes: 2000,
    };
    byInstance('i-paused').usage = {
      cpuSecondsTotal: 3,
      memoryBytes: 200 * MIB,
      memoryLimitBytes: 512 * MIB,
      networkRxBytes: 10,
      networkTxBytes: 20,
    };

    const res = await fetch(`${agent.url}/api/v1/instances/stats`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
    const body = await res.json();
    expect(Value.Check(InstanceStatsAnswer, body)).toBe(true);
    expect(Number.isNaN(Date.parse(body.collectedAt))).toBe(false);
    const sorted = [...body.instances].sort((a, b) => a.instanceId.localeCompare(b.instanceId));
    expect(sorted).toEqual([
      {
        instanceId: 'i-paused',
        containerId: 'c-i-paused',
        groupId: 'lobby',
        state: 'paused',
        cpuSecondsTotal: 3,
        memoryBytes: 200 * MIB,
        memoryLimitBytes: 512 * MIB,
        networkRxBytes: 10,
        networkTxBytes: 20,
      },
      {
        instanceId: 'i-run',
        containerId: 'c-i-run',
        groupId: 'lobby',
        state: 'running',
        cpuSecondsTotal: 12.5,
        memoryBytes: 300 * MIB,
        memoryLimitBytes: 512 * MIB,
        networkRxBytes: 1000,
        networkTxBytes: 2000,
      },
    ]);

    // The driver's metrics capability reads the same route (bearer token included).
    const driver = new AgentHostDriver({ token: AGENT_TOKEN, timeoutMs: 5000, epoch: { epoch: () => 1 } });
    const viaDriver = await driver.metrics.stats({ id: 'host-a', controlUrl: agent.url }, { requestId: 'req-stats' });
    expect(viaDriver.map((e) => e.instanceId).sort()).toEqual(['i-paused', 'i-run']);
    expect(agent.calls.at(-1)).toMatchObject({ method: 'GET', path: '/instances/stats', headers: { 'x-request-id': 'req-stats' } });
  });

  it('is not mistaken for GET /instances/:id and fails like the engine when the engine is down', async () => {
    const agent = await startFakeAgent();
    cleanups.push(() => agent.close());
    const empty = await (await fetch(`${agent.url}/api/v1/instances/stats`)).json();
    expect(empty.instances).toEqual([]);
    agent.runtime.engineUp = false;
    const driver = new AgentHostDriver({ token: undefined, timeoutMs: 5000, epoch: { epoch: () => 1 } });
    await expect(driver.metrics.stats({ id: 'fake-agent', controlUrl: agent.url })).rejects.toMatchObject({
      code: 'DOCKER_ERROR',
      retryable: true,
    });
  });

  it('reports the limit given at create, and skips a container removed between list and stats', async () => {
    const runtime = new MemoryRuntime();
    await runtime.ensureImage('mc:1');
    const labels = (id: string) => ({
      'orchestrator.managed': 'true',
      'orchestrator.host': 'h',
      'orchestrator.instance': id,
      'orchestrator.group': 'g',
    });
    const a = await runtime.create({
      name: 'a',
      image: 'mc:1',
      env: [],
      labels: labels('i-a'),
      memoryBytes: 256 * MIB,
      dataHostPath: '/x',
      port: { containerPort: 25565, hostPort: 31000, hostIp: '127.0.0.1' },
    });
    const b = await runtime.create({
      name: 'b',
      image: 'mc:1',
      env: [],
      labels: labels('i-b'),
      dataHostPath: '/x',
      port: { containerPort: 25565, hostPort: 31001, hostIp: '127.0.0.1' },
    });
    await runtime.start(a.id);
    await runtime.start(b.id);
    const racing = {
      list: (l: Record<string, string>) => runtime.list(l),
      stats: async (id: string) => {
        if (id === b.id) await runtime.remove(b.id);
        return runtime.stats(id);
      },
    };
    const answer = await collectInstanceStats({ runtime: racing, agentId: 'h', now: () => new Date(0) });
    expect(answer).toEqual({
      collectedAt: '1970-01-01T00:00:00.000Z',
      instances: [expect.objectContaining({ instanceId: 'i-a', groupId: 'g', memoryLimitBytes: 256 * MIB })],
    });
  });
});

describe('mapBounded', () => {
  it('keeps at most `limit` calls in flight and the input order', async () => {
    let inFlight = 0;
    let peak = 0;
    const out = await mapBounded([5, 1, 4, 2, 3, 0, 6], 3, async (n) => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, n));
      inFlight -= 1;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30, 0, 60]);
    expect(peak).toBe(3);
    expect(await mapBounded([], 4, async () => 1)).toEqual([]);
  });
});

describe('statsFromEngine', () => {
  const base = { read: '2026-12-01T09:00:00.123Z', cpu_stats: { cpu_usage: { total_usage: 2_500_000_000 } } };
  it.each([
    {
      name: 'cgroup v2: memory without inactive_file, networks summed',
      raw: {
        ...base,
        memory_stats: { usage: 100 * MIB, limit: 512 * MIB, stats: { inactive_file: 30 * MIB } },
        networks: { eth0: { rx_bytes: 10, tx_bytes: 20 }, eth1: { rx_bytes: 1, tx_bytes: 2 } },
      },
      want: { cpuSecondsTotal: 2.5, memoryBytes: 70 * MIB, memoryLimitBytes: 512 * MIB, networkRxBytes: 11, networkTxBytes: 22 },
    },
    {
      name: 'cgroup v1: memory without total_inactive_file',
      raw: { ...base, memory_stats: { usage: 100 * MIB, limit: 1024 * MIB, stats: { total_inactive_file: 40 * MIB } } },
      want: { cpuSecondsTotal: 2.5, memoryBytes: 60 * MIB, memoryLimitBytes: 1024 * MIB, networkRxBytes: 0, networkTxBytes: 0 },
    },
    {
      name: 'a cache figure above usage is ignored',
      raw: { ...base, memory_stats: { usage: 10, limit: 100, stats: { inactive_file: 50 } } },
      want: { cpuSecondsTotal: 2.5, memoryBytes: 10, memoryLimitBytes: 100, networkRxBytes: 0, networkTxBytes: 0 },
    },
  ])('$name', ({ raw, want }) => {
    expect(statsFromEngine(raw)).toEqual(want);
  });

  it('answers nothing for a container the engine read nothing of (not running)', () => {
    expect(statsFromEngine({ read: '0001-01-01T00:00:00Z', memory_stats: {} })).toBeUndefined();
    expect(statsFromEngine({})).toBeUndefined();
  });
});
