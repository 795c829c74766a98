// Abort-aware waiting used while a login is held for a waking backend.

import { realTimers, type Timers } from '../shared/timers.js';

export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('wake hold ended'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

export function sleep(ms: number, signal: AbortSignal, timers: Timers = realTimers): Promise<void> {
  return new Promise((resolve) => {
    const t = timers.setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        timers.clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
