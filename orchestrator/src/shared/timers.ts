// Injected timer functions, so periodic work (heartbeats, reconnect backoff,
// supervisors) can be driven by fake timers in tests.

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Like realTimers, but the timers never keep the process alive on their own. */
export const unrefTimers: Timers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Resolves after `ms` on the given timers (real, unref'd ones by default); the one sleep every waiting loop uses. */
export function sleep(ms: number, timers: Timers = unrefTimers): Promise<void> {
  return new Promise<void>((resolve) => {
    timers.setTimeout(resolve, ms);
  });
}
