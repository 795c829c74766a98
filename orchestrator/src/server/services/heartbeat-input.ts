// The heartbeat body an agent sends (its schema is the agent contract's), and its
// mapping to the store's HostHeartbeat. Agents report raw machine facts (bytes, CPU count); the store keeps MiB.

import { HeartbeatBody } from '../../contracts/agent-api.js';
import type { HostHeartbeat } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';

const MIB = 1024 * 1024;
/** The store's own resource names: once accepted from simulated agents, now refused by name. */
const STORE_SHAPE = ['memoryMb', 'cpus', 'diskBytes'] as const;

/** The heartbeat route validates with the agent contract's schema (src/contracts/agent-api.ts). */
export { HeartbeatBody };

export function toHostHeartbeat(agentId: string, body: HeartbeatBody): HostHeartbeat {
  const r = body.resources;
  for (const field of STORE_SHAPE) {
    if (field in r) {
      throw new AppError(
        'VALIDATION_FAILED',
        `body/resources/${field}: a heartbeat reports the raw machine facts (cpuCount, memoryTotalBytes, memoryAvailableBytes, diskFreeBytes), not the store's ${STORE_SHAPE.join('/')}`,
        {
          details: { field: `resources/${field}` },
        },
      );
    }
  }
  const memoryMb = Math.floor(r.memoryTotalBytes / MIB);
  if (body.portRange.first > body.portRange.last) throw new AppError('VALIDATION_FAILED', 'body/portRange first must not exceed last');
  const disk = r.diskFreeBytes;
  const hb: HostHeartbeat = {
    id: agentId,
    controlUrl: body.controlUrl.replace(/\/+$/, ''),
    gameAddress: body.gameAddress,
    resources: { memoryMb, cpus: r.cpuCount, ...(disk !== undefined && disk !== null ? { diskBytes: disk } : {}) },
    version: body.version,
    portRange: { first: body.portRange.first, last: body.portRange.last },
    heartbeatIntervalMs: body.heartbeatIntervalMs,
  };
  if (body.bootId !== undefined) hb.bootId = body.bootId;
  if (body.inventoryDigest !== undefined) hb.inventoryDigest = body.inventoryDigest;
  return hb;
}
