// The `cleanup` command of host recovery: removes orphaned managed containers
// (the agent re-checks their ownership labels right before each removal),
// keeping the data of the persistent ones it was told to keep.

import type { Command, Host, JsonObject } from '../../domain/index.js';
import type { Logger } from '../../shared/logger.js';
import type { HostDriver } from '../drivers/host-driver.js';
import type { CommandHandler } from './command-handler.js';

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export class CleanupHandler implements CommandHandler {
  constructor(private readonly driver: HostDriver) {}

  async run(cmd: Command, host: Host, log: Logger): Promise<JsonObject> {
    const keepDataFor = strings(cmd.payload.keepDataFor);
    const report = await this.driver.cleanup(
      host,
      { instanceIds: strings(cmd.payload.instanceIds), keepDataFor },
      { commandId: cmd.id, requestId: cmd.requestId },
    );
    log.info({ hostId: host.id, removed: report.removed, skipped: report.skipped, dataKept: keepDataFor }, 'orphan cleanup done');
    return { removed: report.removed, skipped: report.skipped.map((s) => ({ ...s })), notFound: report.notFound };
  }

  /** Nothing to undo: the orphans stay listed and the next recovery decides again. */
  async failedForGood(): Promise<void> {}
}
