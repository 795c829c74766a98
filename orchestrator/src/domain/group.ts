// Groups (named pools) and their variants (resolved configurations).

import type { EpochMs, LayerRef, Resources } from './common.js';
import type { IdleTier, ScalingPolicy } from './scaling.js';
import type { BackupPolicy } from './backup-policy.js';

export type GroupKind = 'persistent' | 'ephemeral';
export type PlacementStrategy = 'packed' | 'distributed';

export interface GroupCaps {
  /** At most this many instances in the group (any state but deleted). */
  maxInstances?: number;
}

export interface Variant {
  id: string;
  template: { name: string; version: string };
  /** Added after the template's layers, in order. */
  extraLayers: LayerRef[];
  /** Overrides the template's resources when set. */
  resources?: Resources;
  /** Merged over the template env. */
  env: Record<string, string>;
}

export interface Group {
  id: string;
  kind: GroupKind;
  placement: PlacementStrategy;
  caps: GroupCaps;
  variants: Variant[];
  scaling: ScalingPolicy | null;
  /**
   * How the group's worlds sleep when empty (docs/provisioning.md); absent =
   * the system's default, [] = never. An instance may override it.
   */
  idleTiers?: IdleTier[];
  /** Scheduled backups and retention (domain/backup-policy.ts; parsed by contracts/backup-policy.ts); absent = none. */
  backup?: BackupPolicy | null;
  createdAt: EpochMs;
  updatedAt: EpochMs;
}
