// Controlled container replacement (settings, image tag, labels): pull first,
// then stop the old container gracefully, choose the new port, remove the old
// container, and create the new one on the SAME runtime directory and, when
// free, the same host port. Never re-materializes, never deletes data, never
// removes the old container before a port for the new one is held. Safe to
// retry at any step.

import { AppError } from '../shared/errors.js';
import type { InstanceEndpoint, ReplaceBody, ReplaceResult, StopResult } from '../contracts/agent-api.js';
import { configHash, recordedUser } from './container-config.js';
import type { InstanceInternals, Log } from './instance-internals.js';
import { LABEL, labelledHostPort } from './labels.js';
import { formatRange } from './port-allocator.js';
import { gracefulStop } from './power.js';
import { HostPortTakenError } from './runtime.js';

/** A replace request is exactly the wire body (src/contracts/agent-api.ts). */
export type ReplaceRequest = ReplaceBody;
export type { ReplaceResult };

export async function replaceInstance(svc: InstanceInternals, instanceId: string, req: ReplaceRequest, log: Log): Promise<ReplaceResult> {
  const { runtime, directories } = svc.deps;
  const old = await svc.findOwned(instanceId);
  if (!(await directories.exists(instanceId))) {
    if (!old)
      throw new AppError(
        'INSTANCE_NOT_FOUND',
        `instance ${instanceId} has no container and no runtime directory on host ${svc.deps.agentId}`,
      );
    throw new AppError(
      'INSTANCE_CONFLICT',
      `instance ${instanceId} has no runtime directory; a replace never re-materializes (create it instead)`,
    );
  }
  if (old) {
    const current = recordedUser(old.labels, old.user);
    if ((req.user ?? '') !== current) {
      throw new AppError(
        'IMMUTABLE',
        `the container user of instance ${instanceId} is ${current === '' ? 'the image default' : JSON.stringify(current)} and can never change (asked: ${req.user === undefined ? 'the image default' : JSON.stringify(req.user)})`,
      );
    }
  }
  // Pull before touching the old container: a failed pull leaves it running.
  const { pulled } = await runtime.ensureImage(req.image, undefined, req.pull ?? 'missing');
  if (pulled) log.info({ image: req.image }, 'image pulled');

  if (old && !req.newHostPort && old.labels[LABEL.config] === configHash(req) && old.imageId === (await runtime.imageId(req.image))) {
    let state = old.state;
    if (req.start && (state === 'created' || state === 'exited')) {
      await svc.startContainer(instanceId, old.id, old.labels, log);
      state = (await runtime.inspect(old.id))?.state ?? 'unknown';
    }
    log.info({ instanceId, containerId: old.id, state }, 'replace: container already has the requested config');
    return { ...svc.endpoint(old, state), replaced: false, previousContainerId: null, stop: null };
  }

  let stop: StopResult | null = null;
  // newHostPort: the old port is held outside the runtime; any other port of the range will do.
  let preferredPort = req.newHostPort ? undefined : req.preferredHostPort;
  const oldPort = old ? labelledHostPort(old.labels) : undefined;
  if (old) {
    stop = await gracefulStop(svc.powerDeps, old, req.stop ?? {}, log);
    // The new port is chosen (and held) before the old container is removed: with no free
    // port the old container stays, stopped, on its data, and a later start can still use it.
    preferredPort = await svc
      .promisePort(instanceId, {
        ...(req.newHostPort ? (oldPort !== undefined ? { avoid: oldPort } : {}) : { preferred: oldPort ?? preferredPort }),
        ...(oldPort !== undefined ? { freed: oldPort } : {}),
      })
      .catch((err: unknown) => {
        throw noFreePort(err, svc, instanceId, oldPort, req.newHostPort === true);
      });
  }
  try {
    if (old) await runtime.remove(old.id);
    const created = await placeAfterRemoval(svc, instanceId, req, preferredPort, oldPort, log);
    log.info(
      {
        instanceId,
        previousContainerId: old?.id ?? null,
        containerId: created.containerId,
        hostPort: created.hostPort,
        stopMethod: stop?.method ?? null,
      },
      'instance container replaced',
    );
    return { ...created, replaced: true, previousContainerId: old?.id ?? null, stop };
  } finally {
    svc.releasePromised(instanceId);
  }
}

/**
 * The new container, on the held port. A host listener the bind probe cannot see (the agent in
 * its own network namespace) can still fail every start attempt after the old container is
 * gone: the container is then re-created stopped on its old port, so the instance keeps one.
 */
async function placeAfterRemoval(
  svc: InstanceInternals,
  instanceId: string,
  req: ReplaceRequest,
  preferredPort: number | undefined,
  oldPort: number | undefined,
  log: Log,
): Promise<InstanceEndpoint> {
  try {
    const avoid = req.newHostPort && oldPort !== undefined ? { avoidPort: oldPort } : {};
    return await svc.placeContainer(
      instanceId,
      req,
      { start: req.start, ...(preferredPort !== undefined ? { preferredPort } : {}), ...avoid },
      log,
    );
  } catch (err) {
    if (oldPort === undefined || !(err instanceof HostPortTakenError || (err instanceof AppError && err.code === 'PORT_RANGE_EXHAUSTED')))
      throw err;
    const kept = await svc.placeContainer(instanceId, req, { start: false, preferredPort: oldPort }, log).catch((e: unknown) => {
      log.error({ err: e, instanceId }, 'replace: could not re-create the stopped container after every port failed');
      return undefined;
    });
    if (!kept) throw err;
    log.warn(
      { instanceId, containerId: kept.containerId, hostPort: kept.hostPort },
      'replace: no port would start; the container was re-created stopped',
    );
    throw new AppError(
      'PORT_RANGE_EXHAUSTED',
      `no port of ${formatRange(svc.deps.ports.range)} would start on host ${svc.deps.agentId} (${err.message}); the container was re-created stopped on port ${kept.hostPort ?? '?'} with its data: free a port, then start it`,
      {
        cause: err,
        details: { portRange: formatRange(svc.deps.ports.range), hostPort: kept.hostPort },
      },
    );
  }
}

/** The answer when no port is free for the new container: names the old port, the range and the host. */
function noFreePort(err: unknown, svc: InstanceInternals, instanceId: string, oldPort: number | undefined, moving: boolean): unknown {
  if (!(err instanceof AppError && err.code === 'PORT_RANGE_EXHAUSTED')) return err;
  const range = formatRange(svc.deps.ports.range);
  const why = moving
    ? `host port ${oldPort ?? '?'} is taken and no other port of ${range} is free on host ${svc.deps.agentId}`
    : `no port of ${range} is free on host ${svc.deps.agentId} for the new container`;
  return new AppError(
    'PORT_RANGE_EXHAUSTED',
    `${why}; the container of instance ${instanceId} was kept, stopped, with its data: free a port, then start it`,
    {
      cause: err,
      details: { portRange: range, ...(oldPort !== undefined ? { hostPort: oldPort } : {}) },
    },
  );
}
