// The router's copy of the orchestrator registry: applies a snapshot and the
// numbered changes after it, detects gaps, and notifies listeners. Pure state;
// the registry client feeds it from the stream, tests feed it a snapshot object.

import type { RegistryBackend, RegistryRemove, RegistrySnapshot, RegistryUpsert } from '../protocol/registry-contract.js';

export type RegistryChange =
  | { kind: 'snapshot'; revision: number }
  | { kind: 'upsert'; revision: number; backend: RegistryBackend; previous: RegistryBackend | undefined }
  | { kind: 'remove'; revision: number; instanceId: string; previous: RegistryBackend | undefined };

export type ApplyResult = 'applied' | 'duplicate' | 'gap';

/** What the resolver and the waker read. */
export interface RegistryReader {
  /** True once any snapshot arrived (kept true while the orchestrator is unreachable). */
  readonly synced: boolean;
  /** True while the change stream is open and in sync. */
  readonly connected: boolean;
  get(instanceId: string): RegistryBackend | undefined;
  backends(): readonly RegistryBackend[];
  subscribe(listener: (change: RegistryChange) => void): () => void;
}

export class RegistryState implements RegistryReader {
  private byId = new Map<string, RegistryBackend>();
  private readonly listeners = new Set<(change: RegistryChange) => void>();
  private rev = -1;
  connected = false;

  /** A state already holding `snapshot` (for tests and tools). */
  static from(snapshot: RegistrySnapshot, connected = true): RegistryState {
    const s = new RegistryState();
    s.applySnapshot(snapshot);
    s.connected = connected;
    return s;
  }

  get synced(): boolean {
    return this.rev >= 0;
  }

  get revision(): number {
    return this.rev;
  }

  get(instanceId: string): RegistryBackend | undefined {
    return this.byId.get(instanceId);
  }

  backends(): readonly RegistryBackend[] {
    return [...this.byId.values()];
  }

  subscribe(listener: (change: RegistryChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A snapshot replaces everything, whatever its revision (a restarted orchestrator may count afresh). */
  applySnapshot(snapshot: RegistrySnapshot): void {
    this.byId = new Map(snapshot.backends.map((b) => [b.instanceId, b]));
    this.rev = snapshot.revision;
    this.emit({ kind: 'snapshot', revision: snapshot.revision });
  }

  applyUpsert(u: RegistryUpsert): ApplyResult {
    const check = this.sequence(u.revision);
    if (check !== 'applied') return check;
    const previous = this.byId.get(u.backend.instanceId);
    this.byId.set(u.backend.instanceId, u.backend);
    this.rev = u.revision;
    this.emit({ kind: 'upsert', revision: u.revision, backend: u.backend, previous });
    return 'applied';
  }

  applyRemove(r: RegistryRemove): ApplyResult {
    const check = this.sequence(r.revision);
    if (check !== 'applied') return check;
    const previous = this.byId.get(r.instanceId);
    this.byId.delete(r.instanceId);
    this.rev = r.revision;
    this.emit({ kind: 'remove', revision: r.revision, instanceId: r.instanceId, previous });
    return 'applied';
  }

  /** Each change is exactly last+1; older numbers are replays, newer ones mean we missed something. */
  private sequence(revision: number): ApplyResult {
    if (!this.synced || revision > this.rev + 1) return 'gap';
    if (revision <= this.rev) return 'duplicate';
    return 'applied';
  }

  private emit(change: RegistryChange): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch {
        // a failing listener must not stop the others or the stream
      }
    }
  }
}
