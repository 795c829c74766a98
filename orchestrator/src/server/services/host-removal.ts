// Removing what an operator no longer wants on the host side: a host record
// (only when it holds no instances, or `forget` for an OFFLINE one), and the
// data a scoped delete kept (worlds and backups of deleted instances).

import type { Host, Instance } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { capability, type HostDriver } from '../drivers/host-driver.js';
import type { BackupInfo } from '../drivers/host-driver.js';
import { moveInstance } from '../lifecycle-engine/instance-transitions.js';

interface HostRemovalDeps {
  store: Store;
  driver: HostDriver;
  clock: Clock;
}

export interface HostRemoved {
  hostId: string;
  status: Host['status'];
  /** Instances of a forgotten host, now intervention_required (their data was on that host). */
  forgottenInstances: string[];
}

/**
 * Deletes the host record. A host with instances is refused unless `forget`
 * and the host is OFFLINE: its instances then wait for an operator
 * (intervention_required), since their containers and data were on it. A live
 * agent registers again with its next heartbeat, so stop it first.
 */
async function removeHost(deps: HostRemovalDeps, hostId: string, forget: boolean, actor: string): Promise<HostRemoved> {
  const host = await deps.store.hosts.get(hostId);
  if (!host) throw new AppError('HOST_NOT_FOUND', `host ${hostId} is not registered`);
  if (forget && host.status !== 'OFFLINE') {
    throw new AppError(
      'CONFLICT',
      `host ${hostId} is ${host.status}: forget is only for an OFFLINE (dead) host; remove its instances and delete it without forget`,
    );
  }
  const instances = await deps.store.instances.list({ hostId });
  if (instances.length > 0 && !forget) {
    const hint =
      host.status === 'OFFLINE'
        ? `; it is OFFLINE: forget=true removes it anyway and hands its instances to an operator`
        : '; delete or move them first';
    throw new AppError('CONFLICT', `host ${hostId} still holds ${instances.length} instance(s) (e.g. ${instances[0]!.name})${hint}`, {
      details: { instances: instances.slice(0, 20).map((i) => i.id) },
    });
  }
  const now = deps.clock.now();
  const forgotten: string[] = [];
  for (const instance of instances) {
    if (instance.state === 'intervention_required') {
      forgotten.push(instance.id);
      continue;
    }
    const moved = await moveInstance(deps.store, instance, 'intervention_required', {
      now,
      actor,
      reason: `host ${hostId} was forgotten while OFFLINE; the container and data were on it (if the host returns, its recovery sees them again)`,
      patch: { activeAction: null },
    }).catch(() => undefined);
    if (moved) forgotten.push(instance.id);
  }
  await deps.store.hosts.delete(hostId);
  return { hostId, status: host.status, forgottenInstances: forgotten };
}

export interface KeptDataView {
  hostId: string;
  instanceId: string;
  data: boolean;
  backups: BackupInfo[];
}

/** Kept data on every reachable host, of ids the store no longer has an instance for; unreachable hosts are named. */
async function listKeptData(
  deps: HostRemovalDeps,
): Promise<{ keptData: KeptDataView[]; unreachable: { hostId: string; error: string }[] }> {
  const hosts = await deps.store.hosts.list({ statuses: ['ONLINE', 'MAINTENANCE', 'RECOVERING'] });
  const keptData: KeptDataView[] = [];
  const unreachable: { hostId: string; error: string }[] = [];
  for (const host of hosts) {
    try {
      for (const entry of await capability(deps.driver.keptData, 'kept data', host).list(host)) {
        if (await deps.store.instances.get(entry.instanceId)) continue; // a live (or stopped) instance's own data
        keptData.push({ hostId: host.id, ...entry });
      }
    } catch (err) {
      unreachable.push({ hostId: host.id, error: (err as Error).message });
    }
  }
  return { keptData, unreachable };
}

/** Removes one deleted instance's kept data and backups from its host. */
async function purgeKeptData(
  deps: HostRemovalDeps,
  hostId: string,
  instanceId: string,
): Promise<{ hostId: string; instanceId: string; dataRemoved: boolean; backupsRemoved: number }> {
  const host = await deps.store.hosts.get(hostId);
  if (!host) throw new AppError('HOST_NOT_FOUND', `host ${hostId} is not registered`);
  if (host.status === 'OFFLINE') throw new AppError('HOST_UNAVAILABLE', `host ${hostId} is OFFLINE; its kept data cannot be removed now`);
  if (await deps.store.instances.get(instanceId)) {
    throw new AppError(
      'CONFLICT',
      `instance ${instanceId} still exists; its data is not kept data (delete the instance with the scopes you want)`,
    );
  }
  const result = await capability(deps.driver.keptData, 'kept data', host).purge(host, instanceId);
  return { hostId, ...result };
}

/**
 * Gives a new instance the kept world of a deleted one on the same host: the
 * target must be `stopped` there with no action in flight (create it with
 * `start: false`, and the kept world's uid:gid as its user), then started as usual.
 */
async function attachKeptData(
  deps: HostRemovalDeps,
  hostId: string,
  keptId: string,
  target: Instance,
): Promise<{ hostId: string; instanceId: string; from: string; replacedFresh: boolean }> {
  const host = await deps.store.hosts.get(hostId);
  if (!host) throw new AppError('HOST_NOT_FOUND', `host ${hostId} is not registered`);
  if (host.status === 'OFFLINE') throw new AppError('HOST_UNAVAILABLE', `host ${hostId} is OFFLINE; its kept data cannot be attached now`);
  if (await deps.store.instances.get(keptId)) throw new AppError('CONFLICT', `instance ${keptId} still exists; its data is not kept data`);
  if (target.hostId !== hostId)
    throw new AppError(
      'CONFLICT',
      `instance ${target.name} is on host ${target.hostId ?? 'none'}, not ${hostId}: a kept world is attached on its own host`,
    );
  if (target.state !== 'stopped' || target.activeAction) {
    throw new AppError(
      'INVALID_TRANSITION',
      `instance ${target.name} is ${target.activeAction ? `busy (${target.activeAction.kind})` : target.state}: attach a kept world to a stopped instance (create it with "start": false)`,
    );
  }
  const result = await capability(deps.driver.keptData, 'kept data', host).attach(host, keptId, target.id);
  await deps.store.history.append({
    instanceId: target.id,
    at: deps.clock.now(),
    from: target.state,
    to: target.state,
    actor: null,
    commandId: null,
    reason: `kept world of deleted instance ${keptId} attached`,
    details: { event: 'kept_data_attached', from: keptId },
  });
  return { hostId, ...result };
}

/** What the host and kept-data routes call: the functions above over the composition root's store and driver. */
export class HostRemoval {
  constructor(private readonly deps: HostRemovalDeps) {}

  removeHost(hostId: string, forget: boolean, actor: string): Promise<HostRemoved> {
    return removeHost(this.deps, hostId, forget, actor);
  }

  listKeptData(): ReturnType<typeof listKeptData> {
    return listKeptData(this.deps);
  }

  purgeKeptData(hostId: string, instanceId: string): ReturnType<typeof purgeKeptData> {
    return purgeKeptData(this.deps, hostId, instanceId);
  }

  attachKeptData(hostId: string, keptId: string, target: Instance): ReturnType<typeof attachKeptData> {
    return attachKeptData(this.deps, hostId, keptId, target);
  }
}
