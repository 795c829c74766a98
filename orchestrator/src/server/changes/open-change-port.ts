// Chooses the change port from the configuration (docs/production.md):
// ENDERCLOUD_REDIS_URL set → Redis pub/sub on this deployment's own channel
// (ENDERCLOUD_REDIS_PREFIX or one derived from the database); a PostgreSQL store → LISTEN/NOTIFY
// on the same database; otherwise (SQLite, one process) in-process.

import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { OrchestratorConfig } from '../config.js';
import { InProcessChangePort, type ChangePort } from './change-port.js';
import { PostgresChangePort } from './postgres-change-port.js';
import { RedisChangePort, redisChangeChannel } from './redis-change-port.js';

export type ClosableChangePort = ChangePort & { readonly transport: 'redis' | 'postgres' | 'in-process'; close(): Promise<void> };

export async function openChangePort(
  config: Pick<OrchestratorConfig, 'redisUrl' | 'redisPrefix' | 'databaseUrl' | 'dataDir'>,
  store: Pick<Store, 'dialect'>,
  logger: Logger,
): Promise<ClosableChangePort> {
  if (config.redisUrl !== undefined) {
    const channel = redisChangeChannel(config);
    const port = new RedisChangePort({ url: config.redisUrl, logger: logger.child({ component: 'changes' }), channel });
    await port.open();
    logger.info({ channel }, 'change fan-out over Redis pub/sub');
    return Object.assign(port, { transport: 'redis' as const });
  }
  if (store.dialect === 'postgres' && config.databaseUrl !== undefined) {
    const port = new PostgresChangePort({ connectionString: config.databaseUrl, logger: logger.child({ component: 'changes' }) });
    await port.open();
    return Object.assign(port, { transport: 'postgres' as const });
  }
  return Object.assign(new InProcessChangePort(), { transport: 'in-process' as const, close: async () => undefined });
}
