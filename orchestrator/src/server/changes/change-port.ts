// The change port: how the control plane tells its listeners (the registry
// feed that routers follow, later the panel's event stream) that something
// they show has changed. Owned by the service layer; the in-process adapter
// below serves one orchestrator, and a cross-replica adapter (PostgreSQL
// LISTEN/NOTIFY, Redis pub/sub) implements the same two verbs.

// The kinds and the event shape are the public contract's: GET /events streams them to the panel.
export type { Change, ChangeKind } from '../../contracts/public-api/panel-rules.js';
import type { Change } from '../../contracts/public-api/panel-rules.js';

export type ChangeListener = (change: Change) => void;

export interface ChangePort {
  /** Announces a committed change; never throws into the writer. */
  publish(change: Change): void;
  /** Listens until the returned function is called. */
  subscribe(listener: ChangeListener): () => void;
  /**
   * False while other replicas' changes may go unheard (the LISTEN or
   * subscriber connection is down); listeners then read everything on their
   * poll. Absent: always complete (one process).
   */
  readonly connected?: boolean;
}

/** One process: listeners are called synchronously, each isolated from the others' failures. */
export class InProcessChangePort implements ChangePort {
  private readonly listeners = new Set<ChangeListener>();

  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(change: Change): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch {
        // a failing listener must not fail the write that already committed
      }
    }
  }

  get listenerCount(): number {
    return this.listeners.size;
  }
}
