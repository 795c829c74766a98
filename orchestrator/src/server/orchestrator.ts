// Composition root of the control plane: opens the store, builds the services
// and the HTTP app, and runs the background loops (command worker, OFFLINE
// detector). Importable and stoppable in-process (dev stack, end-to-end tests).

import { chmod, mkdir } from 'node:fs/promises';
import { loadMasterKey } from './secrets/master-key.js';
import { installSecretKey } from './secrets/secret-settings.js';
import { CallCredentials, HostEnrolmentService } from './services/host-enrolment.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { AgentHostDriver } from './drivers/agent-driver.js';
import { HttpAgentTransport, type AgentTransport } from './drivers/agent-transport.js';
import { openChangePort } from './changes/open-change-port.js';
import { LeaderLease } from './leadership/leader-lease.js';
import { whenLeader, type Leadership } from './leadership/leadership.js';
import { loadNodeIdentity, type NodeIdentity } from './leadership/node-identity.js';
import { AdoptionService } from './services/adoption.js';
import { UpdateService } from './services/update-service.js';
import { BackupRequestService } from './services/backup-requests.js';
import { InstancePreviewer } from './services/instance-preview.js';
import type { ChangePort } from './changes/change-port.js';
import { notifyingStore } from './changes/notifying-store.js';
import { RegistryFeed } from './registry/registry-feed.js';
import { TransferService } from './registry/transfer-service.js';
import { PlayerSessions } from './services/player-sessions.js';
import { NetworkSecret } from './provisioning/network-secret.js';
import { FleetService } from './provisioning/fleet-service.js';
import { Provisioner } from './provisioning/provisioner.js';
import { IdleTierSettings } from './provisioning/idle-tier-settings.js';
import { buildApp, type AppOptions, type OrchestratorApp } from './app.js';
import { TokenService } from './auth/tokens.js';
import { systemClock, type Clock } from './clock.js';
import { DatabaseClock } from './database-clock.js';
import type { OrchestratorConfig } from './config.js';
import type { ServerContext } from './context.js';
import { OrchestratorMetrics } from './metrics.js';
import { InstanceStatsCollector, STATS_CALL_TIMEOUT_MS } from './services/instance-stats.js';
import { CatalogService } from './services/catalog-service.js';
import { CommandWorker, type CommandWorkerHooks } from './lifecycle-engine/command-worker.js';
import { HostService } from './services/host-service.js';
import { InstanceCreator } from './services/instance-creator.js';
import { ImportStore } from './services/import-store.js';
import { BackupStore, backupStoreHooks } from './services/backup-store.js';
import { BackupScheduler } from './services/backup-scheduler.js';
import { ScheduleService } from './services/schedules.js';
import { LayerStore } from './services/layer-store.js';
import { OfflineDetector } from './services/offline-detector.js';
import { DatabaseReadiness } from './services/readiness.js';
import { InstanceFileService } from './services/instance-files.js';
import { startSftpServer } from './sftp/sftp-server.js';
import { ReadQueries } from './services/read-queries.js';
import { HostRemoval } from './services/host-removal.js';
import { AuditLog } from './services/audit-log.js';
import { InstallationRequestService } from './services/installation-requests.js';
import { WebSessionService } from './web/web-sessions.js';
import { HostMoves } from './provisioning/host-moves.js';
import { ActionRunner } from './lifecycle-engine/action-runner.js';
import { LifecycleService } from './services/lifecycle-service.js';
import { BridgeSignals, ReadinessProber } from './lifecycle-engine/readiness-prober.js';
import { Supervisor } from './lifecycle-engine/supervisor.js';
import { BridgeEvents } from './lifecycle-engine/bridge-events.js';
import { CleanupHandler } from './lifecycle-engine/cleanup-handler.js';
import type { CommandHandlers } from './lifecycle-engine/command-handler.js';
import { CreateHandler } from './lifecycle-engine/create-handler.js';
import { INSTANCE_ACTIONS, type InstanceAction } from '../domain/index.js';
import type { Timers } from '../shared/timers.js';
import { packageVersion } from '../shared/package-version.js';

/** RCON calls (transfers, evacuation) are quick; they get their own bound. */
const RCON_CALL_TIMEOUT_MS = 15_000;

export interface OrchestratorDeps {
  /** This process's clock; when injected it also stands for the database's (unless `databaseClock` is given). */
  clock?: Clock;
  /** The clock heartbeats are stamped and judged on; default: the database's (database-clock.ts). */
  databaseClock?: Clock;
  logger?: Logger;
  /** The readiness prober's HTTP probes of game servers. */
  fetch?: typeof fetch;
  /** Every agent call (tests wrap one to slow or record calls); default a keep-alive pool owned and closed by this orchestrator. */
  agentTransport?: AgentTransport;
  /** Jitter source for command backoff. */
  random?: () => number;
  hooks?: CommandWorkerHooks & {
    /** A container was started (after a create, a start, a resume): tests watch it. */
    onContainerStarted?: (instanceId: string) => void;
    /** Every JSON answer of the API before it is serialised (the contract test validates them). */
    onAnswer?: AppOptions['onAnswer'];
  };
  /** false: build the worker but never start it (tests of crash-resume). Default true. */
  runWorker?: boolean;
  /** false: no periodic OFFLINE sweep (tests call detector.sweep()). Default true. */
  runOfflineDetector?: boolean;
  /** An already open store (tests); otherwise opened from the config and closed on stop. */
  store?: Store;
  /** false: no supervisor loop (tests call supervisor.tick() / probeOnce()). Default true. */
  runSupervisor?: boolean;
  /** Timers of the supervisor's loops (tests inject their own). */
  timers?: Timers;
  /** The waits inside a running command (an update's readiness polls, a despawn's drain, a resume's check); default real, unref'd timers. The simulation's moves its manual clock. */
  sleep?: (ms: number) => Promise<void>;
  /** Generates instance secrets (tests make them recognisable). */
  generateSecret?: () => string;
  /** The change port (default: openChangePort — Redis, PostgreSQL LISTEN/NOTIFY or in-process — closed on stop). */
  changes?: ChangePort;
  /** false: no provisioner loop (tests call provisioner.tick()). Default true. */
  runProvisioner?: boolean;
  /** false: no backup scheduler loop (tests call backupScheduler.tick()). Default true. */
  runBackupScheduler?: boolean;
  /** false: no schedule runner loop (tests call schedules.tick()). Default true. */
  runSchedules?: boolean;
  /** The wait between a schedule's tasks (tests record offsets and move the clock). */
  scheduleWait?: (ms: number) => Promise<void>;
  /** startOrchestrator: run the SFTP server on this port instead of ENDERCLOUD_SFTP_PORT (0: an ephemeral one, tests). */
  sftpPort?: number;
  /**
   * The reconciler lease between replicas sharing one store even on SQLite (default: a SQLite store is
   * its one process's, so the lease never lapses locally): `now` is the monotonic clock a held lease is
   * counted on, and its renewals run on `timers`. The simulation runs two replicas over one store on its manual clock.
   */
  leaderLease?: { sole: false; now: () => number };
}

export interface Orchestrator {
  app: OrchestratorApp;
  ctx: ServerContext;
  /** The (notifying) store the services share: the entry points and tests read it; routes never see it. */
  store: Store;
  worker: CommandWorker;
  detector: OfflineDetector;
  supervisor: Supervisor;
  provisioner: Provisioner;
  /** The reconciler lease: only its holder claims commands and runs the supervisor. */
  leadership: Leadership;
  /** This replica's node id and boot incarnation (command claims are `<node>:<incarnation>`). */
  node: NodeIdentity;
  adminToken: { source: 'preset' | 'file' | 'generated' | 'existing'; file: string | null };
  /** The address actually listened on, once listening (startOrchestrator). */
  url: string;
  /** ENDERCLOUD_PUBLIC_URL when set, otherwise `url`: what users and agents are told. */
  publicUrl: string;
  /** The SFTP server's address once listening (startOrchestrator; absent when ENDERCLOUD_SFTP_PORT=0). */
  sftp?: { host: string; port: number };
  stop(): Promise<void>;
}

/** Builds everything without listening or starting loops. */
export async function buildOrchestrator(config: Readonly<OrchestratorConfig>, deps: OrchestratorDeps = {}): Promise<Orchestrator> {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? createLogger('orchestrator', config.logLevel);
  // The data dir holds the database, layers, backups and secret settings: owner only (issue 26).
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  await chmod(config.dataDir, 0o700);
  // Never in the database: derived keys encrypt secret settings and sign per-host credentials.
  const masterKey = await loadMasterKey({ key: config.secretKey, keyFile: config.secretKeyFile, dataDir: config.dataDir });
  logger.info({ source: masterKey.source, fingerprint: masterKey.fingerprint() }, 'secret key loaded');
  // Enrolled hosts: the orchestrator's bearer for each agent, derived per host and generation (never stored).
  const callCredentials = new CallCredentials(masterKey);
  const ownsStore = deps.store === undefined;
  // Every committed write that changes what routers see is published to the change port.
  const baseStore =
    deps.store ??
    (await openStore(config.databaseUrl, config.dataDir, {
      connectTimeoutMs: config.databaseConnectTimeoutMs,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
    }));
  // Secret settings are sealed under the master key from here on; a key other than the database's stops the start.
  try {
    await installSecretKey(baseStore, masterKey, { now: clock.now(), logger: logger.child({ component: 'secrets' }) });
  } catch (err) {
    if (ownsStore) await baseStore.close().catch(() => undefined);
    throw err;
  }
  const ownedChanges = deps.changes ? undefined : await openChangePort(config, baseStore, logger);
  const changes: ChangePort = deps.changes ?? ownedChanges!;
  // Each committed transition is one info line with instance, from, to and reason.
  const lifecycleLog = logger.child({ component: 'lifecycle' });
  const store = notifyingStore(baseStore, changes, {
    onTransition: (t) => lifecycleLog.info({ ...t }, `instance ${t.instance}: ${t.from ?? '?'} → ${t.to} (${t.reason})`),
  });
  // Beat times are stamped and compared on the database's clock, as the lease is (an injected clock stands for it in tests).
  const ownedDatabaseClock = deps.clock
    ? undefined
    : new DatabaseClock({ read: () => store.leases.now(), logger: logger.child({ component: 'database-clock' }) });
  await ownedDatabaseClock?.sync();
  ownedDatabaseClock?.start();
  const hostClock: Clock = deps.databaseClock ?? ownedDatabaseClock ?? clock;
  const node = await loadNodeIdentity(config.dataDir, config.nodeId);
  // A restarted node's previous incarnation is gone: its claims come back now, not after the command lease.
  const released = await store.commands.releaseClaimsOf(node.nodeId, node.incarnation, clock.now());
  if (released > 0) logger.info({ nodeId: node.nodeId, released }, "took back the claims of this node's previous incarnation");
  // SQLite is one process: always the leader (epoch 1), through the same lease.
  const leadership = new LeaderLease({
    leases: store.leases,
    holder: node.nodeId,
    ttlMs: config.leaderLeaseTtlMs,
    logger: logger.child({ component: 'leadership' }),
    sole: deps.leaderLease ? false : store.dialect === 'sqlite',
    changes,
    ...(deps.leaderLease ? { now: deps.leaderLease.now, ...(deps.timers ? { timers: deps.timers } : {}) } : {}),
  });
  await leadership.start();
  // One keep-alive pool for every driver below: the bound on sockets per agent holds across them.
  const ownedTransport = deps.agentTransport ? undefined : new HttpAgentTransport();
  const transport = deps.agentTransport ?? ownedTransport!;
  // Agents refuse a mutating call without x-leader-epoch. API-side drivers (routes, host and file services, RCON) send
  // the current lease's epoch as this replica last read it (its own while it leads, the holder's on a standby).
  const leaseEpoch = { epoch: () => leadership.leader()?.epoch ?? leadership.epoch() };
  const plainDriver = new AgentHostDriver({
    transport,
    token: config.agentToken,
    callCredentials,
    timeoutMs: config.agentRequestTimeoutMs,
    epoch: leaseEpoch,
  });
  // The engine's calls (worker handlers, supervisor, probes) carry the epoch it holds, announced to each host first;
  // agents refuse a deposed leader's.
  const driver = new AgentHostDriver({
    transport,
    token: config.agentToken,
    callCredentials,
    timeoutMs: config.agentRequestTimeoutMs,
    epoch: leadership,
    announce: true,
  });
  const metrics = new OrchestratorMetrics(
    store,
    hostClock,
    new InstanceStatsCollector({
      store,
      clock,
      logger: logger.child({ component: 'instance-stats' }),
      intervalMs: config.statsIntervalMs,
      driver: new AgentHostDriver({
        transport,
        token: config.agentToken,
        callCredentials,
        timeoutMs: Math.min(STATS_CALL_TIMEOUT_MS, config.agentRequestTimeoutMs),
        epoch: leaseEpoch,
      }),
      ...(deps.timers ? { timers: deps.timers } : {}),
    }),
  );
  const bridge = new BridgeSignals();
  const crashLoopDefaults = {
    maxExits: config.crashLoopMaxExits,
    windowMs: config.crashLoopWindowMs,
    backoffInitialMs: config.restartBackoffInitialMs,
    backoffMaxMs: Math.max(config.restartBackoffMaxMs, config.restartBackoffInitialMs),
  };
  const prober = new ReadinessProber({ driver, fetch: deps.fetch ?? globalThis.fetch, bridge });
  // Off-host copies of every backup (docs/lifecycle.md "Backups").
  const backupStore = new BackupStore({
    dir: config.backupDir ?? `${config.dataDir}/backups`,
    store,
    driver,
    clock,
    logger: logger.child({ component: 'backup-store' }),
  });
  await backupStore.init();
  // The worker and the supervisor call each other: the closures below run only after both exist.
  const lifecycle = new LifecycleService({
    store,
    clock,
    logger: logger.child({ component: 'lifecycle' }),
    commandMaxAttempts: config.commandMaxAttempts,
    onCommandsQueued: () => worker.kick(),
    crashLoopDefaults,
    archives: backupStore,
    ...(config.maxTotalInstances !== undefined ? { maxTotalInstances: config.maxTotalInstances } : {}),
  });
  const networkSecret = new NetworkSecret({ store, clock });
  const onStarted = (id: string): void => {
    supervisor.watch(id);
    deps.hooks?.onContainerStarted?.(id);
  };
  const actions = new ActionRunner({
    store,
    driver,
    clock,
    backupHooks: backupStoreHooks(backupStore),
    logger: logger.child({ component: 'actions' }),
    prober,
    endercloudUser: config.endercloudUser,
    resumeTimeoutMs: config.resumeTimeoutMs,
    networkSecret,
    onStarted,
    ...(deps.sleep ? { sleep: deps.sleep } : {}),
    // Despawn moves every player away with the transfer service, and counts who is left like the registry does.
    evacuate: async (id) => ({ players: (await transfers.evacuate(id, undefined, { ttlMs: 60_000, drainMs: 60_000 })).players.length }),
    playersOn: async (instance) => (await playerSessions.onInstance(instance)).online,
    onDeleted: (id) => {
      supervisor.forget(id);
      bridge.forget(id);
    },
  });
  // Imports are world-sized archives: the layer limits apply (no separate knobs yet).
  const imports = new ImportStore({
    dataDir: config.dataDir,
    clock,
    logger: logger.child({ component: 'imports' }),
    maxArchiveBytes: config.maxLayerArchiveBytes,
    maxExtractedBytes: config.maxLayerExtractedBytes,
  });
  await imports.init();
  const handlers: CommandHandlers = {
    create: new CreateHandler({
      store,
      driver,
      clock,
      endercloudUser: config.endercloudUser,
      imports,
      onStarted,
      networkSecret,
      archives: backupStore,
    }),
    cleanup: new CleanupHandler(driver),
    ...(Object.fromEntries(INSTANCE_ACTIONS.map((action) => [action, actions])) as Record<InstanceAction, ActionRunner>),
  };
  const worker: CommandWorker = new CommandWorker({
    handlers,
    store,
    clock,
    workerId: node.claimer,
    isActive: () => leadership.isLeader(),
    logger: logger.child({ component: 'command-worker' }),
    pollIntervalMs: config.commandPollIntervalMs,
    leaseMs: config.commandLeaseMs,
    batchSize: config.commandBatchSize,
    retry: { initialDelayMs: config.commandRetryInitialMs, maxDelayMs: config.commandRetryMaxMs, multiplier: 2, jitter: 0.5 },
    ...(deps.random ? { random: deps.random } : {}),
    hooks: {
      onOutcome: (kind, outcome) => {
        metrics.commandOutcome(kind, outcome);
        deps.hooks?.onOutcome?.(kind, outcome);
      },
    },
  });
  const supervisor: Supervisor = new Supervisor({
    store,
    driver,
    clock,
    logger: logger.child({ component: 'supervisor' }),
    prober,
    lifecycle,
    intervalMs: config.superviseIntervalMs,
    unknownGraceMs: config.unknownGraceMs,
    isActive: () => leadership.isLeader(),
    inventorySweepMs: config.inventorySweepMs,
    crashLoopDefaults,
    ...(deps.timers ? { timers: deps.timers } : {}),
  });
  const onCommandsQueued = () => worker.kick();
  const tokens = new TokenService({ store, clock, logger, adminToken: config.adminToken, agentToken: config.agentToken });
  const layers = new LayerStore({
    dataDir: config.dataDir,
    store,
    clock,
    logger: logger.child({ component: 'layers' }),
    maxArchiveBytes: config.maxLayerArchiveBytes,
    maxExtractedBytes: config.maxLayerExtractedBytes,
  });
  await layers.init();
  const hosts = new HostService({
    store,
    driver: plainDriver,
    clock: hostClock,
    logger: logger.child({ component: 'hosts' }),
    onCommandsQueued,
    commandMaxAttempts: config.commandMaxAttempts,
    onReturned: (hostId) => hostMoves.returned(hostId),
    onRecovered: () => supervisor.kick(),
  });
  const detector = new OfflineDetector({
    store,
    clock: hostClock,
    logger: logger.child({ component: 'offline-detector' }),
    missedBeats: config.hostOfflineAfterBeats,
    sweepIntervalMs: config.offlineSweepIntervalMs,
    onOffline: (hostId) => hostMoves.lost(hostId),
  });
  const registry = new RegistryFeed({ store, clock, logger: logger.child({ component: 'registry' }), changes });
  // RCON calls are quick: they do not inherit the agent timeout sized for image pulls.
  const rconDriver = new AgentHostDriver({
    transport,
    token: config.agentToken,
    callCredentials,
    timeoutMs: Math.min(RCON_CALL_TIMEOUT_MS, config.agentRequestTimeoutMs),
    epoch: leaseEpoch,
  });
  const transfers = new TransferService({
    store,
    clock,
    logger: logger.child({ component: 'transfers' }),
    feed: registry,
    driver: rconDriver,
    routerAddress: config.routerPublicAddress,
  });
  const creator = new InstanceCreator({
    store,
    clock,
    maxTotalInstances: config.maxTotalInstances,
    commandMaxAttempts: config.commandMaxAttempts,
    onCommandsQueued,
    imports,
    ...(deps.generateSecret ? { generateSecret: deps.generateSecret } : {}),
  });
  const playerSessions = new PlayerSessions({ store, clock });
  const fleet = new FleetService({ store, clock, logger: logger.child({ component: 'fleet' }), creator, lifecycle, changes });
  const hostMoves = new HostMoves({ store, clock, logger: logger.child({ component: 'host-moves' }), fleet });
  const idleTiers = new IdleTierSettings(store, config.idleTiers);
  const provisioner = new Provisioner({
    store,
    clock,
    logger: logger.child({ component: 'provisioner' }),
    lifecycle,
    fleet,
    idleTiers,
    intervalMs: config.provisionIntervalMs,
    maxTotalInstances: config.maxTotalInstances,
    ...(deps.timers ? { timers: deps.timers } : {}),
    isActive: () => leadership.isLeader(),
  });
  const backupScheduler = new BackupScheduler({
    store,
    clock,
    logger: logger.child({ component: 'backup-scheduler' }),
    lifecycle,
    backupStore,
    driver,
    intervalMs: config.backupScheduleIntervalMs,
    ...(deps.timers ? { timers: deps.timers } : {}),
    isActive: () => leadership.isLeader(),
  });
  const schedules = new ScheduleService({
    store,
    clock,
    logger: logger.child({ component: 'schedules' }),
    lifecycle,
    driver: rconDriver,
    intervalMs: config.backupScheduleIntervalMs,
    ...(deps.timers ? { timers: deps.timers } : {}),
    ...(deps.scheduleWait ? { wait: deps.scheduleWait } : {}),
    isActive: () => leadership.isLeader(),
  });
  metrics.leadership(leadership);
  const ctx: ServerContext = {
    backupStore,
    backupRequests: new BackupRequestService({ lifecycle, imports, backupStore, clock }),
    backupScheduler,
    schedules,
    nodeId: node.nodeId,
    leadership,
    readiness: new DatabaseReadiness({ store, timeoutMs: config.readyTimeoutMs }),
    files: new InstanceFileService({
      store,
      clock,
      lifecycle,
      driver: plainDriver,
      logger: logger.child({ component: 'files' }),
      maxUploadBytes: config.fileUploadMaxBytes,
    }),
    queries: new ReadQueries(store),
    auditLog: new AuditLog(store),
    hostRemoval: new HostRemoval({ store, driver: plainDriver, clock }),
    installationRequests: new InstallationRequestService({ store, clock, creator }),
    webSessions: new WebSessionService({
      store,
      clock,
      logger: logger.child({ component: 'web' }),
      tokens,
      adminToken: config.adminToken,
      publicUrl: config.publicUrl,
    }),
    config,
    clock,
    logger,
    version: packageVersion(),
    tokens,
    hosts,
    enrolment: new HostEnrolmentService({ store, clock, callCredentials }),
    layers,
    imports,
    metrics,
    driver: plainDriver,
    lifecycle,
    supervisor,
    updates: new UpdateService({ store, clock, lifecycle, images: plainDriver }),
    adoption: new AdoptionService({
      store,
      driver: plainDriver,
      clock,
      logger: logger.child({ component: 'adoption' }),
      maxTotalInstances: config.maxTotalInstances,
      endercloudUser: config.endercloudUser,
      // A running container is probed at once (starting → online/degraded); the supervisor's tick would find it too.
      onAdopted: (instance) => {
        if (instance.state === 'starting') supervisor.watch(instance.id);
      },
    }),
    bridgeEvents: new BridgeEvents({ store, clock, signals: bridge }),
    changes,
    registry,
    transfers,
    playerSessions,
    fleet,
    networkSecret,
    idleTiers,
    catalog: new CatalogService(store, clock),
    instances: creator,
    previewer: new InstancePreviewer({ store, clock, planner: creator, maxTotalInstances: config.maxTotalInstances }),
  };
  // Generated at the first start, never a default; kept in the store, sealed, never in a template (docs/provisioning.md "Network secret and template caps").
  await networkSecret.get();
  const adminToken = await tokens.ensureAdminToken(config.dataDir);
  const app = await buildApp(ctx, deps.hooks?.onAnswer ? { onAnswer: deps.hooks.onAnswer } : {});
  await app.ready();

  let stopped = false;
  const orchestrator: Orchestrator = {
    app,
    ctx,
    store,
    worker,
    detector,
    supervisor,
    provisioner,
    leadership,
    node,
    adminToken,
    url: config.publicUrl ?? '',
    publicUrl: config.publicUrl ?? '',
    async stop() {
      if (stopped) return;
      stopped = true;
      await app.close();
      registry.close();
      await detector.stop();
      await supervisor.stop();
      await provisioner.stop();
      await metrics.instanceStats?.stop();
      await backupScheduler.stop();
      await schedules.stop();
      await worker.stop();
      await hosts.whenIdle();
      stopLeaderLoops();
      await leadership.stop();
      ownedDatabaseClock?.stop();
      ownedTransport?.close();
      await ownedChanges?.close();
      if (ownsStore) await store.close();
    },
  };
  // Loops already running idle while another replica leads; they start their round at once when this one takes over.
  const gates = [whenLeader(leadership, worker), whenLeader(leadership, supervisor), whenLeader(leadership, provisioner)];
  const stopLeaderLoops = () => gates.forEach((g) => g.dispose());
  if (deps.runWorker !== false) worker.start();
  if (deps.runOfflineDetector !== false) detector.start();
  if (deps.runSupervisor !== false) supervisor.start();
  if (deps.runProvisioner !== false) provisioner.start();
  metrics.instanceStats?.start();
  if (deps.runBackupScheduler !== false) backupScheduler.start();
  if (deps.runSchedules !== false) schedules.start();
  return orchestrator;
}

/** Builds, listens on config.listenHost:listenPort (port 0 picks a free one), and starts the loops. */
export async function startOrchestrator(config: Readonly<OrchestratorConfig>, deps: OrchestratorDeps = {}): Promise<Orchestrator> {
  const o = await buildOrchestrator(config, deps);
  try {
    await o.app.listen({ host: config.listenHost, port: config.listenPort });
  } catch (err) {
    await o.stop();
    throw err;
  }
  const sftpPort = deps.sftpPort ?? (config.sftpPort === 0 ? undefined : config.sftpPort);
  if (sftpPort !== undefined) {
    try {
      const sftp = await startSftpServer({
        files: o.ctx.files,
        tokens: o.ctx.tokens,
        audit: o.ctx.auditLog,
        clock: o.ctx.clock,
        dataDir: config.dataDir,
        host: config.sftpHost,
        port: sftpPort,
        logger: o.ctx.logger.child({ component: 'sftp' }),
      });
      o.sftp = { host: sftp.host, port: sftp.port };
      const stopRest = o.stop;
      o.stop = async () => {
        await sftp.close();
        await stopRest();
      };
    } catch (err) {
      await o.stop();
      throw new Error(
        `the SFTP server cannot listen on ${config.sftpHost}:${sftpPort} (${(err as Error).message}); ENDERCLOUD_SFTP_PORT chooses another port, 0 turns it off`,
        { cause: err },
      );
    }
  }
  const address = o.app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.listenPort;
  const host = config.listenHost === '0.0.0.0' || config.listenHost === '::' ? '127.0.0.1' : config.listenHost;
  o.url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  o.publicUrl = config.publicUrl ?? o.url;
  return o;
}
