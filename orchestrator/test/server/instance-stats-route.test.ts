// GET /instances/:id/stats: the stats loop keeps each instance's last 10
// minutes (read from the REAL agent app with its in-memory runtime); CPU is a
// rate between two samples of one container, and a new container starts again.

import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const MIB = 1024 * 1024;

describe('GET /instances/:id/stats', () => {
  it('answers the last 10 minutes of samples with a CPU rate, oldest first', async () => {
    const t = await testOrchestrator({ env: { ENDERCLOUD_STATS_INTERVAL: '0' } });
    cleanups.push(() => t.close());
    const a = await startFakeAgent();
    cleanups.push(() => a.close());
    await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 256 } } });
    await t.call('PUT', '/api/v1/groups/lobby', {
      body: { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
    });
    expect((await t.call('POST', '/api/v1/agents/m-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN })).status).toBe(200);
    await t.o.ctx.hosts.whenIdle();
    const id = (await t.call('POST', '/api/v1/instances', { body: { groupId: 'lobby', variantId: 'v' } })).body.id as string;
    await t.o.worker.tick();
    await t.o.worker.whenIdle();

    // Nothing sampled yet: an empty list, not an error.
    expect((await t.call('GET', `/api/v1/instances/${id}/stats`)).body).toEqual({ intervalMs: 0, samples: [] });
    expect((await t.call('GET', '/api/v1/instances/nope/stats')).body.error.code).toBe('INSTANCE_NOT_FOUND');

    const container = [...a.runtime.containers.values()].find((c) => c.labels['orchestrator.instance'] === id)!;
    const stats = t.o.ctx.metrics.instanceStats!;
    const beat = () => t.call('POST', '/api/v1/agents/m-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN });
    container.usage = {
      cpuSecondsTotal: 10,
      memoryBytes: 100 * MIB,
      memoryLimitBytes: 256 * MIB,
      networkRxBytes: 1000,
      networkTxBytes: 2000,
    };
    await stats.tick();
    const first = t.clock.now();
    t.clock.advance(15_000);
    await beat();
    container.usage = {
      cpuSecondsTotal: 17.5,
      memoryBytes: 120 * MIB,
      memoryLimitBytes: 256 * MIB,
      networkRxBytes: 4000,
      networkTxBytes: 2500,
    };
    await stats.tick();
    const res = await t.call('GET', `/api/v1/instances/${id}/stats`);
    expect(res.status).toBe(200);
    expect(res.body.samples).toEqual([
      { at: first, cpuPercent: null, memoryBytes: 100 * MIB, memoryLimitBytes: 256 * MIB, networkRxBytes: 1000, networkTxBytes: 2000 },
      // 7.5 CPU seconds over 15 s: half a core.
      {
        at: first + 15_000,
        cpuPercent: 50,
        memoryBytes: 120 * MIB,
        memoryLimitBytes: 256 * MIB,
        networkRxBytes: 4000,
        networkTxBytes: 2500,
      },
    ]);

    // A counter that goes back (the container restarted) has no rate.
    t.clock.advance(15_000);
    await beat();
    container.usage = { cpuSecondsTotal: 1, memoryBytes: 90 * MIB, memoryLimitBytes: 256 * MIB, networkRxBytes: 10, networkTxBytes: 10 };
    await stats.tick();
    expect(
      ((await t.call('GET', `/api/v1/instances/${id}/stats`)).body.samples as { cpuPercent: number | null }[]).map((s) => s.cpuPercent),
    ).toEqual([null, 50, null]);

    // Ten minutes after the second sample, the first (10 min 15 s old) is gone.
    t.clock.advance(10 * 60_000 - 15_000);
    await beat();
    await stats.tick();
    const kept = (await t.call('GET', `/api/v1/instances/${id}/stats`)).body.samples as { at: number }[];
    expect(kept.map((s) => s.at - first)).toEqual([15_000, 30_000, 10 * 60_000 + 15_000]);

    // follow=true: the history at once, then each new sample as the loop takes it; the orchestrator's stop ends it.
    await t.o.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (t.o.app.server.address() as { port: number }).port;
    const res2 = await fetch(`http://127.0.0.1:${port}/api/v1/instances/${id}/stats?follow=true`, {
      headers: { authorization: `Bearer ${t.adminToken}` },
    });
    expect(res2.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = res2.body!.getReader();
    let text = '';
    const readUntil = async (re: RegExp) => {
      while (!re.test(text)) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`stream ended before ${String(re)}: ${text}`);
        text += new TextDecoder().decode(value);
      }
    };
    await readUntil(/event: stats\ndata: .*"samples":\[.*\]\}\n\n/);
    t.clock.advance(15_000);
    await beat();
    container.usage = { cpuSecondsTotal: 4, memoryBytes: 95 * MIB, memoryLimitBytes: 256 * MIB, networkRxBytes: 20, networkTxBytes: 20 };
    await stats.tick();
    await readUntil(/event: sample\ndata: \{[^\n]*"cpuPercent":20[,}]/);

    // A read-only token may read them; no token may not.
    const viewer = (await t.call('POST', '/api/v1/tokens', { body: { name: 'viewer', scopes: ['read'] } })).body.secret as string;
    expect((await t.call('GET', `/api/v1/instances/${id}/stats`, { token: viewer })).status).toBe(200);
    expect((await t.call('GET', `/api/v1/instances/${id}/stats`, { token: null })).status).toBe(401);
    await t.close();
    cleanups.shift();
    await expect(
      reader.read().then(async function drain(r): Promise<boolean> {
        return r.done ? true : drain(await reader.read());
      }),
    ).resolves.toBe(true);
  });
});
