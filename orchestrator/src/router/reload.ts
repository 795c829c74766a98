// Hot reload: SIGHUP and changes to the config file (debounced: editors write a
// file in several steps, or replace it) re-read the TOML; a valid one applies to
// new connections, an invalid one is refused with one log line and the old one stays.

import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../shared/logger.js';
import { realTimers, type Timers } from '../shared/timers.js';
import { reloadRouterConfig, restartOnlyChanges, type RouterConfig } from './config.js';
import type { Router } from './router.js';
import type { RouterParts } from './router-parts.js';

export interface Reloader {
  /** Re-reads the file now; true when the new configuration is in force. */
  reload(trigger: string): boolean;
  readonly current: Readonly<RouterConfig>;
}

export function createReloader(
  initial: Readonly<RouterConfig>,
  router: Router,
  parts: Pick<RouterParts, 'reconfigure'>,
  logger: Logger,
  readFile?: (path: string) => string,
): Reloader {
  let current = initial;
  return {
    get current() {
      return current;
    },
    reload(trigger: string): boolean {
      let next: Readonly<RouterConfig>;
      try {
        next = reloadRouterConfig(current, readFile);
      } catch (err) {
        logger.error(
          { trigger, err: (err as Error).message },
          `config reload refused, keeping the running configuration: ${(err as Error).message}`,
        );
        return false;
      }
      const ignored = restartOnlyChanges(current, next);
      router.reload(next, parts.reconfigure(next));
      current = next;
      logger.info(
        { trigger, servers: Object.keys(next.routing.servers).length, ...(ignored.length > 0 ? { needsRestart: ignored } : {}) },
        'config reloaded; new connections use it',
      );
      return true;
    },
  };
}

/** Watches the config file's directory (a replaced file keeps firing there) and calls `onChange` once things settle. */
export function watchConfigFile(path: string, onChange: () => void, debounceMs = 250, timers: Timers = realTimers): { close(): void } {
  const name = basename(path);
  let timer: unknown;
  let watcher: FSWatcher | undefined;
  const fire = (): void => {
    timers.clearTimeout(timer);
    timer = timers.setTimeout(onChange, debounceMs);
  };
  watcher = watch(dirname(path), { persistent: false }, (_event, file) => {
    if (file === null || file === name) fire();
  });
  watcher.on('error', () => undefined);
  return {
    close: () => {
      timers.clearTimeout(timer);
      watcher?.close();
      watcher = undefined;
    },
  };
}
