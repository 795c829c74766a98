// Live CPU, memory and network graphs of the last 10 minutes, drawn as small
// SVG charts. The samples come from GET /instances/:id/stats?follow=true (a
// server-sent event stream: the history, then each new sample): no polling.

import { useEffect, useState } from 'react';
import { bytes, enc } from '../../api';
import type { StatsAnswer, StatsSample } from '../../types';

const WINDOW_MS = 10 * 60_000;
const W = 300;
const H = 80;

/** The samples of the last 10 minutes, live. */
function useStats(id: string): { samples: StatsSample[]; intervalMs: number; connected: boolean } {
  const [state, setState] = useState<{ samples: StatsSample[]; intervalMs: number; connected: boolean }>({
    samples: [],
    intervalMs: 0,
    connected: false,
  });
  useEffect(() => {
    setState({ samples: [], intervalMs: 0, connected: false });
    const source = new EventSource(`/api/v1/instances/${enc(id)}/stats?follow=true`);
    source.addEventListener('stats', (e) => {
      const answer = JSON.parse((e as MessageEvent<string>).data) as StatsAnswer;
      setState({ samples: answer.samples, intervalMs: answer.intervalMs, connected: true });
    });
    source.addEventListener('sample', (e) => {
      const sample = JSON.parse((e as MessageEvent<string>).data) as StatsSample;
      setState((s) => ({ ...s, samples: [...s.samples.filter((x) => x.at >= sample.at - WINDOW_MS), sample] }));
    });
    source.onerror = () => setState((s) => ({ ...s, connected: false }));
    return () => source.close();
  }, [id]);
  return state;
}

interface Series {
  label: string;
  className: string;
  points: { at: number; value: number | null }[];
}

/** One chart: the series over the last 10 minutes (`end` the newest sample), scaled to `max`. */
function Chart({
  title,
  series,
  max,
  format,
  testId,
  end,
}: {
  title: string;
  series: Series[];
  max: number;
  format: (v: number) => string;
  testId: string;
  end: number;
}) {
  const start = end - WINDOW_MS;
  const x = (at: number) => ((at - start) / WINDOW_MS) * W;
  const y = (v: number) => H - (Math.min(v, max) / max) * (H - 4) - 2;
  const latest = series.map((s) => ({ label: s.label, value: [...s.points].reverse().find((p) => p.value !== null)?.value ?? null }));
  const summary = latest.map((l) => `${l.label} ${l.value === null ? 'no data' : format(l.value)}`).join(', ');
  return (
    <figure className="chart" data-testid={testId}>
      <figcaption>
        <strong>{title}</strong>{' '}
        <span className="muted small" data-testid={`${testId}-now`}>
          {summary}
        </span>
      </figcaption>
      <svg
        viewBox={`0 0 ${W} ${H}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`${title}, last 10 minutes: now ${summary}; scale up to ${format(max)}`}
      >
        <line x1="0" y1={H - 2} x2={W} y2={H - 2} className="axis" />
        <line x1="0" y1={H / 2} x2={W} y2={H / 2} className="grid-line" />
        {series.map((s) => {
          // A null (no rate: the first sample of a container) breaks the line.
          const runs: string[][] = [[]];
          for (const p of s.points) {
            if (p.value === null) runs.push([]);
            else runs[runs.length - 1]!.push(`${x(p.at).toFixed(1)},${y(p.value).toFixed(1)}`);
          }
          return runs
            .filter((r) => r.length > 0)
            .map((r, n) =>
              r.length === 1 ? (
                <circle key={`${s.label}-${n}`} cx={r[0]!.split(',')[0]} cy={r[0]!.split(',')[1]} r="2" className={s.className} />
              ) : (
                <polyline key={`${s.label}-${n}`} points={r.join(' ')} className={s.className} fill="none" />
              ),
            );
        })}
      </svg>
      <div className="chart-scale muted small">
        <span>−10 min</span>
        <span>max {format(max)}</span>
        <span>now</span>
      </div>
    </figure>
  );
}

/** Bytes per second between consecutive samples (null across a counter reset). */
function rate(samples: readonly StatsSample[], pick: (s: StatsSample) => number): { at: number; value: number | null }[] {
  return samples.map((s, n) => {
    const prev = samples[n - 1];
    if (!prev || pick(s) < pick(prev) || s.at <= prev.at) return { at: s.at, value: null };
    return { at: s.at, value: (pick(s) - pick(prev)) / ((s.at - prev.at) / 1000) };
  });
}

export function StatsCharts({ id, running }: { id: string; running: boolean }) {
  const { samples, intervalMs, connected } = useStats(id);
  const end = samples.at(-1)?.at ?? 0;
  const cpu = samples.map((s) => ({ at: s.at, value: s.cpuPercent }));
  const cpuMax = Math.max(100, ...cpu.map((p) => p.value ?? 0));
  const limit = Math.max(1, ...samples.map((s) => s.memoryLimitBytes));
  const rx = rate(samples, (s) => s.networkRxBytes);
  const tx = rate(samples, (s) => s.networkTxBytes);
  const netMax = Math.max(1024, ...rx.map((p) => p.value ?? 0), ...tx.map((p) => p.value ?? 0));
  return (
    <section className="charts" aria-label="Resource graphs">
      {samples.length === 0 ? (
        <p className="muted small" data-testid="stats-status">
          {!connected
            ? 'Connecting to the resource samples…'
            : intervalMs === 0
              ? 'Resource sampling is off on this orchestrator (ENDERCLOUD_STATS_INTERVAL=off).'
              : running
                ? `No sample yet: the orchestrator samples running servers every ${Math.round(intervalMs / 1000)} s.`
                : 'No sample: the server is not running.'}
        </p>
      ) : null}
      <div className="chart-row">
        <Chart
          title="CPU"
          testId="chart-cpu"
          end={end}
          max={cpuMax}
          format={(v) => `${v.toFixed(0)} %`}
          series={[{ label: 'CPU', className: 's1', points: cpu }]}
        />
        <Chart
          title="Memory"
          testId="chart-memory"
          end={end}
          max={limit}
          format={(v) => bytes(v)}
          series={[{ label: 'used', className: 's1', points: samples.map((s) => ({ at: s.at, value: s.memoryBytes })) }]}
        />
        <Chart
          title="Network"
          testId="chart-network"
          end={end}
          max={netMax}
          format={(v) => `${bytes(v)}/s`}
          series={[
            { label: 'in', className: 's1', points: rx },
            { label: 'out', className: 's2', points: tx },
          ]}
        />
      </div>
    </section>
  );
}
