// The one Store implementation, over Kysely. The SQLite and PostgreSQL
// adapters only build the Kysely instance; every query lives here and in repos/.

import { sql, type Kysely } from 'kysely';
import type { StoreContext } from './context.js';
import { HeartbeatCoalescer } from './heartbeat-coalescer.js';
import { migrateToLatest, type StoreDialect } from './migrations/index.js';
import { KyselyAuditRepository, KyselyTokenRepository } from './repos/auth.js';
import { KyselyBackupPolicyRepository, KyselyStoredBackupRepository } from './repos/backups.js';
import { KyselyGroupRepository, KyselyLayerRepository, KyselyTemplateRepository } from './repos/catalog.js';
import { KyselyCommandRepository } from './repos/commands.js';
import { KyselyHistoryRepository, KyselyRevisionRepository } from './repos/history.js';
import { KyselyHostRepository } from './repos/hosts.js';
import { KyselyInstallationRequestRepository } from './repos/installation-requests.js';
import { KyselyInstanceRepository } from './repos/instances.js';
import { KyselyLeaseRepository } from './repos/leases.js';
import { KyselyPlayerSessionRepository, KyselySessionRepository, KyselyTransferRepository } from './repos/sessions.js';
import { KyselySystemSettingsRepository } from './repos/system-settings.js';
import { KyselyUnclaimedRepository } from './repos/unclaimed.js';
import { KyselyWebSessionRepository } from './repos/web-sessions.js';
import { KyselyScheduleRepository } from './repos/schedules.js';
import { KyselySecretRepository } from './repos/secrets.js';
import type { SecretCodec, SecretSlot } from './secret-codec.js';
import { KyselyJoinTokenRepository } from './repos/join-tokens.js';
import type { Database } from './schema.js';
import type { Store } from './store.js';

export class KyselyStore implements Store {
  readonly hosts;
  readonly layers;
  readonly templates;
  readonly groups;
  readonly instances;
  readonly commands;
  readonly tokens;
  readonly audit;
  readonly history;
  readonly revisions;
  readonly sessions;
  readonly transfers;
  readonly playerSessions;
  readonly system;
  readonly unclaimed;
  readonly installationRequests;
  readonly leases;
  readonly storedBackups;
  readonly backupPolicies;
  readonly webSessions;
  readonly schedules;
  readonly secrets;
  readonly joinTokens;
  private readonly ctx: StoreContext;

  /**
   * @param inTransaction true when `db` is an open transaction (the `tx` given
   *   to a transaction callback); nested transactions then reuse it.
   */
  constructor(
    private readonly db: Kysely<Database>,
    readonly dialect: StoreDialect,
    private readonly inTransaction = false,
    private readonly onClose: () => Promise<void> = () => db.destroy(),
    heartbeats?: HeartbeatCoalescer,
    secrets: SecretSlot = { codec: undefined },
  ) {
    this.ctx = {
      db,
      dialect,
      inTransaction,
      atomic: (fn) => (inTransaction ? fn(db) : db.transaction().execute((trx) => fn(trx))),
      heartbeats: heartbeats ?? new HeartbeatCoalescer((beats) => KyselyHostRepository.writeBeatTimes(db, dialect, beats)),
      secrets,
    };
    this.hosts = new KyselyHostRepository(this.ctx);
    this.layers = new KyselyLayerRepository(this.ctx);
    this.templates = new KyselyTemplateRepository(this.ctx);
    this.groups = new KyselyGroupRepository(this.ctx);
    this.instances = new KyselyInstanceRepository(this.ctx);
    this.commands = new KyselyCommandRepository(this.ctx);
    this.tokens = new KyselyTokenRepository(this.ctx);
    this.audit = new KyselyAuditRepository(this.ctx);
    this.history = new KyselyHistoryRepository(this.ctx);
    this.revisions = new KyselyRevisionRepository(this.ctx);
    this.sessions = new KyselySessionRepository(this.ctx);
    this.transfers = new KyselyTransferRepository(this.ctx);
    this.playerSessions = new KyselyPlayerSessionRepository(this.ctx);
    this.system = new KyselySystemSettingsRepository(this.ctx);
    this.unclaimed = new KyselyUnclaimedRepository(this.ctx);
    this.installationRequests = new KyselyInstallationRequestRepository(this.ctx);
    this.leases = new KyselyLeaseRepository(this.ctx);
    this.storedBackups = new KyselyStoredBackupRepository(this.ctx);
    this.backupPolicies = new KyselyBackupPolicyRepository(this.ctx);
    this.webSessions = new KyselyWebSessionRepository(this.ctx);
    this.schedules = new KyselyScheduleRepository(this.ctx);
    this.secrets = new KyselySecretRepository(this.ctx);
    this.joinTokens = new KyselyJoinTokenRepository(this.ctx);
  }

  useSecretCodec(codec: SecretCodec): void {
    this.ctx.secrets.codec = codec;
  }

  async migrate(): Promise<void> {
    await migrateToLatest(this.db as Kysely<unknown>, this.dialect);
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T> {
    if (this.inTransaction) return fn(this);
    return this.db
      .transaction()
      .execute((trx) => fn(new KyselyStore(trx, this.dialect, true, async () => undefined, this.ctx.heartbeats, this.ctx.secrets)));
  }

  async close(): Promise<void> {
    if (this.inTransaction) return;
    await this.audit.flushed();
    await this.ctx.heartbeats.close();
    await this.onClose();
  }
}
