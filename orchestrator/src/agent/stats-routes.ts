// GET /api/v1/instances/stats: one resource sample of every running or paused
// container this agent manages, in one call, so the orchestrator's collector
// (src/server/services/instance-stats.ts) asks each host once per interval.
// The engine is asked a few containers at a time: a host with a hundred
// worlds must not open a hundred stats requests at once.

import type { FastifyInstance } from 'fastify';
import type { InstanceStatsAnswer, InstanceStatsEntry } from '../contracts/agent-api.js';
import { isAppError } from '../shared/errors.js';
import { LABEL, hostSelector, isManagedBy } from './labels.js';
import type { ContainerRuntime, ContainerSummary } from './runtime.js';

/** Engine stats requests in flight at once. */
export const STATS_CONCURRENCY = 4;

export interface StatsSource {
  runtime: Pick<ContainerRuntime, 'list' | 'stats'>;
  agentId: string;
  now?: () => Date;
  concurrency?: number;
}

/** Runs `fn` over `items` with at most `limit` calls in flight; results keep the input order. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

async function sample(runtime: StatsSource['runtime'], c: ContainerSummary): Promise<InstanceStatsEntry | undefined> {
  let stats;
  try {
    stats = await runtime.stats(c.id);
  } catch (err) {
    // Removed between list and stats: it is simply no longer there.
    if (isAppError(err) && err.code === 'NOT_FOUND') return undefined;
    throw err;
  }
  if (!stats) return undefined;
  return {
    instanceId: c.labels[LABEL.instance] ?? '',
    containerId: c.id,
    groupId: c.labels[LABEL.group] || null,
    state: c.state,
    ...stats,
  };
}

/** Samples every running or paused managed container; stopped ones have no live counters. */
export async function collectInstanceStats(source: StatsSource): Promise<InstanceStatsAnswer> {
  const live = (await source.runtime.list(hostSelector(source.agentId))).filter(
    (c) => isManagedBy(c.labels, source.agentId) && (c.state === 'running' || c.state === 'paused'),
  );
  const samples = await mapBounded(live, source.concurrency ?? STATS_CONCURRENCY, (c) => sample(source.runtime, c));
  return {
    collectedAt: (source.now?.() ?? new Date()).toISOString(),
    instances: samples.filter((s): s is InstanceStatsEntry => s !== undefined),
  };
}

export function registerStatsRoutes(api: FastifyInstance, source: StatsSource): void {
  // A static path: Fastify matches it before /instances/:id.
  api.get('/instances/stats', async (): Promise<InstanceStatsAnswer> => collectInstanceStats(source));
}
