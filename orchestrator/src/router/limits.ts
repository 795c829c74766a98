// Per-client connection counting and login rate limiting; pure state with an
// injected clock so windows are tested in milliseconds.

export class ConnectionLimiter {
  private readonly open = new Map<string, number>();
  constructor(private maxPerKey: number) {}

  /** Hot reload: a new bound; current holders keep their slots. */
  setMax(maxPerKey: number): void {
    this.maxPerKey = maxPerKey;
  }

  /** Takes a slot for key; false when the key already holds maxPerKey (0 = unlimited). */
  tryAcquire(key: string): boolean {
    const n = this.open.get(key) ?? 0;
    if (this.maxPerKey > 0 && n >= this.maxPerKey) return false;
    this.open.set(key, n + 1);
    return true;
  }

  release(key: string): void {
    const n = this.open.get(key) ?? 0;
    if (n <= 1) this.open.delete(key);
    else this.open.set(key, n - 1);
  }

  count(key: string): number {
    return this.open.get(key) ?? 0;
  }
}

/** Velocity-style login rate limit: at most one login per key per interval. */
export class LoginRateLimiter {
  private readonly last = new Map<string, number>();
  constructor(
    private intervalMs: number,
    private readonly now: () => number,
    private readonly maxKeys = 100_000,
  ) {}

  setInterval(intervalMs: number): void {
    this.intervalMs = intervalMs;
  }

  allow(key: string): boolean {
    if (this.intervalMs <= 0) return true;
    const t = this.now();
    const prev = this.last.get(key);
    if (prev !== undefined && t - prev < this.intervalMs) return false;
    this.last.set(key, t);
    if (this.last.size > this.maxKeys) this.prune(t);
    return true;
  }

  /** Forgets keys whose window has passed, so memory stays bounded under floods. */
  prune(t = this.now()): void {
    for (const [k, v] of this.last) if (t - v >= this.intervalMs) this.last.delete(k);
    // Still over the cap under a flood of fresh keys: forget the oldest entries.
    for (const k of this.last.keys()) {
      if (this.last.size <= this.maxKeys) break;
      this.last.delete(k);
    }
  }

  get size(): number {
    return this.last.size;
  }
}
