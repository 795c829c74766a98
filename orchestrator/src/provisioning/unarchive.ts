// Where an archived world comes back (issue 9: "a start or a login re-creates it
// on a host that fits"), pure. The host that kept the world is used when it is
// ONLINE with room: nothing is copied, and the kept world is newer than its
// final backup by the moments between that backup and the stop. Otherwise the
// group's placement picks any ONLINE host that fits and the world is restored
// there from the archive's final backup in the orchestrator's backup store.
// Neither reachable: a refusal naming the instance and why — never an empty
// world in place of a kept one.

import { AppError } from '../shared/errors.js';
import { fail, ok, type Checked } from '../lifecycle/result.js';
import { placeInstance, type PlacementHost, type PlacementStrategy } from '../placement/placement.js';

export interface UnarchiveInput {
  instance: { name: string; groupId: string; memoryMb: number };
  /** The host that kept the world (`fleet.archived.hostId`, else the instance's host). */
  keptHostId: string | null;
  /** Every registered host, any status. */
  hosts: readonly PlacementHost[];
  strategy: PlacementStrategy;
  /**
   * The archive's final backup: `stored` when the orchestrator's backup store
   * holds its archive (the record and a file of the recorded size; the new
   * host checks the sha256 again before restoring). Null: none was taken.
   */
  finalBackup: { backupId: string; stored: boolean } | null;
}

export type UnarchivePlan =
  /** Re-create over the kept data, on the host that holds it. */
  | { kind: 'kept'; hostId: string; reason: string }
  /** Re-create on `hostId` with the world restored from `backupId` before the first start. */
  | { kind: 'restore'; hostId: string; backupId: string; fromHostId: string | null; reason: string };

const free = (h: PlacementHost): number => h.memoryMb - h.memoryReservedMb;

export function planUnarchive(input: UnarchiveInput): Checked<UnarchivePlan> {
  const { instance, keptHostId, hosts, finalBackup } = input;
  const kept = keptHostId === null ? undefined : hosts.find((h) => h.id === keptHostId);
  const keptFits = kept !== undefined && free(kept) >= instance.memoryMb;
  if (kept?.status === 'ONLINE' && keptFits) return ok({ kind: 'kept', hostId: kept.id, reason: `world kept on host ${kept.id}` });

  const why =
    keptHostId === null
      ? 'has no host recorded for its kept world'
      : !kept
        ? `was kept on host ${keptHostId}, which is no longer registered`
        : kept.status !== 'ONLINE'
          ? `is kept on host ${kept.id}, which is ${kept.status}`
          : `is kept on host ${kept.id}, which has ${Math.max(0, free(kept))} MiB free of the ${instance.memoryMb} MiB it needs`;
  // A host in maintenance takes no new work, but still serves the world it holds when nothing else can.
  const keptInMaintenance = kept?.status === 'MAINTENANCE' && keptFits;

  if (finalBackup?.stored) {
    const placed = placeInstance(hosts, { groupId: instance.groupId, memoryMb: instance.memoryMb }, input.strategy);
    if (placed.ok) {
      return ok({
        kind: 'restore',
        hostId: placed.value,
        backupId: finalBackup.backupId,
        fromHostId: keptHostId,
        reason: `archived instance ${instance.name} ${why}: restoring its final backup ${finalBackup.backupId} on host ${placed.value}`,
      });
    }
    if (keptInMaintenance)
      return ok({ kind: 'kept', hostId: kept.id, reason: `world kept on host ${kept.id} (in maintenance; no other host fits)` });
    return fail(
      new AppError(
        'NO_CAPACITY',
        `archived instance ${instance.name} ${why}, and no other host can take its final backup ${finalBackup.backupId}: ${placed.error.message}`,
        {
          details: { ...(placed.error.details ?? {}), keptHostId, backupId: finalBackup.backupId },
        },
      ),
    );
  }
  if (keptInMaintenance) return ok({ kind: 'kept', hostId: kept.id, reason: `world kept on host ${kept.id} (in maintenance)` });

  const noBackup =
    finalBackup === null
      ? 'the archive has no final backup'
      : `its final backup ${finalBackup.backupId} is not in the orchestrator's backup store (the off-host copy failed or was deleted)`;
  const message = `archived instance ${instance.name} ${why}, and ${noBackup}; it is not started elsewhere with an empty world in place of the kept one`;
  const details = { keptHostId, backupId: finalBackup?.backupId ?? null };
  // The kept host may still come back (or get room); a host that is gone will not.
  if (kept && (kept.status === 'ONLINE' || kept.status === 'MAINTENANCE')) return fail(new AppError('NO_CAPACITY', message, { details }));
  return fail(new AppError('HOST_UNAVAILABLE', message, { retryable: kept !== undefined, details }));
}
