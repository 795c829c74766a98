// Per-client limit on failed authentication (issue 26): a token bucket per
// client address holding `limit` attempts and refilling `limit` per `windowMs`.
// An attempt that presents credentials takes a token before they are checked
// (so concurrent guesses are bounded too) and gets it back when it succeeds:
// only failures spend the budget. Pure, on an injected clock; memory is bounded
// (the least recently touched address is forgotten first).

export interface FailureLimit {
  /** Failed attempts allowed in a burst, and refilled per window. */
  limit: number;
  windowMs: number;
}

/** Addresses remembered at most; past it the least recently touched one is forgotten. */
export const DEFAULT_MAX_CLIENTS = 10_000;

export type AttemptAnswer = { allowed: true } | { allowed: false; retryAfterMs: number };

interface Bucket {
  tokens: number;
  at: number;
}

export class FailureLimiter {
  /** Insertion order is recency: a touched key is re-inserted at the end. */
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly rule: FailureLimit,
    private readonly maxClients = DEFAULT_MAX_CLIENTS,
  ) {}

  get size(): number {
    return this.buckets.size;
  }

  /** Takes one attempt for `key` at `now`, or says how long until one is available. */
  attempt(key: string, now: number): AttemptAnswer {
    const bucket = this.refilled(key, now);
    if (bucket.tokens >= 1) {
      this.store(key, { tokens: bucket.tokens - 1, at: now });
      return { allowed: true };
    }
    const msPerToken = this.rule.windowMs / this.rule.limit;
    return { allowed: false, retryAfterMs: Math.max(1, Math.ceil((1 - bucket.tokens) * msPerToken)) };
  }

  /** Gives back the attempt of a request whose credentials were good (or that was not an authentication failure). */
  succeeded(key: string, now: number): void {
    const bucket = this.refilled(key, now);
    const tokens = Math.min(this.rule.limit, bucket.tokens + 1);
    // A full bucket is the same as none: forget the address.
    if (tokens >= this.rule.limit) this.buckets.delete(key);
    else this.store(key, { tokens, at: now });
  }

  private refilled(key: string, now: number): Bucket {
    const b = this.buckets.get(key);
    if (!b) return { tokens: this.rule.limit, at: now };
    const elapsed = Math.max(0, now - b.at);
    return { tokens: Math.min(this.rule.limit, b.tokens + (elapsed * this.rule.limit) / this.rule.windowMs), at: now };
  }

  private store(key: string, bucket: Bucket): void {
    this.buckets.delete(key);
    if (this.buckets.size >= this.maxClients) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
    this.buckets.set(key, bucket);
  }
}

/**
 * The key a client address is counted under: an IPv4 address (also written
 * IPv4-mapped, ::ffff:a.b.c.d) as is, an IPv6 address by its /64, which one
 * host or subscriber usually holds whole.
 */
export function clientKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(':')) return address;
  const groups = expandIpv6(address.split('%')[0]!);
  return groups === undefined ? address : `${groups.slice(0, 4).join(':')}::/64`;
}

function expandIpv6(address: string): string[] | undefined {
  const halves = address.toLowerCase().split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  const groups = [...head, ...Array<string>(missing).fill('0'), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return groups.map((g) => g.replace(/^0+(?=.)/, ''));
}

/** ENDERCLOUD_AUTH_FAILURE_LIMIT: `<count>/<duration>` (e.g. 10/1m), or `off`. */
export function parseFailureLimit(value: string): FailureLimit | undefined {
  const v = value.trim();
  if (v === 'off') return undefined;
  const match = /^(\d+)\/(\d+)(ms|s|m|h)$/.exec(v);
  if (!match) throw new Error(`"${value}" is not <count>/<duration> (e.g. 10/1m) or off`);
  const limit = Number(match[1]);
  const windowMs = Number(match[2]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[3] as 'ms' | 's' | 'm' | 'h'];
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1_000_000) throw new Error(`the count in "${value}" must be 1-1000000`);
  if (!Number.isSafeInteger(windowMs) || windowMs < 1000 || windowMs > 24 * 3_600_000)
    throw new Error(`the duration in "${value}" must be 1s-24h`);
  return { limit, windowMs };
}
