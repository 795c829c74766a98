// The inventory digest a heartbeat carries: sha256 over the managed-container
// inventory in a canonical form (entries by instance id, keys sorted), so the
// same containers in the same states always give the same digest and any
// change (a crash, a start, a new container) gives another.

import { createHash } from 'node:crypto';
import type { InventoryEntry } from '../contracts/agent-api.js';

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function inventoryDigest(inventory: readonly InventoryEntry[]): string {
  const sorted = [...inventory].sort((a, b) => (a.instanceId < b.instanceId ? -1 : a.instanceId > b.instanceId ? 1 : 0));
  return createHash('sha256').update(canonical(sorted)).digest('hex');
}
