// The heartbeat body an agent sends (its schema is the agent contract's), and its
// mapping to the store's HostHeartbeat. Agents report raw machine facts (bytes, CPU count); the store keeps MiB.

import { HeartbeatBody } from '../../contracts/agent-api.js';
import type { HostHeartbeat } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';

const MIB = 1024 * 1024;

/** The heartbeat route validates with the agent contract's schema (src/contracts/agent-api.ts). */
export { HeartbeatBody };

export function toHostHeartbeat(agentId: string, body: HeartbeatBody): HostHeartbeat {
  const r = body.resources;
  const memoryMb = r.memoryMb ?? (r.memoryTotalBytes !== undefined ? Math.floor(r.memoryTotalBytes / MIB) : undefined);
  if (memoryMb === undefined) throw new AppError('VALIDATION_FAILED', 'body/resources must report memoryTotalBytes (or memoryMb)');
  if (body.portRange.first > body.portRange.last) throw new AppError('VALIDATION_FAILED', 'body/portRange first must not exceed last');
  const disk = r.diskBytes ?? r.diskFreeBytes ?? undefined;
  const hb: HostHeartbeat = {
    id: agentId,
    controlUrl: body.controlUrl.replace(/\/+$/, ''),
    gameAddress: body.gameAddress,
    resources: { memoryMb, cpus: r.cpus ?? r.cpuCount ?? 0, ...(disk !== undefined && disk !== null ? { diskBytes: disk } : {}) },
    version: body.version,
    portRange: { first: body.portRange.first, last: body.portRange.last },
    heartbeatIntervalMs: body.heartbeatIntervalMs,
  };
  if (body.bootId !== undefined) hb.bootId = body.bootId;
  if (body.inventoryDigest !== undefined) hb.inventoryDigest = body.inventoryDigest;
  return hb;
}
