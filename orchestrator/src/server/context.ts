// What the HTTP routes are given: the services, built once by the composition
// root (orchestrator.ts) and injected into the app. Never the store: reads go
// through ReadQueries, writes through a service (docs/architecture.md).

import type { Logger } from '../shared/logger.js';
import type { TokenService } from './auth/tokens.js';
import type { Clock } from './clock.js';
import type { OrchestratorConfig } from './config.js';
import type { OrchestratorMetrics } from './metrics.js';
import type { CatalogService } from './services/catalog-service.js';
import type { HostService } from './services/host-service.js';
import type { InstanceCreator } from './services/instance-creator.js';
import type { ImportStore } from './services/import-store.js';
import type { LayerStore } from './services/layer-store.js';
import type { HostDriver } from './drivers/host-driver.js';
import type { AdoptionService } from './services/adoption.js';
import type { UpdateService } from './services/update-service.js';
import type { LifecycleService } from './services/lifecycle-service.js';
import type { BackupRequestService } from './services/backup-requests.js';
import type { BridgeEvents } from './lifecycle-engine/bridge-events.js';
import type { ChangePort } from './changes/change-port.js';
import type { RegistryFeed } from './registry/registry-feed.js';
import type { TransferService } from './registry/transfer-service.js';
import type { PlayerSessions } from './services/player-sessions.js';
import type { FleetService } from './provisioning/fleet-service.js';
import type { IdleTierSettings } from './provisioning/idle-tier-settings.js';
import type { InstancePreviewer } from './services/instance-preview.js';
import type { NetworkSecret } from './provisioning/network-secret.js';
import type { Supervisor } from './lifecycle-engine/supervisor.js';
import type { BackupStore } from './services/backup-store.js';
import type { BackupScheduler } from './services/backup-scheduler.js';
import type { ScheduleService } from './services/schedules.js';
import type { Leadership } from './leadership/leadership.js';
import type { DatabaseReadiness } from './services/readiness.js';
import type { InstanceFileService } from './services/instance-files.js';
import type { ReadQueries } from './services/read-queries.js';
import type { AuditLog } from './services/audit-log.js';
import type { InstallationRequestService } from './services/installation-requests.js';
import type { WebSessionService } from './web/web-sessions.js';
import type { HostRemoval } from './services/host-removal.js';
import type { HostEnrolmentService } from './services/host-enrolment.js';

export interface ServerContext {
  config: Readonly<OrchestratorConfig>;
  /** Every list and lookup the routes answer with. */
  queries: ReadQueries;
  auditLog: AuditLog;
  /** Deleting a host record, and the kept data of deleted instances. */
  hostRemoval: HostRemoval;
  installationRequests: InstallationRequestService;
  /** The panel's login sessions (server/web). */
  webSessions: WebSessionService;
  clock: Clock;
  logger: Logger;
  version: string;
  tokens: TokenService;
  hosts: HostService;
  /** Join tokens, agent enrolment and host credentials (issue 26). */
  enrolment: HostEnrolmentService;
  layers: LayerStore;
  imports: ImportStore;
  catalog: CatalogService;
  instances: InstanceCreator;
  metrics: OrchestratorMetrics;
  driver: HostDriver;
  updates: UpdateService;
  adoption: AdoptionService;
  lifecycle: LifecycleService;
  supervisor: Supervisor;
  bridgeEvents: BridgeEvents;
  /** Announces committed changes (the registry feed and the panel listen). */
  changes: ChangePort;
  /** The routers' registry view and its change feed. */
  registry: RegistryFeed;
  transfers: TransferService;
  playerSessions: PlayerSessions;
  fleet: FleetService;
  /** Idle tiers: the system's default, a group's, an instance's override. */
  idleTiers: IdleTierSettings;
  previewer: InstancePreviewer;
  networkSecret: NetworkSecret;
  /** Off-host copies of backups (ENDERCLOUD_BACKUP_DIR). */
  backupStore: BackupStore;
  /** Manual backups and restores as the API asks for them. */
  backupRequests: BackupRequestService;
  backupScheduler: BackupScheduler;
  schedules: ScheduleService;
  /** This replica's node id (ENDERCLOUD_NODE_ID or `<data>/node-id`). */
  nodeId: string;
  /** The reconciler lease: who leads, for /health and /metrics. */
  leadership: Leadership;
  /** GET /ready: does the database answer. */
  readiness: DatabaseReadiness;
  /** Instance data files (the files routes and SFTP). */
  files: InstanceFileService;
}

/** The audit actor of a request: the token's name. */
export function actorOf(request: { principal?: { name: string } }): string {
  return request.principal?.name ?? 'anonymous';
}
