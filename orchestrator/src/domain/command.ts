// Durable commands: every agent call is persisted before dispatch and retried
// with backoff; `x-command-id` makes a retried dispatch idempotent on the agent.

import type { EpochMs, JsonObject } from './common.js';
import { INSTANCE_ACTIONS } from './instance.js';

/**
 * Every kind of durable command, one handler each (the lifecycle engine's
 * command pipeline): creating an instance's container, the instance actions,
 * and a host's orphan cleanup.
 */
export const COMMAND_KINDS = ['create', ...INSTANCE_ACTIONS, 'cleanup'] as const;
export type CommandKind = (typeof COMMAND_KINDS)[number];

export function isCommandKind(kind: string): kind is CommandKind {
  return (COMMAND_KINDS as readonly string[]).includes(kind);
}

export const COMMAND_STATUSES = ['pending', 'dispatched', 'succeeded', 'failed'] as const;
export type CommandStatus = (typeof COMMAND_STATUSES)[number];

export interface Command {
  id: string;
  instanceId: string | null;
  hostId: string | null;
  /** A CommandKind for every command this version creates; the worker refuses others by name. */
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
