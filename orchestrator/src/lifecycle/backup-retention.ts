// Backup retention, pure: which backups to keep under "last N, newest per day
// for D days, newest per week for W weeks" (restic's forget policy, in UTC).
// Everything not kept is pruned; a policy keeping nothing keeps everything.

export interface RetentionPolicy {
  last?: number;
  daily?: number;
  weekly?: number;
}

export interface RetainedBackup {
  backupId: string;
  /** Epoch ms. */
  createdAt: number;
}

export interface RetentionPlan {
  keep: string[];
  prune: string[];
}

const DAY = 86_400_000;

/** ISO-like week key: the UTC Monday the week starts on. */
function weekKey(ms: number): number {
  const day = Math.floor(ms / DAY);
  // 1970-01-01 was a Thursday: shift so weeks start on Monday.
  return day - ((day + 3) % 7);
}

/** Keeps the newest backup of each of the `count` newest buckets that hold one. */
function newestPerBucket(sorted: readonly RetainedBackup[], count: number, bucket: (ms: number) => number, keep: Set<string>): void {
  const seen = new Set<number>();
  for (const b of sorted) {
    if (seen.size >= count) return;
    const key = bucket(b.createdAt);
    if (seen.has(key)) continue;
    seen.add(key);
    keep.add(b.backupId);
  }
}

export function planRetention(backups: readonly RetainedBackup[], policy: RetentionPolicy): RetentionPlan {
  const sorted = [...backups].sort((a, b) => b.createdAt - a.createdAt || b.backupId.localeCompare(a.backupId));
  const last = policy.last ?? 0;
  const daily = policy.daily ?? 0;
  const weekly = policy.weekly ?? 0;
  if (last + daily + weekly === 0) return { keep: sorted.map((b) => b.backupId), prune: [] };
  const keep = new Set<string>(sorted.slice(0, last).map((b) => b.backupId));
  newestPerBucket(sorted, daily, (ms) => Math.floor(ms / DAY), keep);
  newestPerBucket(sorted, weekly, weekKey, keep);
  return {
    keep: sorted.filter((b) => keep.has(b.backupId)).map((b) => b.backupId),
    prune: sorted.filter((b) => !keep.has(b.backupId)).map((b) => b.backupId),
  };
}
