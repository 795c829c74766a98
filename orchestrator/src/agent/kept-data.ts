// Kept data: instance directories (worlds) and backups left on this host
// after a scoped delete kept them, i.e. with no managed container. Listed for
// the orchestrator (GET /kept-data), which keeps only those of deleted
// instances, and purged on request; a live instance's data is never touched here.

import { readdir } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { InstanceParams, type KeptDataList, type KeptDataPurged } from '../contracts/agent-api.js';
import { AppError } from '../shared/errors.js';
import { INSTANCE_ID_PATTERN } from '../shared/ids.js';
import type { BackupService } from './backups.js';
import type { RuntimeDirectories } from './contracts.js';

export interface KeptDataOptions {
  /** `<runtime>/instances` as the agent sees it. */
  instancesDirectory: string;
  directories: RuntimeDirectories;
  backups: BackupService;
  /** The managed container of an id, if any: its data is live, not kept. */
  hasContainer(instanceId: string): Promise<boolean>;
}

export class KeptData {
  constructor(private readonly o: KeptDataOptions) {}

  async list(): Promise<KeptDataList> {
    let dirs: string[] = [];
    try {
      dirs = (await readdir(this.o.instancesDirectory)).filter((n) => !n.startsWith('.') && INSTANCE_ID_PATTERN.test(n));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const ids = [...new Set([...dirs, ...(await this.o.backups.instanceIds())])].sort();
    const keptData: KeptDataList['keptData'] = [];
    for (const id of ids) {
      if (await this.o.hasContainer(id)) continue;
      keptData.push({ instanceId: id, data: dirs.includes(id), backups: await this.o.backups.list(id) });
    }
    return { keptData };
  }

  async purge(instanceId: string): Promise<KeptDataPurged> {
    if (await this.o.hasContainer(instanceId)) {
      throw new AppError('INSTANCE_CONFLICT', `instance ${instanceId} still has a managed container on this host; its data is not kept data`);
    }
    const dataRemoved = await this.o.directories.exists(instanceId);
    if (dataRemoved) await this.o.directories.remove(instanceId);
    const { deleted } = await this.o.backups.deleteAll(instanceId);
    return { instanceId, dataRemoved, backupsRemoved: deleted };
  }
}

export function registerKeptDataRoutes(api: FastifyInstance, kept: KeptData): void {
  api.get('/kept-data', async (): Promise<KeptDataList> => kept.list());
  api.delete('/kept-data/:id', { schema: { params: InstanceParams } }, async (req) => {
    const { id } = req.params as InstanceParams;
    const result = await kept.purge(id);
    req.log.info(result, 'kept data purged');
    return result;
  });
}
