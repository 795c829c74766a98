// Controlled container replacement (settings, image tag, labels): pull first,
// then stop the old container gracefully, remove it, and create the new one on
// the SAME runtime directory and, when free, the same host port. Never
// re-materializes, never deletes data. Safe to retry at any step.

import { AppError } from '../shared/errors.js';
import { configHash, recordedUser, type CreateInstanceRequest } from './container-config.js';
import type { LayerRef } from './contracts.js';
import type { InstanceEndpoint, InstanceInternals, Log } from './instance-service.js';
import { LABEL, labelledHostPort } from './labels.js';
import { gracefulStop, type StopOptions, type StopResult } from './power.js';

export interface ReplaceRequest extends Omit<CreateInstanceRequest, 'layers'> {
  /** Accepted for symmetry with create and ignored: a replace never re-materializes. */
  layers?: LayerRef[];
  /** Start the new container; false leaves it created (a stopped instance stays stopped). */
  start: boolean;
  /** How the old container is stopped (same options as POST /stop). */
  stop?: StopOptions;
  /** Host port to try when the old container is already gone (a retried replace). */
  preferredHostPort?: number;
}

export interface ReplaceResult extends InstanceEndpoint {
  /** False when the current container already has the requested config and image (retry or no-op). */
  replaced: boolean;
  previousContainerId: string | null;
  /** How the old container was stopped; null when none was stopped by this call. */
  stop: StopResult | null;
}

export async function replaceInstance(svc: InstanceInternals, instanceId: string, req: ReplaceRequest, log: Log): Promise<ReplaceResult> {
  const { runtime, directories } = svc.o;
  const old = await svc.findOwned(instanceId);
  if (!(await directories.exists(instanceId))) {
    if (!old) throw new AppError('INSTANCE_NOT_FOUND', `instance ${instanceId} has no container and no runtime directory on host ${svc.o.agentId}`);
    throw new AppError('INSTANCE_CONFLICT', `instance ${instanceId} has no runtime directory; a replace never re-materializes (create it instead)`);
  }
  if (old) {
    const current = recordedUser(old.labels, old.user);
    if ((req.user ?? '') !== current) {
      throw new AppError('IMMUTABLE', `the container user of instance ${instanceId} is ${current === '' ? 'the image default' : JSON.stringify(current)} and can never change (asked: ${req.user === undefined ? 'the image default' : JSON.stringify(req.user)})`);
    }
  }
  // Pull before touching the old container: a failed pull leaves it running.
  const { pulled } = await runtime.ensureImage(req.image, undefined, req.pull ?? 'missing');
  if (pulled) log.info({ image: req.image }, 'image pulled');

  if (old && old.labels[LABEL.config] === configHash(req) && old.imageId === (await runtime.imageId(req.image))) {
    let state = old.state;
    if (req.start && (state === 'created' || state === 'exited')) {
      await runtime.start(old.id);
      state = (await runtime.inspect(old.id))?.state ?? 'unknown';
    }
    log.info({ instanceId, containerId: old.id, state }, 'replace: container already has the requested config');
    return { ...svc.endpoint(old, state), replaced: false, previousContainerId: null, stop: null };
  }

  let stop: StopResult | null = null;
  let preferredPort = req.preferredHostPort;
  if (old) {
    stop = await gracefulStop(svc.powerDeps, old, req.stop ?? {}, log);
    await runtime.remove(old.id);
    preferredPort = labelledHostPort(old.labels) ?? preferredPort;
  }
  const created = await svc.placeContainer(instanceId, req, { start: req.start, ...(preferredPort !== undefined ? { preferredPort } : {}) }, log);
  log.info({ instanceId, previousContainerId: old?.id ?? null, containerId: created.containerId, hostPort: created.hostPort, stopMethod: stop?.method ?? null }, 'instance container replaced');
  return { ...created, replaced: true, previousContainerId: old?.id ?? null, stop };
}
