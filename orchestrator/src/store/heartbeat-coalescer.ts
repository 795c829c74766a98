// Heartbeats that change nothing but the beat time are not written one by one:
// the hosts repository answers them from the row it last wrote and records the
// time here; one UPDATE per flush (at most every HEARTBEAT_FLUSH_MS) writes the
// pending beat times of all hosts. Any write that may change what a heartbeat
// answers (status, maintenance, delete, a flush that finds another status)
// forgets the host, so its next beat is a full upsert again.

import type { EpochMs, Host, HostHeartbeat } from '../domain/index.js';

/** The longest a coalesced beat time waits before it is in the database. */
export const HEARTBEAT_FLUSH_MS = 1000;
/** A host's beats are coalesced at most this long (clock time) after its last full upsert. */
export const HEARTBEAT_FULL_WRITE_EVERY_MS = 30_000;
/** Hosts beating faster than this are always written in full (see `coalesce`). */
export const MIN_COALESCED_INTERVAL_MS = 2 * HEARTBEAT_FLUSH_MS;
const COALESCED_STATUSES: readonly Host['status'][] = ['ONLINE', 'MAINTENANCE'];

interface Known {
  fingerprint: string;
  host: Host;
  writtenAt: EpochMs;
}

export class HeartbeatCoalescer {
  private readonly known = new Map<string, Known>();
  private readonly pending = new Map<string, EpochMs>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private flushing: Promise<void> | undefined;

  /** @param write persists beat times and answers the current status of each host it found. */
  constructor(
    private readonly write: (beats: ReadonlyArray<{ id: string; at: EpochMs }>) => Promise<Array<{ id: string; status: string }>>,
  ) {}

  /** The answer for a beat that changes nothing but its time (and records the time), or undefined: write it in full. */
  coalesce(hb: HostHeartbeat, now: EpochMs, via = ''): Host | undefined {
    const known = this.known.get(hb.id);
    if (!known || known.fingerprint !== fingerprint(hb, via) || !COALESCED_STATUSES.includes(known.host.status)) return undefined;
    // The database lags a coalesced beat by up to one flush; another replica's offline detector
    // reads it there. Only hosts that beat at least twice as slowly are coalesced, so the lag stays
    // under half an interval (300 ms beats coalesced by a 1 s flush looked missed to the leader).
    if (hb.heartbeatIntervalMs < MIN_COALESCED_INTERVAL_MS) return undefined;
    if (now < known.host.lastHeartbeatAt || now - known.writtenAt >= HEARTBEAT_FULL_WRITE_EVERY_MS) return undefined;
    this.pending.set(hb.id, Math.max(now, this.pending.get(hb.id) ?? 0));
    this.timer ??= setTimeout(() => void this.flush(), HEARTBEAT_FLUSH_MS).unref();
    return { ...known.host, lastHeartbeatAt: now, updatedAt: now };
  }

  /** After a full upsert: the row it wrote is the answer for the beats that follow. */
  written(hb: HostHeartbeat, host: Host, now: EpochMs, via = ''): void {
    this.pending.delete(hb.id);
    if (COALESCED_STATUSES.includes(host.status)) this.known.set(hb.id, { fingerprint: fingerprint(hb, via), host, writtenAt: now });
    else this.known.delete(hb.id);
  }

  forget(id: string): void {
    this.known.delete(id);
  }

  forgetAll(): void {
    this.known.clear();
  }

  /** The pending (not yet written) beat time of a host, for reads through this store. */
  pendingAt(id: string): EpochMs | undefined {
    return this.pending.get(id);
  }

  /** Writes every pending beat time now (one statement per 500 hosts). */
  async flush(): Promise<void> {
    if (this.flushing) await this.flushing;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return;
    const beats = [...this.pending].map(([id, at]) => ({ id, at }));
    this.pending.clear();
    this.flushing = this.writeAll(beats).finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  private async writeAll(beats: Array<{ id: string; at: EpochMs }>): Promise<void> {
    for (let i = 0; i < beats.length; i += 500) {
      const chunk = beats.slice(i, i + 500);
      let found: Array<{ id: string; status: string }>;
      try {
        found = await this.write(chunk);
      } catch {
        // Not lost: the next beat of each of these hosts is a full upsert.
        for (const b of chunk) this.known.delete(b.id);
        continue;
      }
      const status = new Map(found.map((r) => [r.id, r.status]));
      for (const b of chunk) {
        // Deleted, or its status changed elsewhere (another replica, an operator): the next beat writes in full.
        if (status.get(b.id) !== this.known.get(b.id)?.host.status) this.known.delete(b.id);
      }
    }
  }

  /** Flushes and stops the timer (store close). */
  async close(): Promise<void> {
    await this.flush();
    this.known.clear();
  }
}

/** Everything a heartbeat reports except its time. */
/** `via`: how the beat was authenticated (a beat with another kind of credential is never answered from memory). */
function fingerprint(hb: HostHeartbeat, via: string): string {
  return `${via}:${JSON.stringify(hb)}`;
}
