// Importing existing data (a world) into a created, not running instance: the
// gzip tar is extracted with the shared safe extractor into a staging dir beside
// the instance dirs, given to the container user, then moved in entry by entry —
// only where nothing exists yet, so an import never overwrites a world.

import { randomBytes } from 'node:crypto';
import { lchown, lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import { DATA_IMPORT_CONTENT_TYPES, DataImportQuery, InstanceParams, type DataImportResult } from '../contracts/agent-api.js';
import { AppError } from '../shared/errors.js';
import { RESOURCE_ID_PATTERN, assertId } from '../shared/ids.js';
import { extractTarGz } from '../shared/safe-tar.js';
import type { KeyedLock } from './async-lock.js';
import { directoryOwner, recordedUser } from './container-config.js';
import { checkImportPath } from './relative-path.js';
import { giveTree, type Owner } from './ownership.js';
import { lstatOrUndefined } from '../shared/fs-errors.js';
import type { RuntimeDirectories } from './contracts.js';
import type { ContainerDetails } from './runtime.js';

export interface DataImporterOptions {
  directories: RuntimeDirectories;
  findOwned(instanceId: string): Promise<ContainerDetails | undefined>;
  /** The agent's one per-instance lock (InstanceService.instanceLocks): an import never runs beside a start. */
  instanceLocks: KeyedLock;
  maxCompressedBytes?: number;
  maxExtractedBytes?: number;
}

export type { DataImportResult };

const STOPPED = new Set(['exited', 'created', 'dead']);
const STAGING_PREFIX = '.staging-import-'; // cleared at agent start like other staging dirs
const GiB = 1024 ** 3;
/** The bounds of an extracted upload (data import, and the files API's extract and upload). */
export const DATA_IMPORT_LIMITS = { maxCompressedBytes: 4 * GiB, maxExtractedBytes: 16 * GiB } as const;

async function exists(path: string): Promise<boolean> {
  return (await lstatOrUndefined(path)) !== undefined;
}

export class DataImporter {
  constructor(private readonly deps: DataImporterOptions) {}

  importData(instanceId: string, rawPath: string | undefined, source: Readable): Promise<DataImportResult> {
    let rel: string;
    try {
      assertId('instance id', instanceId, RESOURCE_ID_PATTERN);
      rel = checkImportPath(rawPath);
    } catch (err) {
      source.destroy();
      throw err;
    }
    return this.deps.instanceLocks.run(instanceId, () => this.importLocked(instanceId, rel, source));
  }

  private async importLocked(instanceId: string, rel: string, source: Readable): Promise<DataImportResult> {
    const fail = (err: AppError): never => {
      source.destroy();
      throw err;
    };
    const container = await this.deps.findOwned(instanceId);
    if (!container)
      fail(new AppError('INSTANCE_CONFLICT', `instance ${instanceId} has no container on this host: create it (without starting) first`));
    if (!STOPPED.has(container!.state))
      fail(
        new AppError(
          'INSTANCE_BUSY',
          `cannot import data into instance ${instanceId} while its container is ${container!.state}: stop it first`,
        ),
      );
    const root = this.deps.directories.localPath(instanceId);
    const rootStat = await lstat(root).catch(() => undefined);
    if (!rootStat?.isDirectory()) fail(new AppError('INSTANCE_CONFLICT', `instance ${instanceId} has no runtime directory`));
    // The instance user as create set it; a named or image-default user: the runtime directory's owner.
    const user = recordedUser(container!.labels, container!.user);
    const owner: Owner = /^\d+(:\d+)?$/.test(user) ? (directoryOwner(user) as Owner) : { uid: rootStat!.uid, gid: rootStat!.gid };
    const destination = rel === '' ? root : join(root, rel);
    const staging = join(dirname(root), `${STAGING_PREFIX}${instanceId}-${randomBytes(6).toString('hex')}`);
    try {
      const result = await extractTarGz(source, staging, {
        maxCompressedBytes: this.deps.maxCompressedBytes ?? DATA_IMPORT_LIMITS.maxCompressedBytes,
        maxExtractedBytes: this.deps.maxExtractedBytes ?? DATA_IMPORT_LIMITS.maxExtractedBytes,
      });
      const names = await readdir(staging);
      const destStat = await lstat(destination).catch(() => undefined);
      if (destStat && !destStat.isDirectory())
        throw new AppError('INSTANCE_CONFLICT', `import destination ${JSON.stringify(rel)} exists and is not a directory`);
      // Never overwrite: the destination must be absent or empty, or hold none of the imported names.
      const clashes: string[] = [];
      if (destStat) for (const n of names) if (await exists(join(destination, n))) clashes.push(n);
      if (clashes.length > 0) {
        throw new AppError(
          'INSTANCE_CONFLICT',
          `import destination ${JSON.stringify(rel || '.')} already holds ${clashes.slice(0, 5).join(', ')}: an import never overwrites existing data`,
        );
      }
      if (owner.uid !== process.getuid?.() || owner.gid !== process.getgid?.()) await giveTree(staging, owner);
      if (!destStat) await this.makeParents(root, rel, owner);
      for (const n of names) await rename(join(staging, n), join(destination, n));
      return { path: rel || '.', entries: result.entries, sizeBytes: result.extractedBytes };
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }

  /** Creates the missing directories of `rel` under the root, owned by the instance user. */
  private async makeParents(root: string, rel: string, owner: Owner): Promise<void> {
    let current = root;
    for (const segment of rel.split('/')) {
      current = join(current, segment);
      const s = await lstat(current).catch(() => undefined);
      if (s && !s.isDirectory()) throw new AppError('INSTANCE_CONFLICT', `import destination ${JSON.stringify(rel)} crosses a file`);
      if (!s) {
        await mkdir(current, { mode: 0o755 });
        await lchown(current, owner.uid, owner.gid);
      }
    }
  }
}

export async function registerDataImportRoutes(api: FastifyInstance, importer: DataImporter): Promise<void> {
  await api.register(async (scope) => {
    // The body stays a stream: extractTarGz bounds and checks it.
    scope.addContentTypeParser(DATA_IMPORT_CONTENT_TYPES, (_req, payload, done) => done(null, payload));
    scope.put('/instances/:id/data', { schema: { params: InstanceParams, querystring: DataImportQuery } }, async (req) => {
      const { id } = req.params as InstanceParams;
      const body = req.body as Readable | undefined;
      if (!body || typeof body.pipe !== 'function')
        throw new AppError('VALIDATION_FAILED', 'send the data as a gzip tar (content-type application/gzip)');
      const result = await importer.importData(id, (req.query as DataImportQuery).path, body);
      req.log.info({ instanceId: id, ...result }, 'data imported');
      return result;
    });
  });
}
