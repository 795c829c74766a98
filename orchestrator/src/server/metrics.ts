// Prometheus metrics on a registry owned by one orchestrator (no module
// singletons): hosts by status, instances by state and commands by status read
// from the store at scrape time, command outcomes counted by the worker, and
// each host's heartbeat lag. Per instance (docs/metrics.md): players, state and
// the latest resource sample of the stats collector; per host: reserved vs
// total memory and instance count. Every value is computed at scrape time, so
// a removed instance or host leaves the output at the next scrape. Who leads
// (endercloud_leader{node}, _epoch, _self) comes from the lease, not the store.

import { Counter, Gauge, Registry } from 'prom-client';
import type { Store } from '../store/store.js';
import type { Clock } from './clock.js';
import type { Leadership } from './leadership/leadership.js';
import { instanceMetricsView, type InstanceMetricsView, type InstanceStatsCollector } from './services/instance-stats.js';

type StatsField = 'cpuSecondsTotal' | 'memoryBytes' | 'memoryLimitBytes' | 'networkRxBytes' | 'networkTxBytes';
const STATS_GAUGES: [name: string, help: string, field: StatsField][] = [
  ['endercloud_instance_memory_bytes', 'Memory an instance uses, without reclaimable page cache', 'memoryBytes'],
  ['endercloud_instance_memory_limit_bytes', "An instance's memory limit (the host's memory when it has none)", 'memoryLimitBytes'],
];
const STATS_COUNTERS: [name: string, help: string, field: StatsField][] = [
  ['endercloud_instance_cpu_seconds_total', 'CPU seconds an instance used since its container started', 'cpuSecondsTotal'],
  ['endercloud_instance_network_receive_bytes_total', 'Bytes an instance received since its container started', 'networkRxBytes'],
  ['endercloud_instance_network_transmit_bytes_total', 'Bytes an instance sent since its container started', 'networkTxBytes'],
];
const STATS_LABELS = ['instance', 'group', 'host'] as const;

/** A gauge of counts by one label (hosts by status, ...), read from the store at each scrape. */
function countGauge(
  name: string,
  help: string,
  label: string,
  registers: Registry[],
  counts: () => Promise<Partial<Record<string, number>>>,
): void {
  new Gauge({
    name,
    help,
    labelNames: [label],
    registers,
    async collect() {
      this.reset();
      for (const [value, n] of Object.entries(await counts())) this.set({ [label]: value }, n ?? 0);
    },
  });
}
export class OrchestratorMetrics {
  readonly registry = new Registry();
  private readonly outcomes: Counter<'kind' | 'outcome'>;

  /** The stats collector (its loop is started and stopped by the composition root); absent = the resource families stay empty. */
  readonly instanceStats: InstanceStatsCollector | undefined;
  private pendingView: Promise<InstanceMetricsView> | undefined;

  constructor(store: Store, clock: Clock, instanceStats?: InstanceStatsCollector) {
    this.instanceStats = instanceStats;
    const registers = [this.registry];
    countGauge('endercloud_hosts', 'Hosts by status', 'status', registers, () => store.hosts.countByStatus());
    countGauge('endercloud_instances', 'Instances by lifecycle state', 'state', registers, () => store.instances.countByState());
    countGauge('endercloud_commands', 'Durable commands by status', 'status', registers, () => store.commands.countByStatus());
    new Gauge({
      name: 'endercloud_host_heartbeat_lag_seconds',
      help: 'Seconds since each host last sent a heartbeat',
      labelNames: ['host'],
      registers,
      async collect() {
        this.reset();
        const now = clock.now();
        for (const h of await store.hosts.list()) this.set({ host: h.id }, Math.max(0, now - h.lastHeartbeatAt) / 1000);
      },
    });
    this.instanceFamilies(store, registers);
    this.outcomes = new Counter({
      name: 'endercloud_command_outcomes_total',
      help: 'Command dispatch outcomes',
      labelNames: ['kind', 'outcome'],
      registers,
    });
  }

  /** One store read per scrape: every instance family's collect() shares the load in flight. */
  private view(store: Store): Promise<InstanceMetricsView> {
    if (!this.pendingView) {
      const samples = this.instanceStats?.samples() ?? [];
      this.pendingView = Promise.all([store.instances.list(), store.playerSessions.listActive(), store.hosts.list()])
        .then(([instances, activeSessions, hosts]) => instanceMetricsView({ instances, activeSessions, hosts, samples }))
        .finally(() => {
          this.pendingView = undefined;
        });
    }
    return this.pendingView;
  }

  private instanceFamilies(store: Store, registers: Registry[]): void {
    const view = () => this.view(store);
    new Gauge({
      name: 'endercloud_instance_players',
      help: 'Players on an instance: the larger of router sessions and the readiness probe',
      labelNames: ['instance', 'group'],
      registers,
      async collect() {
        this.reset();
        for (const i of (await view()).instances) this.set({ instance: i.instance, group: i.group }, i.players);
      },
    });
    new Gauge({
      name: 'endercloud_instance_state',
      help: "An instance's lifecycle state (1 for the current one)",
      labelNames: ['instance', 'group', 'state'],
      registers,
      async collect() {
        this.reset();
        for (const i of (await view()).instances) this.set({ instance: i.instance, group: i.group, state: i.state }, 1);
      },
    });
    // Gauges take the last sample; counters read from the engine are reset, then set to the sampled total (it restarts with the container; rate() handles that).
    const sampled = [...STATS_GAUGES.map((g) => [...g, true] as const), ...STATS_COUNTERS.map((c) => [...c, false] as const)];
    for (const [name, help, field, isGauge] of sampled) {
      const config = { name, help, labelNames: STATS_LABELS, registers };
      const samples = async () =>
        (await view()).stats.map((s) => [{ instance: s.instance, group: s.group, host: s.host }, s[field]] as const);
      if (isGauge)
        new Gauge({
          ...config,
          async collect() {
            this.reset();
            for (const [labels, v] of await samples()) this.set(labels, v);
          },
        });
      else
        new Counter({
          ...config,
          async collect() {
            this.reset();
            for (const [labels, v] of await samples()) this.inc(labels, v);
          },
        });
    }
    const hostGauge = (name: string, help: string, pick: (h: InstanceMetricsView['hosts'][number]) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['host'],
        registers,
        async collect() {
          this.reset();
          for (const h of (await view()).hosts) this.set({ host: h.host }, pick(h));
        },
      });
    hostGauge(
      'endercloud_host_memory_reserved_bytes',
      'Memory reserved on a host by the instances placed on it',
      (h) => h.memoryReservedBytes,
    );
    hostGauge('endercloud_host_memory_total_bytes', 'Memory a host offers for instances', (h) => h.memoryTotalBytes);
    hostGauge('endercloud_host_instances', 'Instances placed on a host (any state)', (h) => h.instances);
  }

  /** Who leads as this replica sees it (no store read): endercloud_leader{node}, _epoch, _self. */
  leadership(leadership: Pick<Leadership, 'leader'>): void {
    const registers = [this.registry];
    new Gauge({
      name: 'endercloud_leader',
      help: 'The node holding the reconciler lease, as this replica last saw it (1; absent while unknown)',
      labelNames: ['node'],
      registers,
      collect() {
        this.reset();
        const leader = leadership.leader();
        if (leader) this.set({ node: leader.node }, 1);
      },
    });
    new Gauge({
      name: 'endercloud_leader_epoch',
      help: "The reconciler lease's fencing epoch, as this replica last saw it (0 while unknown: epochs start at 1)",
      registers,
      collect() {
        this.set(leadership.leader()?.epoch ?? 0);
      },
    });
    new Gauge({
      name: 'endercloud_leader_self',
      help: 'Whether this replica holds the reconciler lease (1) or not (0)',
      registers,
      collect() {
        this.set(leadership.leader()?.self ? 1 : 0);
      },
    });
  }

  commandOutcome(kind: string, outcome: 'succeeded' | 'retried' | 'failed'): void {
    this.outcomes.inc({ kind, outcome });
  }
}
