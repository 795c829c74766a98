// GET /metrics in Prometheus text: every family the issue names — hosts by
// status, instances by state, command outcomes, heartbeat lag — with values
// that follow the store and the injected clock.

import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator, type FakeAgent, type TestOrchestrator } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** `name{labels} value` lines of the Prometheus text, keyed by `name{labels}`. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

async function beat(t: TestOrchestrator, id: string, a: FakeAgent): Promise<void> {
  expect((await t.call('POST', `/api/v1/agents/${id}/heartbeat`, { body: heartbeatBody(a.url), token: AGENT_TOKEN })).status).toBe(200);
  await t.o.ctx.hosts.whenIdle();
}

describe('GET /metrics', () => {
  it('exposes hosts by status, instances by state, command outcomes and heartbeat lag', async () => {
    const t = await testOrchestrator({ env: { ENDERCLOUD_COMMAND_MAX_ATTEMPTS: '2' } });
    cleanups.push(() => t.close());
    const a = await startFakeAgent();
    const b = await startFakeAgent();
    cleanups.push(
      () => a.close(),
      () => b.close(),
    );
    await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 256 } } });
    await t.call('PUT', '/api/v1/groups/g', {
      body: { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
    });
    await beat(t, 'm-a', a);
    await beat(t, 'm-b', b);
    // m-b stops beating: OFFLINE after 3 intervals (1 s each); m-a keeps beating 2.5 s ago.
    t.clock.advance(1500);
    await beat(t, 'm-a', a);
    t.clock.advance(2500);
    expect(await t.o.detector.sweep()).toEqual(['m-b']);

    // Two creates on m-a: one succeeds after a retry, one fails for good (2 attempts).
    a.failNext('PUT /instances', 1, 503, 'DOCKER_ERROR');
    const ok = (await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v' } })).body;
    for (let i = 0; i < 3; i++) {
      await t.o.worker.tick();
      await t.o.worker.whenIdle();
      t.clock.advance(100);
    }
    a.failNext('PUT /instances', 2, 409, 'INSTANCE_CONFLICT');
    await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v' } });
    await t.o.worker.tick();
    await t.o.worker.whenIdle();
    expect((await t.call('GET', `/api/v1/instances/${ok.id}`)).body.state).toBe('starting');

    const res = await t.call('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toContain('text/plain');
    for (const family of [
      'endercloud_hosts',
      'endercloud_instances',
      'endercloud_commands',
      'endercloud_command_outcomes_total',
      'endercloud_host_heartbeat_lag_seconds',
    ]) {
      expect(res.body).toContain(`# TYPE ${family} `);
    }
    const s = samples(res.body);
    expect(s.get('endercloud_hosts{status="ONLINE"}')).toBe(1);
    expect(s.get('endercloud_hosts{status="OFFLINE"}')).toBe(1);
    expect(s.get('endercloud_hosts{status="RECOVERING"}')).toBe(0);
    expect(s.get('endercloud_hosts{status="MAINTENANCE"}')).toBe(0);
    expect(s.get('endercloud_instances{state="starting"}')).toBe(1);
    expect(s.get('endercloud_instances{state="error"}')).toBe(1);
    expect(s.get('endercloud_command_outcomes_total{kind="create",outcome="retried"}')).toBe(1);
    expect(s.get('endercloud_command_outcomes_total{kind="create",outcome="succeeded"}')).toBe(1);
    expect(s.get('endercloud_command_outcomes_total{kind="create",outcome="failed"}')).toBe(1);
    expect(s.get('endercloud_commands{status="succeeded"}')).toBe(1);
    expect(s.get('endercloud_commands{status="failed"}')).toBe(1);
    // Lag follows the injected clock: m-a beat 2.5 s + 300 ms of worker ticks ago, m-b 4 s + 300 ms ago.
    expect(s.get('endercloud_host_heartbeat_lag_seconds{host="m-a"}')).toBeCloseTo(2.8, 3);
    expect(s.get('endercloud_host_heartbeat_lag_seconds{host="m-b"}')).toBeCloseTo(4.3, 3);
  });
});
