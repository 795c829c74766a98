// Instances (one server, one container): the user-visible lifecycle state,
// the desired state and the observed Docker state are kept apart (docs/lifecycle.md, top).

import type { EpochMs, JsonObject, JsonValue, LayerRef, MaintenanceMode, Resources } from './common.js';
import type { ContainerUserSpec } from './template.js';
import type { IdleAction, IdleClock, IdleTier } from './scaling.js';

export const INSTANCE_STATES = [
  'draft',
  'installing',
  'stopped',
  'starting',
  'online',
  'degraded',
  'stopping',
  'pausing',
  'paused',
  'backup',
  'restore',
  'update',
  'error',
  'unknown',
  'intervention_required',
  'deleting',
  'archiving',
  'archived',
] as const;
export type InstanceState = (typeof INSTANCE_STATES)[number];

export const DESIRED_STATES = ['running', 'stopped', 'paused', 'deleted'] as const;
export type DesiredState = (typeof DESIRED_STATES)[number];

/** The mutually exclusive actions a user or the system may request on an instance. */
export const INSTANCE_ACTIONS = [
  'start',
  'stop',
  'restart',
  'pause',
  'resume',
  'update',
  'delete',
  'apply-settings',
  'backup',
  'restore',
  // Dynamic provisioning (docs/provisioning.md): the archive idle tier, and despawn = drain, evacuate, wait, delete.
  'archive',
  'despawn',
  // Egg templates: run the install script again over the kept files (stopping a running server first).
  'reinstall',
] as const;
export type InstanceAction = (typeof INSTANCE_ACTIONS)[number];

/** Docker's view of the container, as the agent last reported it. */
export interface ObservedState {
  container: 'absent' | 'created' | 'running' | 'paused' | 'restarting' | 'exited' | 'dead' | 'unknown';
  exitCode?: number;
  oomKilled?: boolean;
  startedAt?: EpochMs;
  finishedAt?: EpochMs;
  observedAt: EpochMs;
}

export interface Endpoint {
  host: string;
  port: number;
}

/** Player counts from the last readiness probe or router reports. */
export interface PlayerCounts {
  online: number;
  max: number;
  at: EpochMs;
}

/**
 * A change waiting for a controlled container replacement: a `restart_required`
 * setting (`settings.<name>`), or a `next_start` image (`image`) or label
 * (`labels.<key>`, null removes it). A secret setting's value is `[redacted]`
 * here; the new value waits in secretSettings under `pending:<name>`.
 */
export interface PendingChange {
  key: string;
  value: JsonValue;
  mode: 'restart_required' | 'next_start';
  requestedAt: EpochMs;
  secret?: boolean;
}

/** Container-level configuration applied through the desired-vs-applied mechanism. */
export interface ContainerConfig {
  image: string;
  labels: Record<string, string>;
  env: Record<string, string>;
  resources: Resources;
  containerPort: number;
  layers: LayerRef[];
}

export interface CrashLoopState {
  /** Timestamps of unexpected exits inside the current window. */
  exits: EpochMs[];
  windowMs: number;
  tripped: boolean;
  trippedAt: EpochMs | null;
}

/** The mutually exclusive action in progress (INSTANCE_BUSY names it). */
export interface ActiveAction {
  kind: string;
  commandId: string;
  startedAt: EpochMs;
}

export type DeletionScope = 'container' | 'technical' | 'player_data' | 'backups';

export interface DeletionProgress {
  scopes: DeletionScope[];
  completed: DeletionScope[];
  requestedAt: EpochMs;
  lastError: string | null;
}

/** Dynamic provisioning per instance (docs/provisioning.md). */
export interface InstanceFleet {
  /** Consecutive zero-player time (restarts at every login). */
  idle?: IdleClock;
  /** The instance's own idle tiers, overriding its group's. */
  idleTiers?: IdleTier[];
  /** The last idle tier applied, and when (a tier applies once per empty run). */
  lastTier?: { action: IdleAction; at: EpochMs };
  /** Being despawned: no new joins or transfers (registry `Draining`). */
  draining?: { since: EpochMs; reason: string };
  /** Container removed by the archive tier; the world is kept on `hostId` (and in `backupId`). */
  archived?: { at: EpochMs; hostId: string; backupId: string | null };
}

export interface Instance {
  id: string;
  name: string;
  groupId: string;
  variantId: string;
  hostId: string | null;
  /** Session allocation (docs/provisioning.md "Allocation"); an allocated instance is never scaled down. */
  sessionId: string | null;
  state: InstanceState;
  stateReason: string | null;
  stateChangedAt: EpochMs;
  desiredState: DesiredState;
  observed: ObservedState | null;
  endpoint: Endpoint | null;
  hostPort: number | null;
  /** Memory reserved on hostId for this instance (released on deletion or move). */
  memoryMb: number;
  /**
   * Whether memoryMb is counted in hostId's reservation. False while the
   * instance has no container: archived, or a create that failed before its
   * container existed (so it takes no room from later placements); the start
   * that brings it back reserves it again.
   */
  memoryReserved: boolean;
  /** Non-secret setting values as applied. */
  settings: JsonObject;
  /** Secret setting values: never in views, revisions, logs or API answers. */
  secretSettings: Record<string, string>;
  pendingChanges: PendingChange[];
  /** The container configuration the current container was created with; pendingChanges say what comes next. */
  containerConfig: ContainerConfig;
  /** `next_start` change waiting for the next explicit start. */
  containerConfigPending: boolean;
  /** Current configuration revision number (see ConfigRevision). */
  revision: number;
  user: ContainerUserSpec;
  crashLoop: CrashLoopState;
  maintenance: MaintenanceMode | null;
  activeAction: ActiveAction | null;
  players: PlayerCounts | null;
  deletion: DeletionProgress | null;
  /** sha256 of the per-instance bridge token (ENDERCLOUD_INSTANCE_TOKEN). */
  bridgeTokenHash: string | null;
  /** Dynamic provisioning's record of this instance (idle clock, drain, archive); null until a policy touches it. */
  fleet: InstanceFleet | null;
  /** Optimistic concurrency: bumped by every update. */
  version: number;
  createdAt: EpochMs;
  updatedAt: EpochMs;
}

/** One state change with its reason (`GET /instances/:id/history`). */
export interface InstanceHistoryEntry {
  id: number;
  instanceId: string;
  at: EpochMs;
  from: InstanceState | null;
  to: InstanceState;
  reason: string;
  actor: string | null;
  commandId: string | null;
  details: JsonObject | null;
}

/** Immutable, secrets already redacted; the newest 20 per instance are kept. */
export interface ConfigRevision {
  instanceId: string;
  revision: number;
  createdAt: EpochMs;
  actor: string | null;
  reason: string;
  config: JsonObject;
}
