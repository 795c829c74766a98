// The Docker Engine's stats answer read into the runtime's engine-neutral
// ContainerStats. Pure (no dockerode), so cgroup v1 and v2 answers are table-tested.

import type { ContainerStats } from './runtime.js';

/** Docker's zero time: a container that is not running reads nothing. */
const NEVER = '0001-01-01T00:00:00Z';

/** The fields of the Engine's stats answer we read (cgroup v1 and v2). */
export interface EngineStats {
  read?: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number } };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number | undefined> };
  networks?: Record<string, { rx_bytes?: number; tx_bytes?: number }>;
}

/**
 * The Engine's one-shot stats answer in engine-neutral units; undefined when
 * it read nothing (a container that is not running answers a zero time).
 * Memory leaves out inactive page cache like `docker stats` does, so a world
 * that reads its region files does not look like it leaks.
 */
export function statsFromEngine(raw: EngineStats): ContainerStats | undefined {
  if (!raw.read || raw.read === NEVER) return undefined;
  const mem = raw.memory_stats ?? {};
  const usage = mem.usage ?? 0;
  const cache = mem.stats?.inactive_file ?? mem.stats?.total_inactive_file ?? 0;
  let rx = 0;
  let tx = 0;
  for (const n of Object.values(raw.networks ?? {})) {
    rx += n.rx_bytes ?? 0;
    tx += n.tx_bytes ?? 0;
  }
  return {
    cpuSecondsTotal: (raw.cpu_stats?.cpu_usage?.total_usage ?? 0) / 1e9,
    memoryBytes: cache < usage ? usage - cache : usage,
    memoryLimitBytes: mem.limit ?? 0,
    networkRxBytes: rx,
    networkTxBytes: tx,
  };
}
