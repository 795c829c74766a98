// The shapes of dynamic provisioning that the domain stores: a group's scaling
// policy, the idle tiers and the per-instance idle clock. They live here, in the
// ground layer, so that domain/ depends on nothing above it; the rules that
// parse and act on them stay in src/provisioning/ (scaling-policy.ts, idle.ts).

import type { EpochMs } from './common.js';

export const IDLE_ACTIONS = ['pause', 'stop', 'archive'] as const;
export type IdleAction = (typeof IDLE_ACTIONS)[number];

export interface IdleTier {
  /** The operator's text ("10m"). */
  after: string;
  afterMs: number;
  action: IdleAction;
}

export interface BufferPolicy {
  /** Ready, unallocated instances to keep. */
  count?: number;
  /** Percent of the group's Ready+allocated total that is Ready buffer (Agones formula), 0..99. */
  percent?: number;
}

export interface SavegamePolicy {
  mode: 'discard' | 'archive';
  /** How long an archived world is kept (archive only); absent: kept until deleted. */
  retention?: string;
  retentionMs?: number;
}

export interface ScaleUpRule {
  /** Spawn when logged-in players / max players is strictly above this ratio (0 < x ≤ 1). */
  whenFillAbove: number;
  step: number;
  cooldown: string;
  cooldownMs: number;
}

export interface ScaleDownRule {
  whenEmptyFor: string;
  whenEmptyForMs: number;
}

/** A group's fleet policy (docs/provisioning.md); parsed and checked by provisioning/scaling-policy.ts. */
export interface ScalingPolicy {
  minInstances: number;
  maxInstances?: number;
  buffer: BufferPolicy;
  /**
   * Input only (an older form of the group's top-level `idleTiers`): the group
   * body's normalizer moves it to `Group.idleTiers`; a stored policy never has it.
   */
  idleTiers?: IdleTier[];
  savegame: SavegamePolicy;
  scaleUp?: ScaleUpRule;
  scaleDown?: ScaleDownRule;
  releaseWhenEmptyFor?: string;
  releaseWhenEmptyForMs?: number;
}

/** An instance's run of zero logged-in players (provisioning/idle.ts moves it). */
export interface IdleClock {
  /** Start of the current run of zero players; null while anyone is (or may be) on. */
  emptySince: EpochMs | null;
  lastLoginAt: EpochMs | null;
  /** The cross-checked count: the larger of the router's and the probe's. */
  playersOnline: number;
  router: { playersOnline: number; at: EpochMs } | null;
  probe: { playersOnline: number; at: EpochMs } | null;
}
