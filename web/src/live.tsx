// Live data without polling: one EventSource on /api/v1/events; a resource
// refetches when a change of its kind (and id) arrives, and after every
// (re)connect, since events missed while disconnected are not replayed.

import { createContext, useCallback, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import type { ChangeKind, Change as ContractChange } from '../../orchestrator/src/contracts/public-api/panel-rules.js';
import { api, ApiError, call } from './api';

export type { ChangeKind };
/** A `change` event of GET /events, or the stream's own `ready` after each (re)connect. */
export type Change = ContractChange | { kind: 'ready'; id?: undefined };
type Listener = (change: Change) => void;

interface Live {
  subscribe(listener: Listener): () => void;
  connected: boolean;
}

const LiveContext = createContext<Live>({ subscribe: () => () => undefined, connected: false });

export function LiveProvider({ children, onUnauthorized }: { children: ReactNode; onUnauthorized: () => void }) {
  const listeners = useRef(new Set<Listener>());
  const [connected, setConnected] = useState(false);
  useEffect(() => {
    const source = new EventSource('/api/v1/events');
    const emit = (c: Change) => {
      for (const l of [...listeners.current]) l(c);
    };
    source.addEventListener('ready', () => {
      setConnected(true);
      emit({ kind: 'ready' });
    });
    source.addEventListener('change', (e) => {
      try {
        emit(JSON.parse((e as MessageEvent<string>).data) as Change);
      } catch {
        // a malformed event is ignored
      }
    });
    source.onerror = () => {
      setConnected(false);
      // The browser reconnects by itself; a 401 (session gone) closes the stream: check the session.
      if (source.readyState === EventSource.CLOSED) {
        call('GET /session', {}).then(
          (s) => {
            if (!s.authenticated) onUnauthorized();
          },
          (err: unknown) => {
            if (err instanceof ApiError && err.status === 401) onUnauthorized();
          },
        );
      }
    };
    return () => source.close();
  }, [onUnauthorized]);
  const subscribe = useCallback((l: Listener) => {
    listeners.current.add(l);
    return () => {
      listeners.current.delete(l);
    };
  }, []);
  return <LiveContext.Provider value={{ subscribe, connected }}>{children}</LiveContext.Provider>;
}

export function useLive(): Live {
  return useContext(LiveContext);
}

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * GET `path` now and again after a change of one of `kinds` (only for `id` when given).
 * `path` null: nothing is fetched.
 */
export function useResource<T>(path: string | null, kinds: readonly ChangeKind[], id?: string): Resource<T> {
  const { subscribe } = useLive();
  // Each answer remembers its path: a view whose path changes (one instance page to another)
  // never shows the previous resource's data under the new one, not even for one render.
  const [state, setState] = useState<{ path: string | null; data?: T; error?: Error; loading: boolean }>({ path, loading: true });
  const seq = useRef(0);
  const inFlight = useRef(false);
  const again = useRef(false);
  /** The load of the current path: a fetch that ends runs the queued one for the path shown now. */
  const latest = useRef<() => void>(() => undefined);
  const load = useCallback(() => {
    if (path === null) return;
    if (inFlight.current) {
      again.current = true;
      return;
    }
    inFlight.current = true;
    const mine = ++seq.current;
    // `T` is the route's Answer (callers name it: useResource<Answer<'GET /hosts'>>(path('GET /hosts', {}), …)).
    api('GET', path)
      .then(
        (data) => mine === seq.current && setState({ path, data: data as T, loading: false }),
        (error: Error) =>
          mine === seq.current && setState((s) => (s.path === path ? { ...s, error, loading: false } : { path, error, loading: false })),
      )
      .finally(() => {
        inFlight.current = false;
        if (again.current) {
          again.current = false;
          latest.current();
        }
      });
  }, [path]);
  latest.current = load;
  useEffect(() => {
    setState({ path, loading: true });
    load();
  }, [load, path]);
  const kindKey = kinds.join(',');
  useEffect(
    () =>
      subscribe((c) => {
        if (c.kind === 'ready' || (kindKey.split(',').includes(c.kind) && (id === undefined || c.id === undefined || c.id === id))) load();
      }),
    [subscribe, load, kindKey, id],
  );
  const current = state.path === path;
  return {
    data: current ? state.data : undefined,
    error: current ? state.error : undefined,
    loading: current ? state.loading : true,
    reload: load,
  };
}

/** The current time, ticking every `everyMs` while mounted (countdowns and ages that move on their own). */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}
