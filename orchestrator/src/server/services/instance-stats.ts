// Per-instance resource samples for /metrics: a loop that asks every ONLINE
// host for its containers' stats (one call per host, ENDERCLOUD_STATS_INTERVAL
// apart, never overlapping) and keeps only the latest answer per host, plus
// the pure join of those samples with the store's instances, sessions and
// hosts that metrics.ts turns into Prometheus families at scrape time. Each
// instance's samples of the last 10 minutes are kept too, for the panel's
// console graphs (GET /instances/:id/stats).

import type { Host, Instance, InstanceState, PlayerSession } from '../../domain/index.js';
import type { Logger } from '../../shared/logger.js';
import type { Timers } from '../../shared/timers.js';
import { PeriodicTask } from '../../shared/periodic-task.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { HostDriver, InstanceStatsEntry } from '../drivers/host-driver.js';

/** Bound on one host's stats call: a slow host must not hold the loop for the agent timeout sized for image pulls. */
export const STATS_CALL_TIMEOUT_MS = 5_000;

/** A host's latest answer. */
export interface HostStatsSample {
  hostId: string;
  at: number;
  instances: readonly InstanceStatsEntry[];
}

export interface InstanceStatsSource {
  /** The latest sample of every host that answered its last call. */
  samples(): readonly HostStatsSample[];
}

/** How long each instance's samples are kept for the panel's console graphs (GET /instances/:id/stats). */
const STATS_HISTORY_MS = 10 * 60_000;

/** One point of an instance's graph: CPU as a share of one core since the previous sample (null for the first one, or after a container restart). */
interface InstanceStatsPoint {
  at: number;
  cpuPercent: number | null;
  memoryBytes: number;
  memoryLimitBytes: number;
  networkRxBytes: number;
  networkTxBytes: number;
}

/** What the panel draws: the loop's interval and the last 10 minutes, oldest first. */
interface InstanceStatsHistory {
  intervalMs: number;
  samples: InstanceStatsPoint[];
}

export interface InstanceStatsDeps {
  store: Store;
  driver: Pick<HostDriver, 'metrics'>;
  clock: Clock;
  logger: Logger;
  /** 0 disables the loop (tick() still works when called). */
  intervalMs: number;
  timers?: Timers;
}

export class InstanceStatsCollector implements InstanceStatsSource {
  private readonly byHost = new Map<string, HostStatsSample>();
  /** Per instance: the last STATS_HISTORY_MS of points, oldest first, and the CPU counter of the newest one. */
  private readonly rings = new Map<string, { points: InstanceStatsPoint[]; cpuSecondsTotal: number; containerId: string }>();
  private readonly listeners = new Set<(instanceId: string, point: InstanceStatsPoint) => void>();
  private readonly loop: PeriodicTask;

  constructor(private readonly deps: InstanceStatsDeps) {
    this.loop = new PeriodicTask({
      name: 'instance stats tick',
      intervalMs: deps.intervalMs,
      run: () => this.tick(),
      logger: deps.logger,
      ...(deps.timers ? { timers: deps.timers } : {}),
    });
  }

  /** Starts the loop; the first call comes one interval after the start. A zero interval does nothing. */
  start(): void {
    if (this.deps.intervalMs <= 0) return;
    this.loop.start(this.deps.intervalMs);
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  samples(): readonly HostStatsSample[] {
    return [...this.byHost.values()];
  }

  /** The last 10 minutes of one instance (empty when none was sampled: stopped, or the loop is off). */
  history(instanceId: string): InstanceStatsHistory {
    this.prune(this.deps.clock.now());
    return { intervalMs: this.deps.intervalMs, samples: [...(this.rings.get(instanceId)?.points ?? [])] };
  }

  /** Called with each new point of any instance (the route's follow stream); returns the unsubscribe. */
  onSample(listener: (instanceId: string, point: InstanceStatsPoint) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  private record(at: number, e: InstanceStatsEntry): void {
    const ring = this.rings.get(e.instanceId);
    const prev = ring?.points.at(-1);
    // A new container (replacement, restart) starts its CPU counter again: no rate across it.
    const sameRun =
      ring !== undefined &&
      prev !== undefined &&
      ring.containerId === e.containerId &&
      e.cpuSecondsTotal >= ring.cpuSecondsTotal &&
      at > prev.at;
    const cpuPercent = sameRun ? Math.round(((e.cpuSecondsTotal - ring.cpuSecondsTotal) / ((at - prev.at) / 1000)) * 1000) / 10 : null;
    const point: InstanceStatsPoint = {
      at,
      cpuPercent,
      memoryBytes: e.memoryBytes,
      memoryLimitBytes: e.memoryLimitBytes,
      networkRxBytes: e.networkRxBytes,
      networkTxBytes: e.networkTxBytes,
    };
    if (ring) {
      ring.points.push(point);
      ring.cpuSecondsTotal = e.cpuSecondsTotal;
      ring.containerId = e.containerId;
    } else this.rings.set(e.instanceId, { points: [point], cpuSecondsTotal: e.cpuSecondsTotal, containerId: e.containerId });
    for (const listener of [...this.listeners]) listener(e.instanceId, point);
  }

  /** Drops points older than STATS_HISTORY_MS, and instances left without any (stopped, deleted, moved away). */
  private prune(now: number): void {
    for (const [id, ring] of this.rings) {
      const first = ring.points.findIndex((p) => p.at >= now - STATS_HISTORY_MS);
      if (first === -1) this.rings.delete(id);
      else if (first > 0) ring.points.splice(0, first);
    }
  }

  /**
   * One pass: every ONLINE host is asked once, all at the same time. A host
   * that fails, or is no longer ONLINE, loses its sample: stale numbers of an
   * unreachable host would look like a healthy flat line.
   */
  async tick(): Promise<void> {
    const metrics = this.deps.driver.metrics;
    const hosts = metrics ? await this.deps.store.hosts.list({ statuses: ['ONLINE'] }) : [];
    const online = new Set(hosts.map((h) => h.id));
    for (const id of this.byHost.keys()) if (!online.has(id)) this.byHost.delete(id);
    await Promise.all(
      hosts.map(async (host) => {
        try {
          const instances = await metrics!.stats(host);
          const at = this.deps.clock.now();
          this.byHost.set(host.id, { hostId: host.id, at, instances });
          for (const e of instances) this.record(at, e);
        } catch (err) {
          this.byHost.delete(host.id);
          this.deps.logger.warn({ hostId: host.id, err }, 'reading instance stats from a host failed');
        }
      }),
    );
    this.prune(this.deps.clock.now());
  }
}

// ---------------------------------------------------------------- the scrape-time join (pure)

/** States in which a readiness probe's player count describes a running server. */
const PROBE_COUNTS_IN: ReadonlySet<InstanceState> = new Set(['online', 'degraded']);

export interface InstanceMetricsInput {
  instances: readonly Instance[];
  activeSessions: readonly PlayerSession[];
  samples: readonly HostStatsSample[];
  hosts: readonly Host[];
}

export interface InstanceMetricsView {
  instances: { instance: string; group: string; state: InstanceState; players: number }[];
  /** Resource samples of instances the store knows, on the host the store places them on. */
  stats: ({ instance: string; group: string; host: string } & Omit<
    InstanceStatsEntry,
    'instanceId' | 'containerId' | 'groupId' | 'state'
  >)[];
  hosts: { host: string; memoryReservedBytes: number; memoryTotalBytes: number; instances: number }[];
}

const MIB = 1024 * 1024;

/**
 * Joins the store and the latest samples. Players = the larger of the
 * router's open sessions and the probe's count (the probe only while the
 * server runs: a stopped world keeps its last probe). Only instances in the
 * store appear, so a deleted instance leaves every family at the next scrape.
 */
export function instanceMetricsView(input: InstanceMetricsInput): InstanceMetricsView {
  const sessions = new Map<string, number>();
  for (const s of input.activeSessions) if (s.instanceId) sessions.set(s.instanceId, (sessions.get(s.instanceId) ?? 0) + 1);
  const known = new Map(input.instances.map((i) => [i.id, i]));
  const perHost = new Map<string, number>();
  for (const i of input.instances) if (i.hostId) perHost.set(i.hostId, (perHost.get(i.hostId) ?? 0) + 1);
  const stats: InstanceMetricsView['stats'] = [];
  for (const sample of input.samples) {
    for (const e of sample.instances) {
      const instance = known.get(e.instanceId);
      if (!instance || instance.hostId !== sample.hostId) continue;
      const { cpuSecondsTotal, memoryBytes, memoryLimitBytes, networkRxBytes, networkTxBytes } = e;
      stats.push({
        instance: instance.id,
        group: instance.groupId,
        host: sample.hostId,
        cpuSecondsTotal,
        memoryBytes,
        memoryLimitBytes,
        networkRxBytes,
        networkTxBytes,
      });
    }
  }
  return {
    instances: input.instances.map((i) => ({
      instance: i.id,
      group: i.groupId,
      state: i.state,
      players: Math.max(sessions.get(i.id) ?? 0, PROBE_COUNTS_IN.has(i.state) ? (i.players?.online ?? 0) : 0),
    })),
    stats,
    hosts: input.hosts.map((h) => ({
      host: h.id,
      memoryReservedBytes: h.memoryReservedMb * MIB,
      memoryTotalBytes: h.resources.memoryMb * MIB,
      instances: perHost.get(h.id) ?? 0,
    })),
  };
}
