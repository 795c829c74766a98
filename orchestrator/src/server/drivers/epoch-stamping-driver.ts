// The one place the reconciler lease's fencing epoch is put on host calls: a
// HostDriver decorator that stamps `ids.epoch` with the epoch this process
// last held the lease under. After losing the lease (paused, partitioned) it
// keeps sending that old epoch, so a host that has seen a newer leader refuses
// its mutating calls (STALE_LEADER) instead of acting twice.

import type { CallIds, HostDriver } from './host-driver.js';

/** Where the epoch comes from (the leader lease): null while this process never held it. */
export interface EpochSource {
  epoch(): number | null;
}

export function stampEpoch(ids: CallIds | undefined, source: EpochSource): CallIds {
  const epoch = source.epoch();
  return epoch === null ? { ...ids } : { ...ids, epoch };
}

export function epochStampingDriver(inner: HostDriver, source: EpochSource): HostDriver {
  const s = (ids: CallIds | undefined): CallIds => stampEpoch(ids, source);
  const { backups, images, rcon, dataImport } = inner;
  return {
    inventory: (host, ids) => inner.inventory(host, s(ids)),
    create: (host, id, request, ids) => inner.create(host, id, request, s(ids)),
    start: (host, id, ids) => inner.start(host, id, s(ids)),
    stop: (host, id, request, ids) => inner.stop(host, id, request, s(ids)),
    pause: (host, id, ids) => inner.pause(host, id, s(ids)),
    resume: (host, id, ids) => inner.resume(host, id, s(ids)),
    replace: (host, id, request, ids) => inner.replace(host, id, request, s(ids)),
    remove: (host, id, scope, ids) => inner.remove(host, id, scope, s(ids)),
    inspect: (host, id, ids) => inner.inspect(host, id, s(ids)),
    logs: (host, id, request, ids) => inner.logs(host, id, request, s(ids)),
    cleanup: (host, request, ids) => inner.cleanup(host, request, s(ids)),
    ...(backups ? {
      backups: {
        create: (host, id, request, ids) => backups.create(host, id, request, s(ids)),
        list: (host, id, ids) => backups.list(host, id, s(ids)),
        restore: (host, id, backupId, ids) => backups.restore(host, id, backupId, s(ids)),
        delete: (host, id, backupId, ids) => backups.delete(host, id, backupId, s(ids)),
        deleteAll: (host, id, ids) => backups.deleteAll(host, id, s(ids)),
      },
    } : {}),
    ...(images ? { images: { inspectImage: (host, ref, options, ids) => images.inspectImage(host, ref, options, s(ids)) } } : {}),
    ...(rcon ? { rcon: { command: (host, id, request, ids) => rcon.command(host, id, request, s(ids)) } } : {}),
    ...(dataImport ? { dataImport: { importData: (host, id, path, archive, ids) => dataImport.importData(host, id, path, archive, s(ids)) } } : {}),
  };
}
