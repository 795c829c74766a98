// How every EnderCloud process ends on SIGTERM or SIGINT: once, with one log
// line, running its own stop (game containers are never stopped by it), then
// exiting 0.

import type { Logger } from './logger.js';

export function exitOnSignals(logger: Logger, what: string, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, `${what} shutting down`);
    await stop();
    process.exit(0);
  };
  process.once('SIGTERM', (s) => void shutdown(s));
  process.once('SIGINT', (s) => void shutdown(s));
}
