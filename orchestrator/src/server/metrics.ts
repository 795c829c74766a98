// Prometheus metrics on a registry owned by one orchestrator (no module
// singletons): hosts by status, instances by state and commands by status read
// from the store at scrape time, command outcomes counted by the worker, and
// each host's heartbeat lag.

import { Counter, Gauge, Registry } from 'prom-client';
import type { Store } from '../store/store.js';
import type { Clock } from './clock.js';

export class OrchestratorMetrics {
  readonly registry = new Registry();
  private readonly outcomes: Counter<'kind' | 'outcome'>;

  constructor(store: Store, clock: Clock) {
    const registers = [this.registry];
    new Gauge({
      name: 'endercloud_hosts', help: 'Hosts by status', labelNames: ['status'], registers,
      async collect() {
        this.reset();
        for (const [status, n] of Object.entries(await store.hosts.countByStatus())) this.set({ status }, n);
      },
    });
    new Gauge({
      name: 'endercloud_instances', help: 'Instances by lifecycle state', labelNames: ['state'], registers,
      async collect() {
        this.reset();
        for (const [state, n] of Object.entries(await store.instances.countByState())) this.set({ state }, n ?? 0);
      },
    });
    new Gauge({
      name: 'endercloud_commands', help: 'Durable commands by status', labelNames: ['status'], registers,
      async collect() {
        this.reset();
        for (const [status, n] of Object.entries(await store.commands.countByStatus())) this.set({ status }, n);
      },
    });
    new Gauge({
      name: 'endercloud_host_heartbeat_lag_seconds', help: 'Seconds since each host last sent a heartbeat', labelNames: ['host'], registers,
      async collect() {
        this.reset();
        const now = clock.now();
        for (const h of await store.hosts.list()) this.set({ host: h.id }, Math.max(0, now - h.lastHeartbeatAt) / 1000);
      },
    });
    this.outcomes = new Counter({ name: 'endercloud_command_outcomes_total', help: 'Command dispatch outcomes', labelNames: ['kind', 'outcome'], registers });
  }

  commandOutcome(kind: string, outcome: 'succeeded' | 'retried' | 'failed'): void {
    this.outcomes.inc({ kind, outcome });
  }
}
