// Reads kept for a short time, per key, for hot paths that may act on a
// slightly old view because what they finally do is checked atomically
// elsewhere (an allocation's claim re-checks its instance). A kept value is
// reused for at most `ttlMs`, dropped at once by drop/dropAll (a change
// notification), and a read that a drop overtook while it was in flight is
// not kept. Concurrent misses of one key share the read in flight.

export interface KeptReadsOptions {
  ttlMs: number;
  now: () => number;
  /** Keys kept at most (the oldest kept is dropped first). */
  maxKeys?: number;
}

export class KeptReads<K, V> {
  private readonly kept = new Map<K, { value: V; at: number }>();
  private readonly pending = new Map<K, Promise<V>>();
  /** Bumped by every drop: a read started before it is not kept. */
  private generation = 0;

  constructor(private readonly opts: KeptReadsOptions) {}

  /** The kept value, when read less than ttlMs ago and not dropped since. */
  peek(key: K): V | undefined {
    const hit = this.kept.get(key);
    const now = this.opts.now();
    return hit && now - hit.at < this.opts.ttlMs && now >= hit.at ? hit.value : undefined;
  }

  /** The kept value, else `read` (shared by every caller while it is in flight). */
  get(key: K, read: () => Promise<V>): Promise<V> {
    const hit = this.peek(key);
    if (hit !== undefined) return Promise.resolve(hit);
    const pending = this.pending.get(key);
    if (pending) return pending;
    const p = this.read(key, read).finally(() => {
      if (this.pending.get(key) === p) this.pending.delete(key);
    });
    this.pending.set(key, p);
    return p;
  }

  /** Reads now (not shared with other callers) and keeps the value unless a drop overtook the read. */
  async read(key: K, read: () => Promise<V>): Promise<V> {
    const generation = this.generation;
    const at = this.opts.now();
    const value = await read();
    if (this.generation === generation) {
      this.kept.delete(key); // re-inserted last: the size bound drops the oldest read first
      this.kept.set(key, { value, at });
      if (this.kept.size > (this.opts.maxKeys ?? 1024)) this.kept.delete(this.kept.keys().next().value!);
    }
    return value;
  }

  /** Replaces a kept value by what `change` makes of it (its age unchanged); nothing when none is kept. */
  update(key: K, change: (value: V) => V): void {
    const hit = this.kept.get(key);
    if (hit) hit.value = change(hit.value);
  }

  drop(key: K): void {
    this.generation++;
    this.kept.delete(key);
    this.pending.delete(key);
  }

  dropAll(): void {
    this.generation++;
    this.kept.clear();
    this.pending.clear();
  }
}
