// THE STORE CONTRACT. This interface is the contract both implementations pass
// (SQLite via better-sqlite3 and PostgreSQL via pg, see kysely-store.ts): the
// one suite in test/store/store-contract.ts runs against each of them.
//
// Rules every implementation keeps:
// - Timestamps are epoch milliseconds supplied by the caller (the clock is
//   injected upstream); the store never reads the time itself, except for the
//   leases, which run on the database's clock (and lend it: `leases.now()`).
// - Not-found reads return `undefined`; not-found writes throw AppError with the
//   matching *_NOT_FOUND code. Immutability violations throw `IMMUTABLE`,
//   uniqueness and optimistic-version clashes throw `CONFLICT`.
// - Each method is atomic on its own; `transaction` groups several into one
//   all-or-nothing unit. `tx` is a Store bound to that transaction; calling
//   `tx.transaction(fn)` again simply runs `fn` inside the same transaction.
//   Inside the callback use only `tx`: on SQLite the outer store waits for the
//   one connection the transaction holds, so using it there never returns.
// - Open one with `openStore(databaseUrl, dataDir)` from open-store.ts (SQLite
//   file `<dataDir>/endercloud.db` by default, `postgres://` → PostgreSQL).

import type {
  ApiToken,
  AuditEvent,
  Command,
  CommandStatus,
  ConfigRevision,
  DesiredState,
  EpochMs,
  Group,
  Host,
  HostHeartbeat,
  HostStatus,
  Instance,
  InstanceHistoryEntry,
  InstanceState,
  JsonObject,
  JsonValue,
  MaintenanceMode,
  PlayerSession,
  Session,
  TemplateLayer,
  TemplateVersion,
  Transfer,
  UnclaimedRecord,
  InstallationRequest,
  InstallationRequestStatus,
} from '../domain/index.js';
import type { SecretCodec } from './secret-codec.js';

export interface Store {
  /** Applies pending migrations; safe to call on every start and more than once. */
  migrate(): Promise<void>;
  close(): Promise<void>;
  /** Runs `fn` in one transaction; a throw rolls back every write made through `tx`. */
  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T>;
  /** One trivial query (`select 1`): readiness checks whether the database answers. */
  ping(): Promise<void>;
  /** 'sqlite' or 'postgres', for logs and metrics labels. */
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * Installs the codec secret columns are sealed with on write and opened with on read (store/secret-codec.ts),
   * for this store and every transaction it opens. Until then a secret column can be read only where it is still
   * plaintext (an older database) and never written.
   */
  useSecretCodec(codec: SecretCodec): void;

  readonly hosts: HostRepository;
  readonly layers: LayerRepository;
  readonly templates: TemplateRepository;
  readonly groups: GroupRepository;
  readonly instances: InstanceRepository;
  readonly commands: CommandRepository;
  readonly tokens: TokenRepository;
  readonly audit: AuditRepository;
  readonly history: HistoryRepository;
  readonly revisions: RevisionRepository;
  readonly sessions: SessionRepository;
  readonly transfers: TransferRepository;
  readonly playerSessions: PlayerSessionRepository;
  readonly system: SystemSettingsRepository;
  readonly unclaimed: UnclaimedRepository;
  readonly installationRequests: InstallationRequestRepository;
  readonly leases: LeaseRepository;
  readonly storedBackups: StoredBackupRepository;
  readonly backupPolicies: BackupPolicyRepository;
  readonly webSessions: WebSessionRepository;
  readonly schedules: ScheduleRepository;
  readonly secrets: SecretRepository;
  readonly joinTokens: JoinTokenRepository;
}

// ---------------------------------------------------------------- hosts

export interface HeartbeatResult {
  host: Host;
  /** True when this heartbeat inserted the host. */
  created: boolean;
  /**
   * True when this heartbeat moved the host to RECOVERING (new host, or an
   * OFFLINE host returning): the caller starts the recovery run.
   */
  startedRecovery: boolean;
}

/** How the heartbeat was authenticated. */
export interface HeartbeatAuth {
  /** True: the host's own credential (bound to hb.id by the guard); else the shared token or none (legacy). */
  hostCredential?: boolean;
}

export interface HostRepository {
  /**
   * Hot path, one SQL statement: inserts a new host as RECOVERING, or updates
   * the reported fields and lastHeartbeatAt; an OFFLINE host becomes RECOVERING.
   * Status ONLINE / RECOVERING / MAINTENANCE is left as it is. A known host's
   * controlUrl never changes here: a beat naming another one is refused
   * (CONFLICT, details.reason control-url-pinned), and so is a beat for an
   * enrolled host that did not come with its own host credential (FORBIDDEN).
   */
  upsertHeartbeat(hb: HostHeartbeat, now: EpochMs, opts?: HeartbeatAuth): Promise<HeartbeatResult>;
  get(id: string): Promise<Host | undefined>;
  list(filter?: { statuses?: HostStatus[] }): Promise<Host[]>;
  /**
   * Conditional status change: applies only when the current status is one of
   * `from` (any when omitted). Returns the updated host, or undefined when the
   * condition did not hold. Throws HOST_NOT_FOUND for an unknown id.
   */
  setStatus(id: string, to: HostStatus, opts: { from?: HostStatus[]; reason?: string | null; now: EpochMs }): Promise<Host | undefined>;
  setMaintenance(id: string, maintenance: MaintenanceMode | null, now: EpochMs): Promise<Host>;
  /**
   * Marks OFFLINE every host not yet OFFLINE whose last heartbeat is older than
   * `missedBeats` of its own heartbeatIntervalMs. One statement; returns the ids changed.
   */
  markStaleOffline(now: EpochMs, missedBeats: number): Promise<string[]>;
  /**
   * Atomically adds `mb` to the host's reservation if it still fits under
   * resources.memoryMb (and the host is in one of `statuses`, default ONLINE).
   * Returns false instead of oversubscribing; never over-commits under
   * concurrent callers on either dialect.
   */
  reserveMemory(hostId: string, mb: number, opts?: { statuses?: HostStatus[] }): Promise<boolean>;
  /** Subtracts `mb` from the reservation (floored at 0). */
  releaseMemory(hostId: string, mb: number): Promise<void>;
  countByStatus(): Promise<Record<HostStatus, number>>;
  /**
   * Enrolment (inside the caller's transaction): inserts the host (OFFLINE until
   * its first heartbeat, which runs the recovery) or moves a known one to
   * `controlUrl`, stores the new credential's hash and bumps the generation.
   * The only write that changes a known host's controlUrl.
   */
  enrol(e: HostEnrolment, now: EpochMs): Promise<{ host: Host; previousControlUrl: string | null }>;
  /** The id of the host whose (unrevoked) credential hashes to `hash`. */
  findByCredentialHash(hash: string): Promise<{ id: string } | undefined>;
  /** Drops the host credential (it stops authenticating at once); HOST_NOT_FOUND for an unknown id. */
  revokeCredential(id: string, now: EpochMs): Promise<Host>;
  delete(id: string): Promise<void>;
}

// ---------------------------------------------------------------- layers and templates

export interface LayerRepository {
  /**
   * Records an immutable `(id, checksum)`. Re-putting the same pair with the
   * same size is idempotent (`created: false`); a different size is IMMUTABLE.
   */
  put(layer: TemplateLayer): Promise<{ layer: TemplateLayer; created: boolean }>;
  get(id: string, checksum: string): Promise<TemplateLayer | undefined>;
  /** Every checksum of every layer (or of one id), oldest first. */
  list(filter?: { id?: string }): Promise<TemplateLayer[]>;
  /**
   * Removes every checksum of `id` (or just `checksum`) and answers what was
   * removed. LAYER_NOT_FOUND when nothing matches; CONFLICT (naming the users)
   * while a template version, a variant's extraLayers or an instance's
   * container configuration references one of them. Atomic with the check.
   */
  delete(id: string, checksum?: string): Promise<TemplateLayer[]>;
  /** Every (id, checksum) nothing references (see delete), oldest first. */
  listUnreferenced(): Promise<TemplateLayer[]>;
}

export interface TemplateRepository {
  /**
   * Creates an immutable version. The same name+version with the same specHash
   * is idempotent (`created: false`); a different specHash throws IMMUTABLE.
   */
  create(template: TemplateVersion): Promise<{ template: TemplateVersion; created: boolean }>;
  get(name: string, version: string): Promise<TemplateVersion | undefined>;
  /** All versions (of one name when given), ordered by name then creation. */
  list(filter?: { name?: string }): Promise<TemplateVersion[]>;
  /** TEMPLATE_NOT_FOUND; refuses (CONFLICT, naming group and variant) while a variant uses the version. */
  delete(name: string, version: string): Promise<void>;
}

export interface GroupRepository {
  /**
   * Inserts or replaces a group with its variants. `changed` is false when the
   * stored group was already identical (createdAt is kept on replace).
   */
  put(group: Group): Promise<{ group: Group; created: boolean; changed: boolean }>;
  get(id: string): Promise<Group | undefined>;
  list(): Promise<Group[]>;
  /** Throws GROUP_NOT_FOUND; refuses (CONFLICT) while instances reference the group. */
  delete(id: string): Promise<void>;
}

// ---------------------------------------------------------------- instances

/** Fields an update may change; id, createdAt and user are immutable. */
/**
 * What `update` may change. Never `state`: a state change is a `transition`
 * (moveInstance checks it against the table and writes its history); a patch
 * naming it is refused at run time too (a cast cannot slip one past).
 * `stateChangedAt` may be reset in place (a start restarts the startup clock).
 */
export type InstancePatch = Partial<Omit<Instance, 'id' | 'createdAt' | 'version' | 'user' | 'updatedAt' | 'state'>>;

export interface InstanceFilter {
  /** Instances with any of these ids (an empty list matches none). */
  ids?: string[];
  groupId?: string;
  variantId?: string;
  hostId?: string;
  /** Instances on any of these hosts (an empty list matches none). */
  hostIds?: string[];
  sessionId?: string;
  states?: InstanceState[];
  desiredStates?: DesiredState[];
}

/** An instance an allocation may claim, at the version it was read at. */
export interface ClaimCandidate {
  id: string;
  expectedVersion: number;
}

/** What an allocation's claim answers of the instance it took (InstanceRepository.claimForSession). */
export type ClaimedInstance = Pick<Instance, 'id' | 'groupId' | 'hostId' | 'sessionId' | 'endpoint' | 'version' | 'updatedAt'>;

/** One instance of a group as an allocation sees it (InstanceRepository.allocationRows). */
export interface AllocationRow {
  id: string;
  hostId: string | null;
  variantId: string;
  state: InstanceState;
  /** Has a session (sessionId set). */
  allocated: boolean;
  /** fleet.draining is set. */
  draining: boolean;
  /** containerConfig.labels. */
  labels: Record<string, string> | undefined;
  version: number;
}

/** What InstanceRepository.releaseSession released. */
export interface ReleasedSession {
  session: Session;
  instanceFreed: boolean;
  freedVersion?: number;
}

export interface InstanceRepository {
  /** Inserts with version 1. Duplicate id or name → CONFLICT. */
  create(instance: Omit<Instance, 'version'>): Promise<Instance>;
  get(id: string): Promise<Instance | undefined>;
  getByName(name: string): Promise<Instance | undefined>;
  list(filter?: InstanceFilter): Promise<Instance[]>;
  /**
   * Applies `patch` and bumps `version`; `updatedAt` is set to `now`. With
   * `expectedVersion`, a concurrent change in between throws CONFLICT.
   * Throws INSTANCE_NOT_FOUND. `user` can never be changed.
   */
  update(id: string, patch: InstancePatch, opts: { now: EpochMs; expectedVersion?: number }): Promise<Instance>;
  /**
   * Allocation's claim, one conditional statement: sets sessionId on the
   * first of `candidates` (in their order) that is still at its expected
   * version and unallocated, bumping the version. Returns undefined (never
   * waits) when none is: a row another transaction holds counts as taken
   * (PostgreSQL: SKIP LOCKED), so a crowd of allocators spreads over the
   * candidates instead of queueing on the best one. With `session`, the
   * claim also inserts that allocated session row atomically with it
   * (PostgreSQL: one statement, no transaction round trips). With `audit`,
   * that entry (its params with `instanceId` of the claimed instance added)
   * commits with the claim, and only if it claimed. Answers only the fields
   * an allocation needs of the claimed instance (no documents decoded).
   */
  claimForSession(
    candidates: readonly ClaimCandidate[],
    sessionId: string,
    opts: { now: EpochMs; session?: { groupId: string | null; metadata: JsonObject }; audit?: Omit<AuditEvent, 'id'> },
  ): Promise<ClaimedInstance | undefined>;
  /**
   * What an allocation's choice reads of a group, in one statement: per
   * instance only the fields rankAllocatable needs (no settings or config
   * documents are decoded).
   */
  allocationRows(groupId: string): Promise<AllocationRow[]>;
  /**
   * Ends an allocated session and frees the instance that holds it
   * (sessionId back to null, version bumped), atomically — one statement on
   * PostgreSQL. With `groupIds`, only a session of one of those groups is
   * released (the caller's scope, checked in the same statement). Undefined
   * when nothing was released (unknown, already released, or outside
   * `groupIds`): nothing changes then. With `audit`, that entry (its params
   * with `instanceId` added) commits with the release, and only if it released.
   * `freedVersion` is the freed instance's version after the release (absent
   * when no instance held the session any more).
   */
  releaseSession(
    sessionId: string,
    now: EpochMs,
    opts?: { groupIds?: readonly string[]; audit?: Omit<AuditEvent, 'id'> },
  ): Promise<ReleasedSession | undefined>;
  /**
   * Changes the lifecycle state and appends the history entry in one
   * transaction. With `from`, applies only when the current state is one of
   * them and returns undefined otherwise.
   */
  transition(
    id: string,
    to: InstanceState,
    opts: {
      now: EpochMs;
      reason: string;
      from?: InstanceState[];
      actor?: string | null;
      commandId?: string | null;
      details?: JsonObject | null;
      patch?: InstancePatch;
    },
  ): Promise<Instance | undefined>;
  /** Removes the row (history and revisions go with it; commands and audit stay). */
  delete(id: string): Promise<void>;
  countByState(): Promise<Partial<Record<InstanceState, number>>>;
  /** The latest updatedAt of the instances on each host (hosts without instances are absent): one grouped query. */
  lastChangeByHost(): Promise<Record<string, number>>;
  /** Instance count per host id (instances without a host are not counted). */
  countByHost(): Promise<Record<string, number>>;
  countByGroup(groupId: string): Promise<number>;
  /**
   * For cap checks before a create: takes the placement lock, then counts the
   * group's instances and all instances that count toward a limit (every
   * state but `archived`). Call it inside `transaction` (it
   * throws INTERNAL otherwise): the lock is held until that transaction ends,
   * so concurrent creates (several orchestrators too) count one after another
   * and a cap can never be exceeded. PostgreSQL: a transaction-scoped advisory
   * lock keyed by the instances table; SQLite: the transaction already holds
   * the write lock (BEGIN IMMEDIATE).
   */
  countForCaps(groupId: string): Promise<{ group: number; total: number }>;
}

// ---------------------------------------------------------------- commands

export type NewCommand = Pick<Command, 'id' | 'kind' | 'payload' | 'requestId'> &
  Partial<Pick<Command, 'instanceId' | 'hostId' | 'maxAttempts' | 'nextAttemptAt'>>;

export interface CommandRepository {
  /** Persists a pending command (before anything is dispatched). maxAttempts defaults to 10. */
  create(cmd: NewCommand, now: EpochMs): Promise<Command>;
  get(id: string): Promise<Command | undefined>;
  list(filter?: { instanceId?: string; hostId?: string; statuses?: CommandStatus[]; limit?: number }): Promise<Command[]>;
  /**
   * Atomically claims up to `limit` due commands (pending with nextAttemptAt <=
   * now, or dispatched with an expired lease — a crashed claimer) and marks
   * them dispatched with `claimedBy` and a lease; attempts is incremented.
   * Per instance, only the oldest unfinished command is claimable, so one
   * instance's commands run in order. No command goes to two claimers.
   */
  claimDue(now: EpochMs, limit: number, opts: { claimer: string; leaseMs: number }): Promise<Command[]>;
  /** Extends the lease of a command this claimer still holds. False when it lost it. */
  renewLease(id: string, claimer: string, leaseUntil: EpochMs): Promise<boolean>;
  /** Marks succeeded. With `claimer`, only if still held by it (false otherwise). */
  succeed(id: string, result: JsonObject | null, opts: { now: EpochMs; claimer?: string }): Promise<boolean>;
  /**
   * Records a failure: with `retryAt` (and attempts < maxAttempts) the command
   * goes back to pending for then; otherwise it is failed for good.
   */
  fail(id: string, error: string, opts: { now: EpochMs; retryAt?: EpochMs; claimer?: string }): Promise<Command>;
  /** Unfinished (pending or dispatched) commands of one instance, oldest first. */
  unfinishedForInstance(instanceId: string): Promise<Command[]>;
  /**
   * Quick reclaim after a restart: claims are recorded as `<nodeId>:<incarnation>`;
   * every dispatched command claimed by another incarnation of `nodeId` gets its
   * lease expired at `now`, so it is claimable at once (attempt + 1, as after a
   * lease expiry). Returns how many were released.
   */
  releaseClaimsOf(nodeId: string, exceptIncarnation: string, now: EpochMs): Promise<number>;
  /** Outcome counts for metrics. */
  countByStatus(): Promise<Record<CommandStatus, number>>;
}

// ---------------------------------------------------------------- auth and audit

/** What an enrolment writes (server/services/host-enrolment.ts). */
export interface HostEnrolment {
  heartbeat: HostHeartbeat;
  credentialHash: string;
}

/** A one-time join token (its secret is never stored, only its sha256). */
export interface JoinTokenRecord {
  id: string;
  hashedSecret: string;
  agentId: string | null;
  createdBy: string;
  createdAt: EpochMs;
  expiresAt: EpochMs;
  usedAt: EpochMs | null;
  usedBy: string | null;
  revokedAt: EpochMs | null;
}

export interface JoinTokenRepository {
  create(token: JoinTokenRecord): Promise<JoinTokenRecord>;
  get(id: string): Promise<JoinTokenRecord | undefined>;
  findByHashedSecret(hashedSecret: string): Promise<JoinTokenRecord | undefined>;
  /** Newest first. */
  list(): Promise<JoinTokenRecord[]>;
  /** Marks it used by `agentId` if still unused and unrevoked; false when another use or a revocation came first. */
  consume(id: string, agentId: string, now: EpochMs): Promise<boolean>;
  revoke(id: string, now: EpochMs): Promise<void>;
}

export interface TokenRepository {
  /** Duplicate id or name → CONFLICT. */
  create(token: ApiToken): Promise<ApiToken>;
  get(id: string): Promise<ApiToken | undefined>;
  getByName(name: string): Promise<ApiToken | undefined>;
  findByHashedSecret(hashedSecret: string): Promise<ApiToken | undefined>;
  list(): Promise<ApiToken[]>;
  touch(id: string, now: EpochMs): Promise<void>;
  revoke(id: string, now: EpochMs): Promise<void>;
}

export interface AuditRepository {
  append(event: Omit<AuditEvent, 'id'>): Promise<AuditEvent>;
  /** Newest first; `beforeId` pages backwards. */
  list(filter?: { targetKind?: string; targetId?: string; actor?: string; beforeId?: number; limit?: number }): Promise<AuditEvent[]>;
}

export interface HistoryRepository {
  append(entry: Omit<InstanceHistoryEntry, 'id'>): Promise<InstanceHistoryEntry>;
  /** Newest first. */
  list(instanceId: string, opts?: { limit?: number }): Promise<InstanceHistoryEntry[]>;
}

export interface RevisionRepository {
  /**
   * Appends an immutable revision (IMMUTABLE if that number exists) and prunes
   * the instance's history to the newest `keep` (default 20).
   */
  /** Appends, then keeps the newest `keep` (default 20) plus the `pinned` revision numbers. */
  append(revision: ConfigRevision, opts?: { keep?: number; pinned?: number[] }): Promise<ConfigRevision>;
  get(instanceId: string, revision: number): Promise<ConfigRevision | undefined>;
  /** Newest first. */
  list(instanceId: string): Promise<ConfigRevision[]>;
}

// ---------------------------------------------------------------- sessions, transfers, players (docs/provisioning.md "Allocation", docs/router.md)

export interface SessionRepository {
  create(session: Session): Promise<Session>;
  get(id: string): Promise<Session | undefined>;
  list(filter?: { instanceId?: string; groupId?: string; status?: Session['status'] }): Promise<Session[]>;
}

export interface TransferRepository {
  create(transfer: Transfer): Promise<Transfer>;
  get(id: string): Promise<Transfer | undefined>;
  list(filter?: { player?: string; status?: Transfer['status']; limit?: number }): Promise<Transfer[]>;
  /**
   * Atomically consumes the newest pending, unexpired transfer for a player
   * (name compared case-insensitively): at most one caller gets it.
   */
  consumePending(player: string, now: EpochMs, resolvedInstanceId?: string | null): Promise<Transfer | undefined>;
  /** Marks pending transfers past expiresAt as expired; returns how many. */
  expire(now: EpochMs): Promise<number>;
}

export interface PlayerSessionRepository {
  open(session: PlayerSession): Promise<PlayerSession>;
  close(id: string, now: EpochMs, reason?: string | null): Promise<PlayerSession | undefined>;
  /** Closes every active session a router reported (the router restarted). */
  closeAllForRouter(routerId: string, now: EpochMs, reason: string): Promise<number>;
  get(id: string): Promise<PlayerSession | undefined>;
  listActive(filter?: { instanceId?: string; routerId?: string }): Promise<PlayerSession[]>;
  /** Active players per instance id. */
  countActiveByInstance(): Promise<Record<string, number>>;
}

// ---------------------------------------------------------------- system settings (docs/store.md)

/** System-wide settings, one JSON value per key (e.g. `maintenance`). */
export interface SystemSettingsRepository {
  get(key: string): Promise<JsonValue | undefined>;
  /** Inserts or replaces the value. */
  put(key: string, value: JsonValue, now: EpochMs): Promise<void>;
  /** Removing a missing key is not an error. */
  delete(key: string): Promise<void>;
}

// ---------------------------------------------------------------- unclaimed containers (docs/orchestrator.md "Unclaimed containers")

export type UnclaimedEntry = Pick<UnclaimedRecord, 'instanceId' | 'groupId' | 'variantId'>;

/**
 * Per host, the managed containers a recovery run listed as unclaimed. The
 * set is what makes "unclaimed" durable: recovery never removes a container
 * in it, whatever else the store learns about the host meanwhile.
 */
export interface UnclaimedRepository {
  /** The host's set, ordered by instance id (empty for an unknown host). */
  listForHost(hostId: string): Promise<UnclaimedRecord[]>;
  get(hostId: string, instanceId: string): Promise<UnclaimedRecord | undefined>;
  /**
   * Makes the host's set exactly `entries`, atomically: new instance ids are
   * added with firstSeenAt = `now`, ids already there keep their firstSeenAt
   * (labels refreshed), the rest are dropped. A repeated instance id counts
   * once. Throws HOST_NOT_FOUND for an unknown host. Returns the new set.
   */
  replaceForHost(hostId: string, entries: readonly UnclaimedEntry[], now: EpochMs): Promise<UnclaimedRecord[]>;
  /** Drops one entry (adopted or deleted by an operator); true when it was in the set. */
  remove(hostId: string, instanceId: string): Promise<boolean>;
}

// ---------------------------------------------------------------- installation requests (docs/lifecycle.md "Installation requests")

export interface InstallationRequestRepository {
  /** Inserts a pending request. Duplicate id → CONFLICT. */
  create(
    request: Omit<InstallationRequest, 'status' | 'decidedBy' | 'decisionNote' | 'instanceId' | 'decidedAt'>,
  ): Promise<InstallationRequest>;
  get(id: string): Promise<InstallationRequest | undefined>;
  /** Oldest first; filtered by requester and/or status. */
  list(filter?: { requestedBy?: string; status?: InstallationRequestStatus }): Promise<InstallationRequest[]>;
  /**
   * Conditional decision: applies only while the request is pending and
   * returns the decided request, or undefined when it was already decided
   * (two deciders never both win). Throws NOT_FOUND for an unknown id.
   */
  decide(
    id: string,
    decision: { status: 'approved' | 'rejected'; decidedBy: string; note?: string | null; instanceId?: string | null; now: EpochMs },
  ): Promise<InstallationRequest | undefined>;
}

// ---------------------------------------------------------------- leases (HA)

export interface LeaseRecord {
  name: string;
  holder: string;
  /** Fencing epoch: 1 for the first holder, + 1 on every change of holder. */
  epoch: number;
  /** Epoch ms on the database's clock. */
  expiresAt: EpochMs;
}

/** Leases are timed by the DATABASE clock (now() on PostgreSQL), the exception to "the caller supplies the time". */
export interface LeaseRepository {
  /**
   * One statement: takes the lease when free or expired (epoch + 1 if the holder
   * changes), renews it when `holder` already holds it (same epoch); expiry is
   * database now + ttlMs. Returns the lease when `holder` holds it now, else undefined.
   */
  acquire(name: string, holder: string, ttlMs: number): Promise<LeaseRecord | undefined>;
  /** Resigns: expires the lease now if `holder` holds it (true), so another replica takes it at once. */
  release(name: string, holder: string): Promise<boolean>;
  get(name: string): Promise<LeaseRecord | undefined>;
  /** The database's clock (epoch ms), the one the leases run on: replicas with drifting clocks agree on it. */
  now(): Promise<EpochMs>;
}

// ---------------------------------------------------------------- off-host backups (backup-store.ts)

/** One archive the orchestrator's backup store holds. */
export interface StoredBackup {
  instanceId: string;
  backupId: string;
  sha256: string;
  sizeBytes: number;
  /** When the backup was taken (the agent's createdAt), epoch ms. */
  createdAt: EpochMs;
  /** When the store finished copying it, epoch ms. */
  storedAt: EpochMs;
  /** The host it was taken on; null for an uploaded archive. */
  originHost: string | null;
  /** Relative to the backup store's directory. */
  storedPath: string;
  /** The archived relative paths; null = the whole instance directory. */
  paths: string[] | null;
  /** `manual`, `schedule`, `stop`, `archive`, `update`, `upload`, … */
  trigger: string;
}

export interface StoredBackupRepository {
  /** Inserts or replaces the record of (instanceId, backupId). */
  put(backup: StoredBackup): Promise<StoredBackup>;
  get(instanceId: string, backupId: string): Promise<StoredBackup | undefined>;
  /** Oldest first (createdAt, then backup id). */
  listForInstance(instanceId: string): Promise<StoredBackup[]>;
  /** True when a record was removed. */
  delete(instanceId: string, backupId: string): Promise<boolean>;
}

/** An instance's own backup policy (JSON, checked by contracts/backup-policy.ts) and the scheduler's mark. */
export interface BackupPolicyRecord {
  instanceId: string;
  policy: JsonObject | null;
  lastScheduledAt: EpochMs | null;
  updatedAt: EpochMs;
}

export interface BackupPolicyRepository {
  get(instanceId: string): Promise<BackupPolicyRecord | undefined>;
  list(): Promise<BackupPolicyRecord[]>;
  /** Sets (null: clears) the instance's own policy, keeping the scheduler's mark. */
  setPolicy(instanceId: string, policy: JsonObject | null, now: EpochMs): Promise<BackupPolicyRecord>;
  /** Records that the scheduler requested a backup for the slot at `at`. */
  markScheduled(instanceId: string, at: EpochMs, now: EpochMs): Promise<void>;
}

// ---------------------------------------------------------------- web panel sessions (server/web)

/** One panel login: the sha256 of its cookie's session id and the principal it stands for. */
export interface WebSessionRecord {
  idHash: string;
  /** The API token behind it (its revocation ends the session); null for the preset admin token. */
  tokenId: string | null;
  principalKind: 'token' | 'preset-admin';
  name: string;
  scopes: string[];
  createdAt: EpochMs;
  expiresAt: EpochMs;
  /** Preset-admin sessions: which ENDERCLOUD_ADMIN_TOKEN signed them in (server/web/web-sessions.ts); null otherwise. */
  presetSeal: string | null;
}

export interface WebSessionRepository {
  create(session: WebSessionRecord): Promise<WebSessionRecord>;
  get(idHash: string): Promise<WebSessionRecord | undefined>;
  /** True when a row was removed. */
  delete(idHash: string): Promise<boolean>;
  /** Removes every session expired at `now`; returns how many. */
  deleteExpired(now: EpochMs): Promise<number>;
}

// ---------------------------------------------------------------- instance schedules (server/services/schedules.ts)

/** One task of a schedule, as stored (checked by lifecycle/schedules.ts). */
export interface ScheduleTaskRecord {
  action: 'command' | 'power' | 'backup';
  payload: string;
  offsetSeconds: number;
  continueOnFailure: boolean;
}

export interface ScheduleRecord {
  id: string;
  instanceId: string;
  name: string;
  cron: string;
  enabled: boolean;
  onlyWhenOnline: boolean;
  tasks: ScheduleTaskRecord[];
  nextRunAt: EpochMs | null;
  lastRunAt: EpochMs | null;
  lastResult: 'ok' | 'failed' | 'skipped' | null;
  lastError: string | null;
  /** The run claim: set while a run is in progress; null otherwise. */
  runningSince: EpochMs | null;
  createdAt: EpochMs;
  updatedAt: EpochMs;
}

/** What a user sets; the run bookkeeping is the runner's. */
export type ScheduleDefinition = Pick<ScheduleRecord, 'name' | 'cron' | 'enabled' | 'onlyWhenOnline' | 'tasks' | 'nextRunAt'>;

export interface ScheduleRepository {
  /** CONFLICT when the id exists. */
  create(schedule: Omit<ScheduleRecord, 'lastRunAt' | 'lastResult' | 'lastError' | 'runningSince' | 'updatedAt'>): Promise<ScheduleRecord>;
  get(id: string): Promise<ScheduleRecord | undefined>;
  /** Oldest first (createdAt, then id). */
  listForInstance(instanceId: string): Promise<ScheduleRecord[]>;
  /** Enabled schedules whose nextRunAt is at or before `now`, soonest first. */
  listDue(now: EpochMs, limit: number): Promise<ScheduleRecord[]>;
  /** Replaces the definition, keeping the run bookkeeping; NOT_FOUND when absent. */
  update(id: string, definition: ScheduleDefinition, now: EpochMs): Promise<ScheduleRecord>;
  /** True when a row was removed. */
  delete(id: string): Promise<boolean>;
  /** Removes every schedule of the instance; returns how many. */
  deleteForInstance(instanceId: string): Promise<number>;
  /**
   * Takes the run claim when no run holds it (or the one holding it started
   * before `staleBefore`), and sets the next slot, in one statement. False: another run holds it.
   */
  claimRun(id: string, opts: { now: EpochMs; staleBefore: EpochMs; nextRunAt?: EpochMs | null }): Promise<boolean>;
  /** Records a run's outcome and releases the claim. */
  finishRun(id: string, outcome: { at: EpochMs; result: 'ok' | 'failed' | 'skipped'; error: string | null }): Promise<void>;
}

// ---------------------------------------------------------------- secrets at rest (store/secret-codec.ts)

export interface SecretRepository {
  /** The fingerprint of the key this database's secrets are sealed under; undefined before the first start that records one. */
  recordedFingerprint(): Promise<string | undefined>;
  /**
   * Records `fingerprint` unless one is recorded already (of two first starts, one wins) and answers the
   * recorded one: a caller whose key differs must not seal or open anything.
   */
  claimKeyFingerprint(fingerprint: string, now: EpochMs): Promise<string>;
  /**
   * Seals, under the installed codec, every secret value still in plaintext (a database from before
   * encryption), in one transaction; answers how many rows it sealed (0 the next time).
   */
  sealPlaintext(): Promise<number>;
  /**
   * Key rotation: re-seals every secret value from `from` to `to` (plaintext ones too) and records `to`'s
   * fingerprint, in one transaction; CONFLICT when the recorded fingerprint is not `from`'s. The store uses
   * `to` from then on. Answers how many rows it re-sealed.
   */
  rekey(from: SecretCodec, to: SecretCodec, now: EpochMs): Promise<number>;
}
