// GET /metrics per instance and per host: the stats collector reads the REAL
// agent app (in-memory runtime) of an ONLINE host, and the scrape shows
// players (router sessions vs probe), state, memory vs limit, CPU and network
// counters, and the host's reserved vs total memory and instance count; a
// failing host loses its samples and a removed instance leaves every family.

import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const MIB = 1024 * 1024;

function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

describe('GET /metrics per instance and host', () => {
  it('exposes players, state, memory, CPU, network and host reservation, and drops what is gone', async () => {
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
    expect((await t.call('GET', `/api/v1/instances/${id}`)).body.state).toBe('starting');

    const container = [...a.runtime.containers.values()].find((c) => c.labels['orchestrator.instance'] === id)!;
    container.usage = {
      cpuSecondsTotal: 42.5,
      memoryBytes: 180 * MIB,
      memoryLimitBytes: 256 * MIB,
      networkRxBytes: 5000,
      networkTxBytes: 7000,
    };
    // Two router sessions; the probe's 5 is an old reading of a server that is not online yet, so 2 wins.
    const now = t.clock.now();
    for (const n of ['alice', 'bob']) {
      await t.o.store.playerSessions.open({
        id: `r1/${n}`,
        routerId: 'r1',
        playerName: n,
        playerUuid: null,
        instanceId: id,
        clientAddress: null,
        status: 'active',
        reason: null,
        connectedAt: now,
        disconnectedAt: null,
      });
    }
    await t.o.store.instances.update(id, { players: { online: 5, max: 20, at: now } }, { now });

    const stats = t.o.ctx.metrics.instanceStats!;
    await stats.tick();
    const res = await t.call('GET', '/metrics');
    expect(res.status).toBe(200);
    for (const [family, type] of [
      ['endercloud_instance_players', 'gauge'],
      ['endercloud_instance_state', 'gauge'],
      ['endercloud_instance_memory_bytes', 'gauge'],
      ['endercloud_instance_memory_limit_bytes', 'gauge'],
      ['endercloud_instance_cpu_seconds_total', 'counter'],
      ['endercloud_instance_network_receive_bytes_total', 'counter'],
      ['endercloud_instance_network_transmit_bytes_total', 'counter'],
      ['endercloud_host_memory_reserved_bytes', 'gauge'],
      ['endercloud_host_memory_total_bytes', 'gauge'],
      ['endercloud_host_instances', 'gauge'],
    ]) {
      expect(res.body).toContain(`# TYPE ${family} ${type}`);
    }
    const s = samples(res.body);
    const inst = `instance="${id}",group="lobby"`;
    const res3 = `${inst},host="m-a"`;
    expect(s.get(`endercloud_instance_players{${inst}}`)).toBe(2);
    expect(s.get(`endercloud_instance_state{${inst},state="starting"}`)).toBe(1);
    expect([...s.keys()].filter((k) => k.startsWith('endercloud_instance_state{'))).toHaveLength(1);
    expect(s.get(`endercloud_instance_memory_bytes{${res3}}`)).toBe(180 * MIB);
    expect(s.get(`endercloud_instance_memory_limit_bytes{${res3}}`)).toBe(256 * MIB);
    expect(s.get(`endercloud_instance_cpu_seconds_total{${res3}}`)).toBe(42.5);
    expect(s.get(`endercloud_instance_network_receive_bytes_total{${res3}}`)).toBe(5000);
    expect(s.get(`endercloud_instance_network_transmit_bytes_total{${res3}}`)).toBe(7000);
    const host = (await t.call('GET', '/api/v1/hosts/m-a')).body;
    expect(s.get('endercloud_host_memory_reserved_bytes{host="m-a"}')).toBe(256 * MIB);
    expect(s.get('endercloud_host_memory_total_bytes{host="m-a"}')).toBe(host.resources.memoryMb * MIB);
    expect(s.get('endercloud_host_instances{host="m-a"}')).toBe(1);
    // The existing families are still there.
    expect(s.get('endercloud_hosts{status="ONLINE"}')).toBe(1);

    // A host whose stats call fails loses its samples (no stale flat line); players and state stay.
    a.failNext('GET /instances', 1, 503, 'DOCKER_ERROR');
    await stats.tick();
    const failed = samples((await t.call('GET', '/metrics')).body);
    expect(failed.get(`endercloud_instance_memory_bytes{${res3}}`)).toBeUndefined();
    expect(failed.get(`endercloud_instance_players{${inst}}`)).toBe(2);
    await stats.tick();
    expect(samples((await t.call('GET', '/metrics')).body).get(`endercloud_instance_memory_bytes{${res3}}`)).toBe(180 * MIB);

    // A removed instance leaves every instance family at the next scrape, even before the next stats call.
    await t.o.store.instances.delete(id);
    const gone = samples((await t.call('GET', '/metrics')).body);
    expect([...gone.keys()].filter((k) => k.includes(id))).toEqual([]);
    expect(gone.get('endercloud_host_instances{host="m-a"}')).toBe(0);
  });
});
