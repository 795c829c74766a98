// SIMULATION: what two orchestrator replicas share in one process. Their one
// database is the simulation's SQLite store, seen by each replica through a
// cut-able view (a replica cut from the database gets a connection error from
// every store call, as a replica behind a broken network would), and their
// reconciler lease runs on the manual clock: the lease row keeps the
// semantics of the store's one conditional upsert (src/store/repos/leases.ts:
// taken when free or expired with epoch + 1, renewed by its holder, expired at
// once on a resignation), timed by the database clock — here the manual
// clock, since SQLite's own `julianday('now')` is the wall clock. The real
// LeaderLease (src/server/leadership/leader-lease.ts) drives it in each replica.

import type { EpochMs } from '../domain/index.js';
import type { ManualClock } from '../server/clock.js';
import type { LeaseRecord, LeaseRepository, Store } from '../store/store.js';

export class SimLeases implements LeaseRepository {
  private readonly rows = new Map<string, LeaseRecord>();

  constructor(private readonly clock: ManualClock) {}

  async now(): Promise<EpochMs> {
    return this.clock.now();
  }

  async acquire(name: string, holder: string, ttlMs: number): Promise<LeaseRecord | undefined> {
    const now = this.clock.now();
    const row = this.rows.get(name);
    const expiresAt = now + Math.max(1, Math.floor(ttlMs));
    if (!row) {
      this.rows.set(name, { name, holder, epoch: 1, expiresAt });
    } else if (row.holder === holder || row.expiresAt <= now) {
      this.rows.set(name, { name, holder, epoch: row.holder === holder ? row.epoch : row.epoch + 1, expiresAt });
    } else {
      return undefined;
    }
    return { ...this.rows.get(name)! };
  }

  async release(name: string, holder: string): Promise<boolean> {
    const row = this.rows.get(name);
    if (!row || row.holder !== holder) return false;
    row.expiresAt = this.clock.now();
    return true;
  }

  async get(name: string): Promise<LeaseRecord | undefined> {
    const row = this.rows.get(name);
    return row && { ...row };
  }
}

/** The shared store with its leases on the manual clock (every other repository is the store's own). */
export function withSimLeases(store: Store, leases: SimLeases): Store {
  const view = Object.create(store) as Store & { leases: LeaseRepository };
  Object.defineProperty(view, 'leases', { value: leases, writable: true, configurable: true, enumerable: true });
  return view;
}

/** Thrown by every call of a cut replica's store: what the pg driver gives when the network to the database is gone. */
function databaseCutError(): Error {
  return Object.assign(new Error('connect ETIMEDOUT: the database is unreachable from this replica (simulated cut)'), {
    code: 'ETIMEDOUT',
  });
}

/** A replica's view of the store: while `isCut()`, every method of every repository throws a connection error. */
export function cuttableStore(store: Store, isCut: () => boolean): Store {
  const views = new WeakMap<object, object>();
  const wrap = <T extends object>(target: T): T => {
    const known = views.get(target);
    if (known) return known as T;
    const view = new Proxy(target, {
      get(t, p) {
        const v: unknown = Reflect.get(t, p, t);
        if (typeof v === 'function')
          return (...args: unknown[]) => {
            if (isCut()) throw databaseCutError();
            return (v as (...a: unknown[]) => unknown).apply(t, args);
          };
        if (v !== null && typeof v === 'object' && p !== 'ctx') return wrap(v);
        return v;
      },
    });
    views.set(target, view);
    return view;
  };
  return wrap(store);
}
