// Readiness (GET /api/v1/ready), apart from liveness (GET /api/v1/health,
// which never touches the database): can this replica store what it is sent?
// One `select 1` bounded by ENDERCLOUD_READY_TIMEOUT; checks that arrive while
// one is in flight share it, so a load balancer probing a replica cut from the
// database never piles up connection attempts.

import { performance } from 'node:perf_hooks';
import { AppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';

export interface ReadyAnswer {
  status: 'ready';
  database: Store['dialect'];
  latencyMs: number;
}

export class DatabaseReadiness {
  private inFlight: Promise<void> | undefined;

  constructor(private readonly deps: { store: Pick<Store, 'ping' | 'dialect'>; timeoutMs: number }) {}

  /** Resolves when the database answered within the bound; otherwise DATABASE_UNAVAILABLE naming why. */
  async check(): Promise<ReadyAnswer> {
    const started = performance.now();
    this.inFlight ??= this.deps.store.ping().finally(() => {
      this.inFlight = undefined;
    });
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new AppError('DATABASE_UNAVAILABLE', `the ${this.deps.store.dialect} database did not answer within ${this.deps.timeoutMs} ms`),
          ),
        this.deps.timeoutMs,
      );
    });
    try {
      await Promise.race([this.inFlight, bound]);
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw new AppError('DATABASE_UNAVAILABLE', `the ${this.deps.store.dialect} database is unreachable: ${(err as Error).message}`, {
        cause: err,
      });
    } finally {
      clearTimeout(timer);
    }
    return { status: 'ready', database: this.deps.store.dialect, latencyMs: Math.round(performance.now() - started) };
  }
}
