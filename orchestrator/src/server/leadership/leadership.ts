// Who runs the background loops (command worker, supervisor, autoscaler): the
// one replica holding the reconciler lease. Loops ask `isLeader()` before each
// round and restart promptly on `onChange(true)`; host calls carry `epoch()`.

export interface Leadership {
  /** True while this process holds the lease (checked before every claim or tick). */
  isLeader(): boolean;
  /** The fencing epoch this process last held the lease under; null if it never did. */
  epoch(): number | null;
  /** Called with the new value whenever isLeader() changes; returns an unsubscribe. */
  onChange(fn: (leader: boolean) => void): () => void;
  /** Who leads, as this replica last saw it (no database read); null while unknown (the database did not answer). */
  leader(): LeaderView | null;
}

/** The lease holder: its node id and fencing epoch, and whether it is this replica. */
export interface LeaderView {
  node: string;
  epoch: number;
  self: boolean;
}

/** A loop that only runs on the leader: `runs()` is its gate, and it is kicked when leadership arrives. */
export function whenLeader(leadership: Leadership, loop: { kick(): void }): { runs: () => boolean; dispose: () => void } {
  const dispose = leadership.onChange((leader) => {
    if (leader) loop.kick();
  });
  return { runs: () => leadership.isLeader(), dispose };
}
