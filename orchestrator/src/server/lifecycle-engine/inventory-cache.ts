// Quiet racks cost little (docs/agent.md "Heartbeats", inventoryDigest): heartbeats carry a
// digest of the agent's inventory, and the supervisor re-reads a host's full
// inventory only when that digest changed, when one of the host's stored
// instances changed since the last read (our own actions move containers
// before the next heartbeat can say so), or when the periodic safety sweep is
// due. Hosts whose agents send no digest are read on every tick, as before.

import type { InventoryEntry } from '../drivers/host-driver.js';

export interface CachedInventory {
  /** The digest the host had reported when this inventory was read. */
  digest: string;
  readAt: number;
  entries: InventoryEntry[];
}

/** The pure rule: may the cached inventory stand in for a fresh read? */
export function mayReuseInventory(input: {
  cached: Pick<CachedInventory, 'digest' | 'readAt'> | undefined;
  reportedDigest: string | undefined;
  /** Latest updatedAt among the host's stored instances (0 when none). */
  lastInstanceChangeAt: number;
  now: number;
  sweepMs: number | undefined;
}): boolean {
  const { cached, reportedDigest, lastInstanceChangeAt, now, sweepMs } = input;
  if (sweepMs === undefined || cached === undefined || reportedDigest === undefined) return false;
  if (cached.digest !== reportedDigest) return false;
  if (now - cached.readAt >= sweepMs) return false;
  return lastInstanceChangeAt < cached.readAt;
}

export class InventoryCache {
  private readonly byHost = new Map<string, CachedInventory>();

  constructor(private readonly sweepMs: number | undefined) {}

  /**
   * The cached entries when the rule allows, else a fresh read (remembered
   * under the reported digest); `readAt` is when the entries were asked for.
   */
  async get(
    host: { id: string; inventoryDigest?: string },
    lastInstanceChangeAt: number,
    now: number,
    read: () => Promise<InventoryEntry[]>,
  ): Promise<{ entries: InventoryEntry[]; readAt: number }> {
    const cached = this.byHost.get(host.id);
    if (mayReuseInventory({ cached, reportedDigest: host.inventoryDigest, lastInstanceChangeAt, now, sweepMs: this.sweepMs }))
      return { entries: cached!.entries, readAt: cached!.readAt };
    const entries = await read();
    if (host.inventoryDigest !== undefined && this.sweepMs !== undefined)
      this.byHost.set(host.id, { digest: host.inventoryDigest, readAt: now, entries });
    else this.byHost.delete(host.id);
    return { entries, readAt: now };
  }
}
