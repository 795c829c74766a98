// Durable commands: every agent call is persisted before dispatch and retried
// with backoff; `x-command-id` makes a retried dispatch idempotent on the agent.

import type { EpochMs, JsonObject } from './common.js';

export const COMMAND_STATUSES = ['pending', 'dispatched', 'succeeded', 'failed'] as const;
export type CommandStatus = (typeof COMMAND_STATUSES)[number];

export interface Command {
  id: string;
  instanceId: string | null;
  hostId: string | null;
  /** e.g. create, start, stop, pause, unpause, delete, cleanup, inventory. */
  kind: string;
  payload: JsonObject;
  status: CommandStatus;
  attempts: number;
  maxAttempts: number;
  nextAttemptAt: EpochMs;
  lastError: string | null;
  result: JsonObject | null;
  requestId: string;
  /** Who holds the claim while dispatched, and until when (crash → reclaimed). */
  claimedBy: string | null;
  leaseUntil: EpochMs | null;
  createdAt: EpochMs;
  updatedAt: EpochMs;
  completedAt: EpochMs | null;
}
