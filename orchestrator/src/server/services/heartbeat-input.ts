// The heartbeat body an agent sends, and its mapping to the store's HostHeartbeat.
// Agents report raw machine facts (bytes, CPU count); the store keeps MiB.

import { Type, type Static } from '@sinclair/typebox';
import type { HostHeartbeat } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';

const MIB = 1024 * 1024;

export const HeartbeatBody = Type.Object(
  {
    controlUrl: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://' }),
    gameAddress: Type.String({ minLength: 1, maxLength: 255 }),
    version: Type.String({ minLength: 1, maxLength: 64 }),
    resources: Type.Object(
      {
        cpuCount: Type.Optional(Type.Number({ minimum: 0 })),
        memoryTotalBytes: Type.Optional(Type.Number({ minimum: 0 })),
        memoryAvailableBytes: Type.Optional(Type.Number({ minimum: 0 })),
        diskFreeBytes: Type.Optional(Type.Union([Type.Number({ minimum: 0 }), Type.Null()])),
        // The store's own shape, accepted as well (simulated agents, tests).
        memoryMb: Type.Optional(Type.Integer({ minimum: 0 })),
        cpus: Type.Optional(Type.Number({ minimum: 0 })),
        diskBytes: Type.Optional(Type.Number({ minimum: 0 })),
      },
      { additionalProperties: true },
    ),
    portRange: Type.Object({ first: Type.Integer({ minimum: 1, maximum: 65535 }), last: Type.Integer({ minimum: 1, maximum: 65535 }) }),
    heartbeatIntervalMs: Type.Integer({ minimum: 100, maximum: 3_600_000 }),
    bootId: Type.Optional(Type.String({ maxLength: 128 })),
  },
  { additionalProperties: true },
);
export type HeartbeatBody = Static<typeof HeartbeatBody>;

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
  return hb;
}
