// A Docker host run by one agent (AGENT_ID is its durable id) and the heartbeat
// it sends. Status decisions live in the control plane; this is the record.

import type { EpochMs, MaintenanceMode } from './common.js';

export const HOST_STATUSES = ['ONLINE', 'RECOVERING', 'OFFLINE', 'MAINTENANCE'] as const;
/**
 * ONLINE: placeable. RECOVERING: returned, inventory being reconciled, never
 * placeable. OFFLINE: heartbeats stale. MAINTENANCE: alive, no new placements.
 */
export type HostStatus = (typeof HOST_STATUSES)[number];

export interface HostResources {
  /** Memory the orchestrator may reserve on this host for instances. */
  memoryMb: number;
  cpus: number;
  diskBytes?: number;
}

export interface PortRange {
  first: number;
  last: number;
}

/** What an agent reports in `POST /agents/:agentId/heartbeat`. */
export interface HostHeartbeat {
  id: string;
  controlUrl: string;
  /** Address players reach this host's game ports on. */
  gameAddress: string;
  resources: HostResources;
  version: string;
  portRange: PortRange;
  heartbeatIntervalMs: number;
  /** Changes when the agent process restarts; lets recovery notice a restart. */
  bootId?: string;
  /** sha256 of the agent's managed-container inventory: the supervisor re-reads it only when this changes. */
  inventoryDigest?: string;
}

/** The registered host: what its last heartbeat said, plus the control plane's view of it. */
export interface Host extends Omit<HostHeartbeat, 'bootId'> {
  status: HostStatus;
  statusReason: string | null;
  statusChangedAt: EpochMs;
  bootId: string | null;
  /** Sum of memory reserved by instances placed here; never above resources.memoryMb. */
  memoryReservedMb: number;
  maintenance: MaintenanceMode | null;
  firstSeenAt: EpochMs;
  lastHeartbeatAt: EpochMs;
  updatedAt: EpochMs;
  /**
   * Set once the host enrolled with a join token (docs/agent.md "Enrolment"):
   * bumped by every re-enrolment; the orchestrator's call credential for the
   * agent is derived from it. Absent: a legacy host on the shared agent token.
   */
  credentialGeneration?: number;
  enrolledAt?: EpochMs;
  /** When an admin revoked the host credential (it authenticates nothing until a re-enrolment). */
  credentialRevokedAt?: EpochMs;
}

/**
 * A managed container a recovery run listed as unclaimed on a host (a fresh or
 * restored database, another host's instance, an unknown group). Durable: no
 * later recovery removes it; it leaves the set when an operator adopts or
 * deletes it, or when the host stops reporting it.
 */
export interface UnclaimedRecord {
  hostId: string;
  instanceId: string;
  /** The container's orchestrator.group / orchestrator.variant labels when first listed. */
  groupId: string | null;
  variantId: string | null;
  firstSeenAt: EpochMs;
}
