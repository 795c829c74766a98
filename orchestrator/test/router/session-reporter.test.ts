// Session reports over real HTTP: retried while the orchestrator fails, bounded
// buffer that drops the oldest events and counts them, reset kept until accepted.
import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { createLogger } from '../../src/shared/logger.js';
import { OrchestratorApi } from '../../src/router/orchestrator-api.js';
import { OrchestratorSessionReporter } from '../../src/router/session-reporter.js';
import { waitUntil } from './harness.js';
import { OrchestratorStub, TOKEN } from './orchestrator-stub.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('session reporter', () => {
  it('keeps the reset and the newest events while the orchestrator fails, drops the oldest with a counter, then delivers', async () => {
    const stub = new OrchestratorStub();
    await stub.start();
    cleanups.push(() => stub.stop());
    stub.sessionsStatus = 503;
    const metrics = new Registry();
    let n = 0;
    const reporter = new OrchestratorSessionReporter({
      api: new OrchestratorApi({ baseUrl: stub.url, token: TOKEN }),
      routerId: 'edge-1',
      logger: createLogger('session-test', 'silent'),
      maxBuffered: 3,
      flushIntervalMs: 10,
      backoff: { initialMs: 20, maxMs: 60 },
      newId: () => `s${++n}`,
      metricsRegistry: metrics,
    });
    cleanups.push(() => reporter.stop());
    reporter.start();
    for (const name of ['p1', 'p2', 'p3', 'p4', 'p5'])
      reporter.loginAccepted({ player: { name }, clientAddress: '127.0.0.1', backend: { name: 'lobby', host: '127.0.0.1', port: 1 } });
    expect(reporter.buffered).toBe(3);
    await new Promise((r) => setTimeout(r, 150)); // several failed attempts
    expect(reporter.resetAcknowledged).toBe(false);
    expect(await metrics.getSingleMetricAsString('endercloud_router_session_events_dropped_total')).toMatch(/ 2$/);

    stub.sessionsStatus = 204;
    await waitUntil(() => reporter.buffered === 0, 3000, 'delivery');
    expect(stub.sessionBatches[0]).toMatchObject({ routerId: 'edge-1', reset: true });
    expect(stub.sessionBatches.flatMap((b) => b.events.map((e) => e.player))).toEqual(['p3', 'p4', 'p5']);
    reporter.disconnected({ player: { name: 'late' }, clientAddress: '127.0.0.1' }, { durationMs: 1000, bytesIn: 0, bytesOut: 0 });
    await reporter.flush();
    expect(stub.sessionBatches.at(-1)).toMatchObject({ routerId: 'edge-1', events: [{ type: 'disconnect', player: 'late' }] });
    expect(stub.sessionBatches.at(-1)?.reset).toBeUndefined();
  });

  it('reports a player parked on the fallback as on the fallback, not on the world held for; a refused hold names the held world', async () => {
    const stub = new OrchestratorStub();
    await stub.start();
    cleanups.push(() => stub.stop());
    const reporter = new OrchestratorSessionReporter({
      api: new OrchestratorApi({ baseUrl: stub.url, token: TOKEN }),
      routerId: 'edge-1',
      logger: createLogger('session-test', 'silent'),
      flushIntervalMs: 10,
    });
    cleanups.push(() => reporter.stop());
    reporter.start();
    const held = { player: { name: 'parked' }, clientAddress: '127.0.0.1', instanceId: 'cold-1' };
    const parked = { ...held, backend: { name: 'lobby', host: '127.0.0.1', port: 1, instanceId: 'lobby-1' } };
    reporter.loginAccepted(parked);
    reporter.disconnected(parked, { durationMs: 1000, bytesIn: 0, bytesOut: 0 });
    reporter.loginAccepted({ ...held, player: { name: 'static' }, backend: { name: 'hub', host: '127.0.0.1', port: 2 } });
    reporter.loginDenied({ ...held, player: { name: 'refused' } }, 'wake_timeout');
    await reporter.flush();
    expect(stub.sessionBatches.flatMap((b) => b.events.map((e) => `${e.type} ${e.player} ${String(e.instanceId)}`))).toEqual([
      'login parked lobby-1',
      'disconnect parked lobby-1',
      'login static null',
      'denied refused cold-1',
    ]);
  });
});
