// pingServer against a real minecraft-protocol server (the orchestrator's readiness probe uses it).
import { afterEach, describe, expect, it } from 'vitest';
import { pingServer } from '../../src/protocol/status-client.js';
import { minecraftStatusReady } from '../../src/lifecycle/readiness.js';
import { startMetricsServer, RouterMetrics } from '../../src/router/metrics.js';
import { closeAll, deadPort, startMcBackend, startRawBackend } from '../router/harness.js';

afterEach(closeAll);

describe('pingServer', () => {
  it('returns the parsed status and a latency from a real server, ready when players.max > 0', async () => {
    const b = await startMcBackend('probe me');
    const res = await pingServer('127.0.0.1', b.port, { timeoutMs: 3000, protocol: 765 });
    expect(res.status.players?.max).toBe(20);
    expect(res.status.version?.protocol).toBe(765);
    expect(res.latencyMs).toBeGreaterThanOrEqual(0);
    expect(minecraftStatusReady(res.status)).toBe(true);
    expect(minecraftStatusReady({ players: { max: 0, online: 0 } })).toBe(false);
  });

  it('fails within the timeout when the port accepts but never answers, and at once when closed', async () => {
    const silent = await startRawBackend();
    const started = Date.now();
    await expect(pingServer('127.0.0.1', silent.port, { timeoutMs: 300 })).rejects.toThrow(/timed out after 300 ms/);
    expect(Date.now() - started).toBeLessThan(2000);
    await expect(pingServer('127.0.0.1', await deadPort(), { timeoutMs: 1000 })).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('metrics listener', () => {
  it('serves prom-client text on GET /metrics and 404 elsewhere', async () => {
    const metrics = new RouterMetrics();
    metrics.statusAnswers.inc({ state: 'Paused' });
    const { server, address } = await startMetricsServer(metrics, '127.0.0.1', 0);
    try {
      const res = await fetch(`http://127.0.0.1:${address.port}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('endercloud_router_status_answers_total{state="Paused"} 1');
      const other = await fetch(`http://127.0.0.1:${address.port}/`);
      expect(other.status).toBe(404);
      expect(await other.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
