// The router's view of instances, pure: one RegistryBackend per routable
// instance (lifecycle state + host status via registryStatus), player counts
// from router reports and probes, and the diff that feeds the change stream.

import type { Host, Instance, TemplateSpec } from '../../domain/index.js';
import { registryStatus } from '../../lifecycle/states.js';
import type { RegistryBackend } from '../../protocol/registry-contract.js';

/** Env var (itzg/minecraft-server and the test server) that sets `accepts-transfers`. */
export const ACCEPTS_TRANSFERS_ENV = 'ACCEPTS_TRANSFERS';
/** Template/instance label that declares it for images configured another way. */
export const ACCEPTS_TRANSFERS_LABEL = 'endercloud.accepts-transfers';

export interface BackendInputs {
  instance: Instance;
  host: Host | undefined;
  /** The instance's template (undefined when it cannot be resolved any more). */
  template: TemplateSpec | undefined;
  /** Active players the routers reported on this instance. */
  routerPlayers: number;
  /** Evacuating, or the whole system is in maintenance: no initial joins. */
  drained: boolean;
  globalMaintenance: boolean;
  /** Duration of the instance's last measured start (history), if any. */
  lastStartMs: number | undefined;
  now: number;
}

const isTrue = (v: string | undefined): boolean => v !== undefined && v.trim().toLowerCase() === 'true';

/** 1.20.5+ `accepts-transfers`, as the instance's container configuration declares it. */
export function acceptsTransfers(instance: Pick<Instance, 'containerConfig'>): boolean {
  const c = instance.containerConfig;
  return isTrue(c.env[ACCEPTS_TRANSFERS_ENV]) || isTrue(c.labels[ACCEPTS_TRANSFERS_LABEL]);
}

/** Whether the orchestrator can move this instance's players with RCON `transfer`. */
export function canRconTransfer(instance: Instance, template: TemplateSpec | undefined): boolean {
  return (
    template?.stop.rcon !== undefined &&
    acceptsTransfers(instance) &&
    instance.secretSettings[template.stop.rcon.passwordVariable] !== undefined
  );
}

export function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Player counts: the larger of the routers' reports and the last probe, so a
 * world is never thought empty while someone is connected. `max` 0 = unknown.
 */
function players(i: BackendInputs): RegistryBackend['players'] {
  const probe = i.instance.players;
  if (!probe && i.routerPlayers === 0) return null;
  return { online: Math.max(i.routerPlayers, probe?.online ?? 0), max: probe?.max ?? 0 };
}

function expectedStartMs(i: BackendInputs, status: RegistryBackend['status']): number | null {
  if (i.lastStartMs === undefined) return null;
  if (status === 'Stopped') return i.lastStartMs;
  if (status === 'Starting') return Math.max(0, i.lastStartMs - (i.now - i.instance.stateChangedAt));
  return null;
}

/** Undefined for instances the router must not see (draft, deleting). */
export function registryBackend(i: BackendInputs): RegistryBackend | undefined {
  const byState = registryStatus(i.instance.state, i.host?.status ?? null);
  if (byState === null) return undefined;
  // A despawn drains first: current players stay, nobody new joins or is transferred in (docs/provisioning.md "Despawn, archive and unarchive").
  const status = i.instance.fleet?.draining && byState !== 'Stale' && byState !== 'Stopped' ? 'Draining' : byState;
  const endpoint = i.instance.endpoint;
  const counts = players(i);
  return {
    instanceId: i.instance.id,
    name: i.instance.name,
    groupId: i.instance.groupId,
    sessionId: i.instance.sessionId,
    status,
    address: endpoint && status !== 'Stopped' ? formatAddress(endpoint.host, endpoint.port) : null,
    players: counts,
    maintenance: i.globalMaintenance || i.drained || i.instance.maintenance?.enabled === true,
    full: counts !== null && counts.max > 0 && counts.online >= counts.max,
    acceptsTransfers: acceptsTransfers(i.instance),
    expectedStartMs: expectedStartMs(i, status),
  };
}

/**
 * What counts as a change. The remaining start time of a Starting backend
 * shrinks every moment; it is left out so it does not flood the stream (a
 * snapshot carries the fresh value).
 */
export function fingerprint(b: RegistryBackend): string {
  return JSON.stringify(b.status === 'Starting' ? { ...b, expectedStartMs: b.expectedStartMs === null } : b);
}

export type RegistryChange = { kind: 'upsert'; backend: RegistryBackend } | { kind: 'remove'; instanceId: string };

/** Changes from `previous` (instanceId → fingerprint) to `next`, in a stable order. */
export function diffRegistry(previous: ReadonlyMap<string, string>, next: readonly RegistryBackend[]): RegistryChange[] {
  const changes: RegistryChange[] = [];
  const seen = new Set<string>();
  for (const b of next) {
    seen.add(b.instanceId);
    if (previous.get(b.instanceId) !== fingerprint(b)) changes.push({ kind: 'upsert', backend: b });
  }
  for (const id of [...previous.keys()].sort()) if (!seen.has(id)) changes.push({ kind: 'remove', instanceId: id });
  return changes;
}

/** Ranks a group's members for a transfer: Running, Paused, Starting, Stopped; never Stale, maintenance or full. */
export function pickGroupMember(members: readonly RegistryBackend[]): RegistryBackend | undefined {
  const rank = { Running: 0, Paused: 1, Starting: 2, Stopped: 3, Stale: 9, Draining: 9 } as const;
  return members
    .filter((b) => b.status !== 'Stale' && b.status !== 'Draining' && !b.maintenance && !b.full)
    .sort(
      (a, b) => rank[a.status] - rank[b.status] || (a.players?.online ?? 0) - (b.players?.online ?? 0) || a.name.localeCompare(b.name),
    )[0];
}

/** Milliseconds of the newest completed start (`starting` → `online`) in a newest-first history. */
export function lastStartDuration(history: readonly { at: number; from: string | null; to: string }[]): number | undefined {
  for (let k = 0; k < history.length; k++) {
    const e = history[k]!;
    if (e.to !== 'online' || e.from !== 'starting') continue;
    const began = history.slice(k + 1).find((h) => h.to === 'starting');
    if (began) return Math.max(0, e.at - began.at);
  }
  return undefined;
}
