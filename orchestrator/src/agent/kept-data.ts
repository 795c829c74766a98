// Kept data: instance directories (worlds) and backups left on this host
// after a scoped delete kept them, i.e. with no managed container. Listed for
// the orchestrator (GET /kept-data), which keeps only those of deleted
// instances, and purged on request; a live instance's data is never touched here.

import { randomBytes } from 'node:crypto';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import {
  InstanceParams,
  KeptDataAttachBody,
  type KeptDataAttached,
  type KeptDataList,
  type KeptDataPurged,
} from '../contracts/agent-api.js';
import { AppError } from '../shared/errors.js';
import { RESOURCE_ID_PATTERN } from '../shared/ids.js';
import type { BackupService } from './backups.js';
import type { RuntimeDirectories } from './contracts.js';
import { swapDirectory } from '../shared/fs-errors.js';

export interface KeptDataOptions {
  /** `<runtime>/instances` as the agent sees it. */
  instancesDirectory: string;
  directories: RuntimeDirectories;
  backups: BackupService;
  /** The managed container of an id, if any: its data is live, not kept. */
  findContainer(instanceId: string): Promise<{ state: string } | undefined>;
}

/** A container that may have its world swapped: never started, or stopped. */
const ATTACHABLE = new Set(['created', 'exited', 'dead']);

export class KeptData {
  constructor(private readonly deps: KeptDataOptions) {}

  private async hasContainer(id: string): Promise<boolean> {
    return (await this.deps.findContainer(id)) !== undefined;
  }

  async list(): Promise<KeptDataList> {
    let dirs: string[] = [];
    try {
      dirs = (await readdir(this.deps.instancesDirectory)).filter((n) => !n.startsWith('.') && RESOURCE_ID_PATTERN.test(n));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const ids = [...new Set([...dirs, ...(await this.deps.backups.instanceIds())])].sort();
    const keptData: KeptDataList['keptData'] = [];
    for (const id of ids) {
      if (await this.hasContainer(id)) continue;
      keptData.push({ instanceId: id, data: dirs.includes(id), backups: await this.deps.backups.list(id) });
    }
    return { keptData };
  }

  async purge(instanceId: string): Promise<KeptDataPurged> {
    if (await this.hasContainer(instanceId)) {
      throw new AppError(
        'INSTANCE_CONFLICT',
        `instance ${instanceId} still has a managed container on this host; its data is not kept data`,
      );
    }
    const dataRemoved = await this.deps.directories.exists(instanceId);
    if (dataRemoved) await this.deps.directories.remove(instanceId);
    const { deleted } = await this.deps.backups.deleteAll(instanceId);
    return { instanceId, dataRemoved, backupsRemoved: deleted };
  }

  /**
   * Gives instance `to` (a managed container, not running) the kept world of
   * `keptId`: the kept directory becomes `to`'s instance directory (the one its
   * container mounts), `to`'s fresh one is removed. Ownership is never changed:
   * the kept world must already belong to the user `to` runs as. Backups stay
   * under the kept id (still listed; purge them when no longer wanted).
   */
  async attach(keptId: string, to: string): Promise<KeptDataAttached> {
    if (keptId === to) throw new AppError('BAD_REQUEST', 'attach needs another instance than the kept one');
    if (await this.hasContainer(keptId))
      throw new AppError('INSTANCE_CONFLICT', `instance ${keptId} still has a managed container on this host; its data is not kept data`);
    const target = await this.deps.findContainer(to);
    if (!target)
      throw new AppError('INSTANCE_CONFLICT', `instance ${to} has no managed container on this host: create it first (with start: false)`);
    if (!ATTACHABLE.has(target.state))
      throw new AppError('INSTANCE_BUSY', `instance ${to} is ${target.state}: stop it before attaching a kept world`);
    const from = this.deps.directories.localPath(keptId);
    const dest = this.deps.directories.localPath(to);
    const kept = await lstat(from).catch(() => undefined);
    if (!kept?.isDirectory()) throw new AppError('NOT_FOUND', `no kept world of instance ${keptId} on this host`);
    const fresh = await lstat(dest).catch(() => undefined);
    if (fresh && (fresh.uid !== kept.uid || fresh.gid !== kept.gid)) {
      throw new AppError(
        'INSTANCE_CONFLICT',
        `the kept world of ${keptId} belongs to ${kept.uid}:${kept.gid} but instance ${to} runs as ${fresh.uid}:${fresh.gid}; create it with user {"mode": "custom", "uid": ${kept.uid}, "gid": ${kept.gid}}`,
      );
    }
    const aside = join(this.deps.instancesDirectory, `.attach-old-${to}-${randomBytes(6).toString('hex')}`);
    await swapDirectory(dest, from, aside, fresh !== undefined);
    return { instanceId: to, from: keptId, replacedFresh: fresh !== undefined };
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
  api.post('/kept-data/:id/attach', { schema: { params: InstanceParams, body: KeptDataAttachBody } }, async (req) => {
    const { id } = req.params as InstanceParams;
    const result = await kept.attach(id, (req.body as KeptDataAttachBody).instanceId);
    req.log.info(result, 'kept world attached');
    return result;
  });
}
