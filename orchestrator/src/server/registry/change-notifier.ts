// In-process change notifications for the registry feed: a Store decorator that
// emits after every committed write that can change an instance's routing view
// (instances, hosts, groups, system maintenance, router player sessions), so the
// feed refreshes at once instead of on its next poll (which stays as a safety net).

import type { Store } from '../../store/store.js';

export type ChangeKind = 'instance' | 'host' | 'group' | 'system' | 'players';
export interface StoreChange {
  kind: ChangeKind;
  /** The written row's id when the call names one. */
  id?: string;
}
export type ChangeListener = (change: StoreChange) => void;

/** The emitter the decorated store writes into and the registry feed listens to. */
export class InstanceChanges {
  private readonly listeners = new Set<ChangeListener>();

  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(change: StoreChange): void {
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

/** A write method, and (optionally) which of its results are a change worth announcing. */
type Watched = Readonly<Record<string, ((result: unknown) => boolean) | null>>;

/**
 * Write methods per repository that can change the registry view. A heartbeat
 * only refreshes lastHeartbeatAt (the view reads the host's status) unless it
 * created the host or brought it back from OFFLINE: only those announce.
 */
const WATCHED: Readonly<Record<string, { kind: ChangeKind; methods: Watched }>> = {
  instances: { kind: 'instance', methods: { create: null, update: null, transition: null, delete: null } },
  hosts: {
    kind: 'host',
    methods: {
      upsertHeartbeat: (r) => (r as { created?: boolean; startedRecovery?: boolean }).created === true || (r as { startedRecovery?: boolean }).startedRecovery === true,
      setStatus: (r) => r !== undefined, setMaintenance: null, markStaleOffline: (r) => Array.isArray(r) && r.length > 0, delete: null,
    },
  },
  groups: { kind: 'group', methods: { put: null, delete: null } },
  system: { kind: 'system', methods: { put: null, delete: null } },
  playerSessions: { kind: 'players', methods: { open: null, close: null, closeAllForRouter: null } },
};

/** Symbol under which a decorated store carries its emitter (see changesOf). */
const CHANGES = Symbol('endercloud.instanceChanges');

type Emit = (change: StoreChange) => void;

function changeOf(kind: ChangeKind, args: unknown[]): StoreChange {
  const first = args[0];
  if (typeof first === 'string') return { kind, id: first };
  if (first && typeof first === 'object' && typeof (first as { id?: unknown }).id === 'string') return { kind, id: (first as { id: string }).id };
  return { kind };
}

function wrapRepository<R extends object>(repo: R, kind: ChangeKind, methods: Watched, emit: Emit): R {
  return new Proxy(repo, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (typeof prop !== 'string' || !Object.hasOwn(methods, prop)) return fn.bind(target);
      const worthIt = methods[prop];
      return async (...args: unknown[]) => {
        const result = await fn.apply(target, args);
        if (!worthIt || worthIt(result)) emit(changeOf(kind, args));
        return result;
      };
    },
  });
}

function decorate(store: Store, changes: InstanceChanges, emit: Emit): Store {
  const wrapped = new Map<string | symbol, unknown>();
  for (const [name, spec] of Object.entries(WATCHED)) {
    wrapped.set(name, wrapRepository((store as unknown as Record<string, object>)[name]!, spec.kind, spec.methods, emit));
  }
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === CHANGES) return changes;
      if (wrapped.has(prop)) return wrapped.get(prop);
      if (prop === 'transaction') {
        // Changes made inside are held back and emitted only once the outermost transaction commits;
        // a rollback discards them. A nested tx.transaction(fn) runs inside the same buffer.
        return async <T>(fn: (tx: Store) => Promise<T>): Promise<T> => {
          const pending: StoreChange[] = [];
          const result = await target.transaction((tx) => fn(decorateInTransaction(tx, changes, pending)));
          for (const change of pending) emit(change);
          return result;
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function decorateInTransaction(tx: Store, changes: InstanceChanges, pending: StoreChange[]): Store {
  const inner = decorate(tx, changes, (change) => pending.push(change));
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'transaction') return <T>(fn: (t: Store) => Promise<T>): Promise<T> => tx.transaction(() => fn(inner));
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

/** The store with change notifications; every other method passes through untouched. */
export function observeStore(store: Store, changes: InstanceChanges): Store {
  return decorate(store, changes, (change) => changes.emit(change));
}

/** The emitter of a store built by observeStore (undefined for a plain store: the feed then polls). */
export function changesOf(store: Store): InstanceChanges | undefined {
  const value = (store as unknown as Record<symbol, unknown>)[CHANGES];
  return value instanceof InstanceChanges ? value : undefined;
}
