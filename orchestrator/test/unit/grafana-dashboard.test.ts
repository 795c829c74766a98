// docs/grafana-dashboard.json stays in step with what /metrics serves: every
// endercloud_* name it queries is a family the orchestrator registers, every
// per-instance and per-host family is on it, and it is an importable dashboard
// (one data-source input, unique panel ids, a query per target). docs/metrics.md
// explains every family.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/server/clock.js';
import { OrchestratorMetrics } from '../../src/server/metrics.js';
import type { Store } from '../../src/store/store.js';

const DOCS = join(import.meta.dirname, '..', '..', '..', 'docs');
const dashboard = JSON.parse(readFileSync(join(DOCS, 'grafana-dashboard.json'), 'utf8'));
const metricsDoc = readFileSync(join(DOCS, 'metrics.md'), 'utf8');
// Constructing registers the families; nothing is read from the store until a scrape.
const served = new OrchestratorMetrics({} as Store, new ManualClock()).registry.getMetricsAsArray().map((m) => m.name);

const NEW_FAMILIES = [
  'endercloud_instance_players',
  'endercloud_instance_state',
  'endercloud_instance_memory_bytes',
  'endercloud_instance_memory_limit_bytes',
  'endercloud_instance_cpu_seconds_total',
  'endercloud_instance_network_receive_bytes_total',
  'endercloud_instance_network_transmit_bytes_total',
  'endercloud_host_memory_reserved_bytes',
  'endercloud_host_memory_total_bytes',
  'endercloud_host_instances',
];

interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: { expr: string; refId: string }[];
  datasource?: { uid: string };
}

describe('docs/grafana-dashboard.json', () => {
  const panels = dashboard.panels as Panel[];
  const exprs = panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
  const queried = new Set(exprs.flatMap((e) => e.match(/endercloud_[a-z_]+/g) ?? []));

  it('queries only families the orchestrator serves, and every per-instance and per-host one', () => {
    for (const name of queried) expect(served, name).toContain(name);
    for (const name of NEW_FAMILIES) {
      expect(served).toContain(name);
      expect(queried, name).toContain(name);
    }
  });

  it('is an importable dashboard: one Prometheus input, unique panel ids, a query on every target', () => {
    expect(dashboard.uid).toBe('endercloud-instances');
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels.filter((x) => x.type !== 'row')) {
      expect(p.datasource?.uid, p.title).toBe('${DS_PROMETHEUS}');
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) expect(t.expr.trim(), p.title).not.toBe('');
    }
    expect(dashboard.templating.list.map((v: { name: string }) => v.name)).toEqual(['group', 'host']);
  });

  it('has every family explained in docs/metrics.md', () => {
    for (const name of NEW_FAMILIES) expect(metricsDoc).toContain(`\`${name}\``);
    expect(metricsDoc).toContain('honor_labels: true');
  });
});
