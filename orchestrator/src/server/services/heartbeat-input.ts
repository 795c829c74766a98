// The heartbeat body an agent sends (its schema is the agent contract's), and its
// mapping to the store's HostHeartbeat. Agents report raw machine facts (bytes, CPU count); the store keeps MiB.

import { HeartbeatBody } from '../../contracts/agent-api.js';
import type { HostHeartbeat } from '../../domain/index.js';
import { isIP } from 'node:net';
import { AppError } from '../../shared/errors.js';

const MIB = 1024 * 1024;
/** The store's own resource names: once accepted from simulated agents, now refused by name. */
const STORE_SHAPE = ['memoryMb', 'cpus', 'diskBytes'] as const;

/** The heartbeat route validates with the agent contract's schema (src/contracts/agent-api.ts). */
export { HeartbeatBody };

/** Names a cloud's instance-metadata service answers on (besides its link-local address). */
const METADATA_HOSTS = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/**
 * Why a control URL may not be dialled with the agent credential, or undefined when it may: the orchestrator sends
 * the agent token and create bodies (secrets included) there, so a heartbeat may not aim it at a path-carrying
 * query, a fragment, embedded credentials, or a link-local / instance-metadata address (SSRF). Loopback and private
 * addresses stay allowed: agents live there.
 */
export function controlUrlProblem(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be http or https, not ${url.protocol.replace(/:$/, '')}`;
  if (url.username !== '' || url.password !== '') return 'must not carry credentials (user:password@)';
  if (url.search !== '' || raw.includes('?')) return 'must not carry a query string';
  if (url.hash !== '' || raw.includes('#')) return 'must not carry a fragment';
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (METADATA_HOSTS.has(host.replace(/\.$/, ''))) return `must not name an instance-metadata service (${host})`;
  // WHATWG URL has normalised the address: IPv4 in dotted decimal, IPv6 compressed, IPv4-mapped as ::ffff:hhhh:hhhh.
  const family = isIP(host);
  if (family === 4) {
    const [a, b] = host.split('.').map(Number);
    if (a === 169 && b === 254) return `must not be a link-local address (${host}: 169.254.0.0/16 holds cloud metadata services)`;
    if (a === 0) return `must not be an unspecified address (${host})`;
  } else if (family === 6) {
    if (/^fe[89ab][0-9a-f]:/.test(host)) return `must not be a link-local address (${host}: fe80::/10)`;
    if (host.startsWith('::ffff:a9fe:')) return `must not be a link-local address (${host}: 169.254.0.0/16 mapped to IPv6)`;
    if (host === '::') return `must not be an unspecified address (${host})`;
    if (host.startsWith('fd00:ec2::')) return `must not name an instance-metadata service (${host})`;
  }
  return undefined;
}

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
  const urlProblem = controlUrlProblem(body.controlUrl);
  if (urlProblem !== undefined)
    throw new AppError('VALIDATION_FAILED', `body/controlUrl ${urlProblem}`, { details: { field: 'controlUrl' } });
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
