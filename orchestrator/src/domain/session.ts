// Sessions (allocations of an instance), transfers (where a player goes next)
// and player sessions reported by the router (docs/provisioning.md "Allocation", docs/router.md).

import type { EpochMs, JsonObject } from './common.js';

export interface Session {
  id: string;
  groupId: string | null;
  instanceId: string;
  status: 'allocated' | 'released';
  metadata: JsonObject;
  createdAt: EpochMs;
  releasedAt: EpochMs | null;
}

export type TransferTarget = { kind: 'instance'; id: string } | { kind: 'group'; id: string } | { kind: 'session'; id: string };

export const TRANSFER_STATUSES = ['pending', 'consumed', 'expired', 'failed'] as const;

export interface Transfer {
  id: string;
  /** Player name as sent in Login Start (compared case-insensitively). */
  player: string;
  playerUuid: string | null;
  target: TransferTarget;
  status: (typeof TRANSFER_STATUSES)[number];
  /** Instance the target resolved to when it was consumed. */
  resolvedInstanceId: string | null;
  reason: string | null;
  createdAt: EpochMs;
  expiresAt: EpochMs;
  consumedAt: EpochMs | null;
}

/** One player connection as reported by a router. */
export interface PlayerSession {
  id: string;
  routerId: string;
  playerName: string;
  playerUuid: string | null;
  instanceId: string | null;
  clientAddress: string | null;
  status: 'active' | 'denied' | 'closed';
  reason: string | null;
  connectedAt: EpochMs;
  disconnectedAt: EpochMs | null;
}
