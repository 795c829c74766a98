// Placement latency micro-measure over simulated hosts (labelled a simulation:
// no agents, no store). The clock is injected; bench/control-plane prints it.

import { placeInstance, type HostStatus, type PlacementHost, type PlacementStrategy } from './placement.js';

/** Deterministic PRNG (mulberry32) so simulated host sets are reproducible. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const STATUSES: HostStatus[] = ['ONLINE', 'ONLINE', 'ONLINE', 'ONLINE', 'ONLINE', 'RECOVERING', 'OFFLINE', 'MAINTENANCE'];

/** A simulated fleet: mostly ONLINE hosts of 4–64 GiB with random reservations and group counts. */
export function simulatedHosts(
  count: number,
  random: () => number,
  groups: readonly string[] = ['lobby', 'bedwars', 'survival'],
): PlacementHost[] {
  const hosts: PlacementHost[] = [];
  for (let i = 0; i < count; i++) {
    const memoryMb = 4096 * (1 + Math.floor(random() * 16));
    const groupCounts: Record<string, number> = {};
    for (const g of groups) groupCounts[g] = Math.floor(random() * 5);
    hosts.push({
      id: `sim-host-${String(i).padStart(5, '0')}`,
      status: STATUSES[Math.floor(random() * STATUSES.length)] ?? 'ONLINE',
      memoryMb,
      memoryReservedMb: Math.floor(random() * memoryMb),
      groupCounts,
    });
  }
  return hosts;
}

export interface PlacementLatency {
  simulation: true;
  hostCount: number;
  iterations: number;
  strategy: PlacementStrategy;
  totalMs: number;
  perPlacementUs: number;
  placed: number;
}

/** Times `iterations` placements over `hostCount` simulated hosts; `clock` returns ms (performance.now). */
export function measurePlacementLatency(options: {
  clock: () => number;
  hostCount?: number;
  iterations?: number;
  strategy?: PlacementStrategy;
  seed?: number;
}): PlacementLatency {
  const hostCount = options.hostCount ?? 1000;
  const iterations = options.iterations ?? 1000;
  const strategy = options.strategy ?? 'packed';
  const random = seededRandom(options.seed ?? 42);
  const hosts = simulatedHosts(hostCount, random);
  const requests = Array.from({ length: iterations }, () => ({ groupId: 'lobby', memoryMb: 512 * (1 + Math.floor(random() * 8)) }));
  let placed = 0;
  const start = options.clock();
  for (const r of requests) if (placeInstance(hosts, r, strategy).ok) placed += 1;
  const totalMs = options.clock() - start;
  return { simulation: true, hostCount, iterations, strategy, totalMs, perPlacementUs: (totalMs * 1000) / iterations, placed };
}
