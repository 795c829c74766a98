// DEPRECATED shim: the old URL-first agent client, now a thin wrapper over
// AgentHostDriver (src/server/drivers/agent-driver.ts), kept only while the
// call sites in src/server/** move to the HostDriver seam. Delete it then.
// Types are re-exported from the agent contract; nothing is declared here.

import type { Readable } from 'node:stream';
import type * as Api from '../contracts/agent-api.js';
import { AgentHostDriver, type AgentDriverOptions } from './drivers/agent-driver.js';
import type { CallIds, DriverHost } from './drivers/host-driver.js';

export type { CallIds };
/** @deprecated use CreateInstanceRequest from drivers/host-driver.ts */
export type AgentCreateBody = Api.CreateInstanceBody;
/** @deprecated use ReplaceInstanceRequest from drivers/host-driver.ts */
export type AgentReplaceBody = Api.ReplaceBody;
/** @deprecated use StopRequest from drivers/host-driver.ts */
export type AgentStopBody = Api.StopBody;
/** @deprecated use StopOutcome from drivers/host-driver.ts */
export type AgentStopResult = Api.StopAnswer;
/** @deprecated use InstanceDetails from drivers/host-driver.ts */
export type AgentContainerDetails = Api.InstanceDetails;
/** @deprecated use InstanceEndpoint from drivers/host-driver.ts */
export type AgentInstanceEndpoint = Api.InstanceEndpoint;
/** @deprecated use InventoryEntry from drivers/host-driver.ts */
export type AgentInventoryEntry = Api.InventoryEntry;
/** @deprecated use CleanupReport from drivers/host-driver.ts */
export type AgentCleanupReport = Api.CleanupReport;
export type ImageInfo = Api.ImageInfo;
export type BackupInfo = Api.BackupInfo;
export type AgentClientOptions = AgentDriverOptions;
export type PowerAction = 'start' | 'stop' | 'pause' | 'unpause';

/** @deprecated use HostDriver['backups'] */
export interface BackupAgent {
  create(controlUrl: string, instanceId: string, body: { backupId: string; paths?: string[] }, ids?: CallIds): Promise<BackupInfo>;
  list(controlUrl: string, instanceId: string, ids?: CallIds): Promise<BackupInfo[]>;
  deleteAll(controlUrl: string, instanceId: string, ids?: CallIds): Promise<{ deleted: number }>;
  restore(controlUrl: string, instanceId: string, backupId: string, ids?: CallIds): Promise<{ restored: string; safetyBackupId: string | null }>;
}

/** The shim only knows a URL; the driver reads nothing else of a host. */
const at = (controlUrl: string): DriverHost => ({ id: controlUrl, controlUrl });

/** @deprecated use AgentHostDriver (drivers/agent-driver.ts) through the HostDriver interface. */
export class AgentClient {
  /** The driver this shim wraps: migrated call sites use it directly. */
  readonly driver: AgentHostDriver;
  readonly backups: BackupAgent;

  constructor(o: AgentClientOptions) {
    const d = (this.driver = new AgentHostDriver(o));
    this.backups = {
      create: (url, id, body, ids) => d.backups.create(at(url), id, body, ids),
      list: (url, id, ids) => d.backups.list(at(url), id, ids),
      deleteAll: (url, id, ids) => d.backups.deleteAll(at(url), id, ids),
      restore: (url, id, backupId, ids) => d.backups.restore(at(url), id, backupId, ids),
    };
  }

  inventory(controlUrl: string, ids: CallIds = {}): Promise<AgentInventoryEntry[]> {
    return this.driver.inventory(at(controlUrl), ids);
  }

  create(controlUrl: string, instanceId: string, body: AgentCreateBody, ids: CallIds = {}): Promise<AgentInstanceEndpoint> {
    return this.driver.create(at(controlUrl), instanceId, body, ids);
  }

  importData(controlUrl: string, instanceId: string, path: string, archive: Readable, ids: CallIds = {}): Promise<Api.DataImportResult> {
    return this.driver.dataImport.importData(at(controlUrl), instanceId, path, archive, ids);
  }

  power(controlUrl: string, instanceId: string, action: PowerAction, body: Record<string, unknown> | undefined, ids: CallIds = {}): Promise<AgentInstanceEndpoint> {
    const host = at(controlUrl);
    if (action === 'stop') return this.driver.stop(host, instanceId, (body ?? {}) as Api.StopBody, ids);
    if (action === 'pause') return this.driver.pause(host, instanceId, ids);
    if (action === 'unpause') return this.driver.resume(host, instanceId, ids);
    return this.driver.start(host, instanceId, ids);
  }

  remove(controlUrl: string, instanceId: string, ids: CallIds = {}, scope: Api.DeleteScope = {}): Promise<Api.DeleteReport> {
    return this.driver.remove(at(controlUrl), instanceId, scope, ids);
  }

  cleanup(controlUrl: string, instanceIds: readonly string[], ids: CallIds = {}, keepDataFor?: readonly string[]): Promise<AgentCleanupReport> {
    return this.driver.cleanup(at(controlUrl), keepDataFor ? { instanceIds, keepDataFor } : { instanceIds }, ids);
  }

  inspect(controlUrl: string, instanceId: string, ids: CallIds = {}): Promise<AgentContainerDetails> {
    return this.driver.inspect(at(controlUrl), instanceId, ids);
  }

  stop(controlUrl: string, instanceId: string, body: AgentStopBody, ids: CallIds = {}): Promise<AgentStopResult> {
    return this.driver.stop(at(controlUrl), instanceId, body, ids);
  }

  rcon(controlUrl: string, instanceId: string, body: Api.RconBody, ids: CallIds = {}): Promise<Api.RconAnswer> {
    return this.driver.rcon.command(at(controlUrl), instanceId, body, ids);
  }

  replace(controlUrl: string, instanceId: string, body: AgentReplaceBody, ids: CallIds = {}): Promise<Api.ReplaceResult> {
    return this.driver.replace(at(controlUrl), instanceId, body, ids);
  }

  logs(controlUrl: string, instanceId: string, tail: number, ids: CallIds = {}, options: { sinceStart?: boolean } = {}): Promise<string> {
    return this.driver.logs(at(controlUrl), instanceId, { tail, ...options }, ids);
  }

  inspectImage(controlUrl: string, ref: string, pull: boolean, ids: CallIds = {}): Promise<ImageInfo> {
    return this.driver.images.inspectImage(at(controlUrl), ref, { pull }, ids);
  }
}
