// The per-instance metrics join (pure, table-tested), the stats loop's timing
// with injected timers (first call one interval after start, never when the
// interval is 0, only ONLINE hosts, a failing host loses its sample) and
// ENDERCLOUD_STATS_INTERVAL parsing.

import { describe, expect, it } from 'vitest';
import type { Host, Instance, PlayerSession } from '../../src/domain/index.js';
import { ManualClock } from '../../src/server/clock.js';
import { orchestratorConfig } from '../../src/server/config.js';
import type { InstanceStatsEntry } from '../../src/server/drivers/host-driver.js';
import { InstanceStatsCollector, instanceMetricsView, type HostStatsSample } from '../../src/server/services/instance-stats.js';
import { createLogger } from '../../src/shared/logger.js';
import type { Timers } from '../../src/shared/timers.js';
import type { Store } from '../../src/store/store.js';

const MIB = 1024 * 1024;
const inst = (o: Partial<Instance> & Pick<Instance, 'id'>): Instance =>
  ({ groupId: 'g', hostId: 'h1', state: 'online', players: null, ...o }) as Instance;
const host = (id: string, memoryMb: number, memoryReservedMb: number): Host =>
  ({ id, resources: { memoryMb, cpus: 2 }, memoryReservedMb }) as Host;
const session = (instanceId: string | null): PlayerSession => ({ instanceId, status: 'active' }) as PlayerSession;
const entry = (instanceId: string, memoryBytes = 10): InstanceStatsEntry => ({
  instanceId,
  containerId: `c-${instanceId}`,
  groupId: 'label-group',
  state: 'running',
  cpuSecondsTotal: 1,
  memoryBytes,
  memoryLimitBytes: 100,
  networkRxBytes: 2,
  networkTxBytes: 3,
});

describe('instanceMetricsView', () => {
  it.each([
    { name: 'router sessions above the probe', state: 'online', probe: 1, sessions: 3, want: 3 },
    { name: 'the probe above router sessions', state: 'online', probe: 7, sessions: 2, want: 7 },
    { name: 'a degraded server still counts its probe', state: 'degraded', probe: 4, sessions: 0, want: 4 },
    { name: 'a stopped world keeps an old probe reading: not counted', state: 'stopped', probe: 9, sessions: 0, want: 0 },
    { name: 'a paused world: sessions only', state: 'paused', probe: 9, sessions: 1, want: 1 },
    { name: 'no probe, no sessions', state: 'online', probe: null, sessions: 0, want: 0 },
  ] as const)('players: $name', ({ state, probe, sessions, want }) => {
    const view = instanceMetricsView({
      instances: [inst({ id: 'i1', state, players: probe === null ? null : { online: probe, max: 20, at: 0 } })],
      activeSessions: [...Array.from({ length: sessions }, () => session('i1')), session('other'), session(null)],
      samples: [],
      hosts: [],
    });
    expect(view.instances).toEqual([{ instance: 'i1', group: 'g', state, players: want }]);
  });

  it('keeps samples of known instances on the host the store places them on, and counts instances per host', () => {
    const samples: HostStatsSample[] = [
      { hostId: 'h1', at: 0, instances: [entry('i1', 50), entry('unclaimed'), entry('moved')] },
      { hostId: 'h2', at: 0, instances: [entry('i2', 60)] },
    ];
    const view = instanceMetricsView({
      instances: [
        inst({ id: 'i1' }),
        inst({ id: 'i2', hostId: 'h2', groupId: 'bedwars' }),
        inst({ id: 'moved', hostId: 'h2' }),
        inst({ id: 'draft', hostId: null, state: 'draft' }),
      ],
      activeSessions: [],
      samples,
      hosts: [host('h1', 4096, 1024), host('h2', 2048, 0), host('h3', 1024, 0)],
    });
    expect(view.stats).toEqual([
      {
        instance: 'i1',
        group: 'g',
        host: 'h1',
        cpuSecondsTotal: 1,
        memoryBytes: 50,
        memoryLimitBytes: 100,
        networkRxBytes: 2,
        networkTxBytes: 3,
      },
      {
        instance: 'i2',
        group: 'bedwars',
        host: 'h2',
        cpuSecondsTotal: 1,
        memoryBytes: 60,
        memoryLimitBytes: 100,
        networkRxBytes: 2,
        networkTxBytes: 3,
      },
    ]);
    expect(view.hosts).toEqual([
      { host: 'h1', memoryReservedBytes: 1024 * MIB, memoryTotalBytes: 4096 * MIB, instances: 1 },
      { host: 'h2', memoryReservedBytes: 0, memoryTotalBytes: 2048 * MIB, instances: 2 },
      { host: 'h3', memoryReservedBytes: 0, memoryTotalBytes: 1024 * MIB, instances: 0 },
    ]);
  });
});

/** Timers that run only when the test says so. */
function manualTimers() {
  const pending: { fn: () => void; ms: number; id: number }[] = [];
  let next = 0;
  const timers: Timers = {
    setTimeout: (fn, ms) => {
      pending.push({ fn, ms, id: ++next });
      return next;
    },
    clearTimeout: (h) => {
      const i = pending.findIndex((p) => p.id === h);
      if (i >= 0) pending.splice(i, 1);
    },
  };
  return { timers, pending, fire: () => pending.shift()!.fn() };
}

function collectorWith(intervalMs: number, hosts: Host[], answer: (hostId: string) => Promise<InstanceStatsEntry[]>) {
  const t = manualTimers();
  const asked: string[] = [];
  const store = {
    hosts: {
      list: async (f?: { statuses?: string[] }) => (f?.statuses?.includes('ONLINE') ? hosts.filter((h) => h.status === 'ONLINE') : hosts),
    },
  } as unknown as Store;
  const collector = new InstanceStatsCollector({
    store,
    clock: new ManualClock(1000),
    logger: createLogger('test', 'silent'),
    intervalMs,
    timers: t.timers,
    driver: { metrics: { stats: async (h) => (asked.push(h.id), answer(h.id)) } },
  });
  return { collector, asked, ...t };
}

describe('InstanceStatsCollector', () => {
  const online = (id: string) => ({ ...host(id, 1024, 0), status: 'ONLINE' }) as Host;

  it('asks every ONLINE host once per interval, the first time one interval after start', async () => {
    const hosts = [online('h1'), { ...online('h2'), status: 'OFFLINE' } as Host];
    const c = collectorWith(15_000, hosts, async (id) => [entry(`i-${id}`)]);
    c.collector.start();
    c.collector.start(); // twice is once
    expect(c.pending.map((p) => p.ms)).toEqual([15_000]);
    expect(c.asked).toEqual([]);
    c.fire();
    await c.collector.stop().then(() => undefined); // waits for the tick in flight
    expect(c.asked).toEqual(['h1']);
    expect(c.collector.samples()).toEqual([{ hostId: 'h1', at: 1000, instances: [entry('i-h1')] }]);
    expect(c.pending).toEqual([]); // stopped: nothing rescheduled
  });

  it('does nothing on its own when the interval is 0', () => {
    const c = collectorWith(0, [online('h1')], async () => []);
    c.collector.start();
    expect(c.pending).toEqual([]);
  });

  it('drops the sample of a host that fails or is no longer ONLINE', async () => {
    const hosts = [online('h1'), online('h2')];
    let fail = false;
    const c = collectorWith(0, hosts, async (id) => {
      if (fail && id === 'h1') throw new Error('agent down');
      return [entry(`i-${id}`)];
    });
    await c.collector.tick();
    expect(
      c.collector
        .samples()
        .map((s) => s.hostId)
        .sort(),
    ).toEqual(['h1', 'h2']);
    fail = true;
    await c.collector.tick();
    expect(c.collector.samples().map((s) => s.hostId)).toEqual(['h2']);
    hosts[1] = { ...hosts[1]!, status: 'MAINTENANCE' } as Host;
    fail = false;
    await c.collector.tick();
    expect(c.collector.samples().map((s) => s.hostId)).toEqual(['h1']);
  });
});

describe('ENDERCLOUD_STATS_INTERVAL', () => {
  it.each([
    [undefined, 15_000],
    ['0', 0],
    ['30s', 30_000],
    ['500ms', 500],
  ])('%s → %d ms', (value, want) => {
    expect(orchestratorConfig(value === undefined ? {} : { ENDERCLOUD_STATS_INTERVAL: value }).statsIntervalMs).toBe(want);
  });

  it('refuses a value that is neither 0 nor a duration, naming the variable', () => {
    expect(() => orchestratorConfig({ ENDERCLOUD_STATS_INTERVAL: '15' })).toThrow(/ENDERCLOUD_STATS_INTERVAL/);
  });
});
