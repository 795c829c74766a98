// Scoped delete and orphan cleanup. Delete removes the container and then, by
// scope, nothing (keepData), listed relative paths, or the whole runtime
// directory; cleanup re-reads ownership labels right before each removal.

import { AppError } from '../shared/errors.js';
import { RESOURCE_ID_PATTERN, isValidId } from '../shared/ids.js';
import { normalizeLayerPath } from '../shared/layer-checksum.js';
import type { CleanupReport, DeleteReport, DeleteScope } from '../contracts/agent-api.js';
import type { InstanceInternals, Log } from './instance-internals.js';
import { LABEL, isManagedBy } from './labels.js';

/** The delete scope is exactly the wire body of DELETE /instances/:id (src/contracts/agent-api.ts). */
export type DeleteOptions = DeleteScope;
export type { CleanupReport, DeleteReport };

/** Validates every path before anything is removed, so a bad one leaves all in place. */
export function normalizeDeletePaths(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of paths) {
    const checked = typeof raw === 'string' ? normalizeLayerPath(raw) : { reason: 'is not a string' };
    if ('reason' in checked) throw new AppError('UNSAFE_PATH', `paths entry ${JSON.stringify(raw)} ${checked.reason}`);
    if (checked.path === '')
      throw new AppError(
        'UNSAFE_PATH',
        `paths entry ${JSON.stringify(raw)} names the runtime directory itself; omit paths to delete it all`,
      );
    if (!out.includes(checked.path)) out.push(checked.path);
  }
  return out;
}

export async function deleteInstance(svc: InstanceInternals, instanceId: string, options: DeleteOptions, log: Log): Promise<DeleteReport> {
  if (options.keepData && options.paths !== undefined) {
    throw new AppError('VALIDATION_FAILED', 'give either keepData or paths, not both');
  }
  const paths = options.paths !== undefined ? normalizeDeletePaths(options.paths) : undefined;
  const scope: DeleteReport['scope'] = options.keepData ? 'container' : paths !== undefined ? 'paths' : 'all';
  const { runtime, directories } = svc.deps;

  let containerRemoved = false;
  // Bounded: a second managed container for one id would be a bug, but remove it too.
  for (let c = await svc.findOwned(instanceId), n = 0; c && n < 10; c = await svc.findOwned(instanceId), n++) {
    await runtime.remove(c.id);
    containerRemoved = true;
  }
  let directoryRemoved = false;
  const pathsRemoved: string[] = [];
  if (scope === 'all') {
    directoryRemoved = await directories.exists(instanceId);
    if (directoryRemoved) await directories.remove(instanceId);
  } else if (scope === 'paths' && (await directories.exists(instanceId))) {
    for (const path of paths ?? []) if ((await directories.removeScoped(instanceId, [path])) > 0) pathsRemoved.push(path);
  }
  log.info({ instanceId, scope, containerRemoved, directoryRemoved, pathsRemoved: pathsRemoved.length }, 'instance deleted');
  return { instanceId, scope, containerRemoved, directoryRemoved, pathsRemoved };
}

type RunLocked = <T>(instanceId: string, fn: () => Promise<T>) => Promise<T>;

export async function cleanupInstances(
  svc: InstanceInternals,
  instanceIds: readonly string[],
  keepDataFor: ReadonlySet<string>,
  locked: RunLocked,
  log: Log,
): Promise<CleanupReport> {
  const report: CleanupReport = { removed: [], skipped: [], notFound: [], dataKept: [] };
  for (const instanceId of new Set(instanceIds)) {
    if (!isValidId(instanceId, RESOURCE_ID_PATTERN)) {
      report.skipped.push({ instanceId, reason: 'invalid instance id' });
      continue;
    }
    await locked(instanceId, () => cleanupOne(svc, instanceId, keepDataFor.has(instanceId), report, log));
  }
  return report;
}

async function cleanupOne(svc: InstanceInternals, instanceId: string, keepData: boolean, report: CleanupReport, log: Log): Promise<void> {
  const { runtime, directories, agentId } = svc.deps;
  const candidates = await runtime.list({ [LABEL.instance]: instanceId });
  let removed = false;
  let skipped: string | undefined;
  for (const candidate of candidates) {
    const fresh = await runtime.inspect(candidate.id);
    if (!fresh) continue;
    if (!isManagedBy(fresh.labels, agentId, instanceId)) {
      skipped = fresh.labels[LABEL.managed] === 'true' ? `managed by host ${fresh.labels[LABEL.host] ?? '?'}` : 'not managed by EnderCloud';
      continue;
    }
    await runtime.remove(fresh.id);
    removed = true;
  }
  if (removed) {
    if (keepData) report.dataKept.push(instanceId);
    else if (await directories.exists(instanceId)) await directories.remove(instanceId);
    report.removed.push(instanceId);
    log.info({ instanceId, dataKept: keepData }, 'orphan instance removed');
  } else if (skipped) {
    report.skipped.push({ instanceId, reason: skipped });
  } else {
    report.notFound.push(instanceId);
  }
}
