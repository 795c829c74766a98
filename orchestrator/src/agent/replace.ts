// Controlled container replacement (settings, image tag, labels): pull first,
// then stop the old container gracefully, remove it, and create the new one on
// the SAME runtime directory and, when free, the same host port. Never
// re-materializes, never deletes data. Safe to retry at any step.

import { AppError } from '../shared/errors.js';
import type { ReplaceBody, ReplaceResult, StopResult } from '../contracts/agent-api.js';
import { configHash, recordedUser } from './container-config.js';
import type { InstanceInternals, Log } from './instance-internals.js';
import { LABEL, labelledHostPort } from './labels.js';
import { gracefulStop } from './power.js';

/** A replace request is exactly the wire body (src/contracts/agent-api.ts). */
export type ReplaceRequest = ReplaceBody;
export type { ReplaceResult };

export async function replaceInstance(svc: InstanceInternals, instanceId: string, req: ReplaceRequest, log: Log): Promise<ReplaceResult> {
  const { runtime, directories } = svc.deps;
  const old = await svc.findOwned(instanceId);
  if (!(await directories.exists(instanceId))) {
    if (!old) throw new AppError('INSTANCE_NOT_FOUND', `instance ${instanceId} has no container and no runtime directory on host ${svc.deps.agentId}`);
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

  if (old && !req.newHostPort && old.labels[LABEL.config] === configHash(req) && old.imageId === (await runtime.imageId(req.image))) {
    let state = old.state;
    if (req.start && (state === 'created' || state === 'exited')) {
      await runtime.start(old.id);
      state = (await runtime.inspect(old.id))?.state ?? 'unknown';
    }
    log.info({ instanceId, containerId: old.id, state }, 'replace: container already has the requested config');
    return { ...svc.endpoint(old, state), replaced: false, previousContainerId: null, stop: null };
  }

  let stop: StopResult | null = null;
  // newHostPort: the old port is held outside the runtime; any other port of the range will do.
  let preferredPort = req.newHostPort ? undefined : req.preferredHostPort;
  let avoidPort: number | undefined;
  if (old) {
    stop = await gracefulStop(svc.powerDeps, old, req.stop ?? {}, log);
    await runtime.remove(old.id);
    const oldPort = labelledHostPort(old.labels);
    if (req.newHostPort) avoidPort = oldPort;
    else preferredPort = oldPort ?? preferredPort;
  }
  const created = await svc.placeContainer(instanceId, req, { start: req.start, ...(preferredPort !== undefined ? { preferredPort } : {}), ...(avoidPort !== undefined ? { avoidPort } : {}) }, log);
  log.info({ instanceId, previousContainerId: old?.id ?? null, containerId: created.containerId, hostPort: created.hostPort, stopMethod: stop?.method ?? null }, 'instance container replaced');
  return { ...created, replaced: true, previousContainerId: old?.id ?? null, stop };
}
