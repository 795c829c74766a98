// The store adapter that feeds the change port: every committed write that can
// change what a router or the panel shows (instances, hosts, groups, system
// maintenance, player sessions) is published once it commits — inside a
// transaction only after the outermost commit, and never after a rollback.
// Each watched write method is wrapped explicitly below; reads pass through.

import type {
  GroupRepository,
  HostRepository,
  InstanceRepository,
  PlayerSessionRepository,
  Store,
  SystemSettingsRepository,
} from '../../store/store.js';
import type { Change, ChangePort } from './change-port.js';

type Emit = (change: Change) => void;

/** One committed state change, as the composition root logs it (one info line per transition). */
export interface TransitionRecord {
  instanceId: string;
  instance: string;
  from: string | null;
  to: string;
  event: string | null;
  reason: string;
  actor: string | null;
  commandId: string | null;
}

export interface NotifyingStoreOptions {
  /** Called once per transition, after its transaction commits (never for a rolled-back one). */
  onTransition?: (t: TransitionRecord) => void;
}

/** Runs now outside a transaction, or after the outermost commit inside one. */
type After = (fn: () => void) => void;

/** `base` with some methods replaced; the others (and fields) resolve on `base` itself. */
function override<R extends object>(base: R, methods: Partial<R>): R {
  return Object.assign(Object.create(base) as R, methods);
}

async function announce<T>(result: Promise<T>, emit: Emit, change: Change, worthIt: (r: T) => boolean = () => true): Promise<T> {
  const value = await result;
  if (worthIt(value)) emit(change);
  return value;
}

function instances(r: InstanceRepository, emit: Emit, after: After, options: NotifyingStoreOptions): InstanceRepository {
  const changed = (id: string): Change => ({ kind: 'instance', id });
  return override(r, {
    create: (instance) => announce(r.create(instance), emit, changed(instance.id)),
    update: (id, patch, opts) => announce(r.update(id, patch, opts), emit, changed(id)),
    claimForSession: async (candidates, sessionId, opts) => {
      const claimed = await r.claimForSession(candidates, sessionId, opts);
      if (claimed) emit(changed(claimed.id));
      return claimed;
    },
    releaseSession: async (sessionId, now, opts) => {
      const released = await r.releaseSession(sessionId, now, opts);
      if (released?.instanceFreed) emit(changed(released.session.instanceId));
      return released;
    },
    transition: async (id, to, opts) => {
      const moved = await announce(r.transition(id, to, opts), emit, changed(id));
      const log = options.onTransition;
      if (moved && log) {
        const event = typeof opts.details?.event === 'string' ? opts.details.event : null;
        after(() =>
          log({
            instanceId: id,
            instance: moved.name,
            from: opts.from?.[0] ?? null,
            to,
            event,
            reason: opts.reason,
            actor: opts.actor ?? null,
            commandId: opts.commandId ?? null,
          }),
        );
      }
      return moved;
    },
    delete: (id) => announce(r.delete(id), emit, changed(id)),
  });
}

/** A heartbeat only refreshes lastHeartbeatAt unless it created the host or started its recovery. */
function hosts(r: HostRepository, emit: Emit): HostRepository {
  const changed = (id?: string): Change => (id === undefined ? { kind: 'host' } : { kind: 'host', id });
  return override(r, {
    upsertHeartbeat: (hb, now, opts) =>
      announce(r.upsertHeartbeat(hb, now, opts), emit, changed(hb.id), (res) => res.created || res.startedRecovery),
    setStatus: (id, to, opts) => announce(r.setStatus(id, to, opts), emit, changed(id), (res) => res !== undefined),
    setMaintenance: (id, maintenance, now) => announce(r.setMaintenance(id, maintenance, now), emit, changed(id)),
    markStaleOffline: (now, missed) => announce(r.markStaleOffline(now, missed), emit, changed(), (ids) => ids.length > 0),
    delete: (id) => announce(r.delete(id), emit, changed(id)),
    enrol: (e, now) => announce(r.enrol(e, now), emit, changed(e.heartbeat.id)),
    revokeCredential: (id, now) => announce(r.revokeCredential(id, now), emit, changed(id)),
  });
}

function groups(r: GroupRepository, emit: Emit): GroupRepository {
  return override(r, {
    put: (group) => announce(r.put(group), emit, { kind: 'group', id: group.id }),
    delete: (id) => announce(r.delete(id), emit, { kind: 'group', id }),
  });
}

function system(r: SystemSettingsRepository, emit: Emit): SystemSettingsRepository {
  return override(r, {
    put: (key, value, now) => announce(r.put(key, value, now), emit, { kind: 'system', id: key }),
    delete: (key) => announce(r.delete(key), emit, { kind: 'system', id: key }),
  });
}

function playerSessions(r: PlayerSessionRepository, emit: Emit): PlayerSessionRepository {
  return override(r, {
    open: (session) => announce(r.open(session), emit, { kind: 'players', id: session.id }),
    close: (id, now, reason) => announce(r.close(id, now, reason), emit, { kind: 'players', id }),
    closeAllForRouter: (routerId, now, reason) =>
      announce(r.closeAllForRouter(routerId, now, reason), emit, { kind: 'players', id: routerId }),
  });
}

function wrap(store: Store, emit: Emit, after: After, options: NotifyingStoreOptions, transaction: Store['transaction']): Store {
  return override(store, {
    instances: instances(store.instances, emit, after, options),
    hosts: hosts(store.hosts, emit),
    groups: groups(store.groups, emit),
    system: system(store.system, emit),
    playerSessions: playerSessions(store.playerSessions, emit),
    transaction,
  });
}

/** The store whose committed writes are published to `port`; every other call passes through untouched. */
export function notifyingStore(store: Store, port: ChangePort, options: NotifyingStoreOptions = {}): Store {
  const emit: Emit = (change) => port.publish(change);
  const now: After = (fn) => fn();
  return wrap(store, emit, now, options, async (fn) => {
    // Held back until the outermost transaction commits; a rollback discards them.
    const pending: (() => void)[] = [];
    const later: After = (f) => void pending.push(f);
    const result = await store.transaction((tx) => {
      const inner: Store = wrap(
        tx,
        (change) => later(() => emit(change)),
        later,
        options,
        (nested) => tx.transaction(() => nested(inner)),
      );
      return fn(inner);
    });
    for (const f of pending) f();
    return result;
  });
}
