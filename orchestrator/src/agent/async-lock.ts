// Promise-chained mutual exclusion: one lock for the agent's port choice and
// container creation, and one per instance id (InstanceService.instanceLocks,
// shared with backups and imports) so every action on one instance runs one at
// a time (Wings' per-server power lock, but queued, not refused).

export class AsyncLock {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn, fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** `onQueued` hears of a call that waits behind another one for the same key. */
  constructor(private readonly onQueued?: (key: string) => void) {}

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const held = this.tails.get(key);
    if (held !== undefined) this.onQueued?.(key);
    const previous = held ?? Promise.resolve();
    const result = previous.then(fn, fn);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    // Forget the key once nothing is queued behind this call, so the map stays small.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
