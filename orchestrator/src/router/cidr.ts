// CIDR matching and per-client rate-limit keys (IPv4 /32, IPv6 /64).

import { isIP } from 'node:net';
import { ipToBytes, normalizeAddress } from '../protocol/proxy-protocol.js';

export interface Cidr {
  bytes: Buffer;
  prefix: number;
  text: string;
}

/** Parses `a.b.c.d/n` or `x:y::/n` (a bare address means a single host); throws a message on error. */
export function parseCidr(text: string): Cidr {
  const [addr, prefixText, extra] = text.trim().split('/');
  if (extra !== undefined || !addr || isIP(addr) === 0) throw new Error(`"${text}" is not a CIDR (e.g. 10.0.0.0/8 or fd00::/8)`);
  const bytes = ipToBytes(addr);
  const max = bytes.length * 8;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!/^\d+$/.test(prefixText ?? String(max)) || prefix > max) throw new Error(`"${text}" has a prefix outside 0-${max}`);
  return { bytes, prefix, text };
}

function matchesPrefix(a: Buffer, b: Buffer, prefix: number): boolean {
  const full = Math.floor(prefix / 8);
  for (let i = 0; i < full; i++) if (a[i] !== b[i]) return false;
  const rest = prefix % 8;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[full]! & mask) === (b[full]! & mask);
}

export function cidrContains(cidr: Cidr, address: string): boolean {
  let bytes: Buffer;
  try {
    bytes = ipToBytes(address);
  } catch {
    return false;
  }
  if (bytes.length !== cidr.bytes.length) return false;
  return matchesPrefix(bytes, cidr.bytes, cidr.prefix);
}

export function anyCidrContains(cidrs: readonly Cidr[], address: string): boolean {
  return cidrs.some((c) => cidrContains(c, address));
}

/** The key limits count by: the whole IPv4 address, or the IPv6 /64 network. */
export function clientKey(address: string): string {
  const a = normalizeAddress(address);
  if (isIP(a) !== 6) return a;
  const bytes = ipToBytes(a);
  return `${bytes.subarray(0, 8).toString('hex')}::/64`;
}
