// PROXY protocol v2 (binary) header: written to backends so they see the
// player's address, and read from trusted load balancers in front of us.

import { isIPv4, isIPv6 } from 'node:net';
import { ProtocolError } from './codec.js';

export const PROXY_V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
/** Address block (216 bytes for AF_UNIX) plus generous room for TLVs. */
export const MAX_PROXY_V2_BYTES = 16 + 1024;

export interface ProxyAddresses {
  sourceAddress: string;
  sourcePort: number;
  destinationAddress: string;
  destinationPort: number;
}

export type ProxyHeader = { command: 'local' } | ({ command: 'proxy' } & ProxyAddresses);

/** Maps `::ffff:1.2.3.4` to `1.2.3.4` so IPv4 clients on dual-stack sockets stay IPv4. */
export function normalizeAddress(address: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return m ? m[1]! : address;
}

function ipv6Bytes(address: string): Buffer {
  // Expand `::` and an embedded IPv4 tail into 8 groups.
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const p = v4[1]!.split('.').map(Number);
    text = text.slice(0, -v4[1]!.length) + `${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : new Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  const groups = [...headGroups, ...zeros, ...tailGroups];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

export function ipToBytes(address: string): Buffer {
  const a = normalizeAddress(address);
  if (isIPv4(a)) return Buffer.from(a.split('.').map(Number));
  if (isIPv6(a)) return ipv6Bytes(a);
  throw new ProtocolError(`"${address}" is not an IP address`);
}

function bytesToIp(buf: Buffer): string {
  if (buf.length === 4) return Array.from(buf).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(buf.readUInt16BE(i).toString(16));
  return groups.join(':');
}

export function writeProxyV2Header(addr: ProxyAddresses): Buffer {
  const src = ipToBytes(addr.sourceAddress);
  let dst = ipToBytes(addr.destinationAddress);
  // Both addresses must be the same family; widen IPv4 to mapped IPv6 if they differ.
  const widen = (b: Buffer): Buffer => (b.length === 16 ? b : Buffer.concat([Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]), b]));
  let srcB = src;
  if (src.length !== dst.length) {
    srcB = widen(src);
    dst = widen(dst);
  }
  const family = srcB.length === 4 ? 0x11 : 0x21;
  const ports = Buffer.alloc(4);
  ports.writeUInt16BE(addr.sourcePort, 0);
  ports.writeUInt16BE(addr.destinationPort, 2);
  const body = Buffer.concat([srcB, dst, ports]);
  const head = Buffer.alloc(4);
  head[0] = 0x21;
  head[1] = family;
  head.writeUInt16BE(body.length, 2);
  return Buffer.concat([PROXY_V2_SIGNATURE, head, body]);
}

/** True when the bytes so far could still be (or are) a PROXY v2 signature. */
export function mayBeProxyV2(buf: Buffer): boolean {
  const n = Math.min(buf.length, PROXY_V2_SIGNATURE.length);
  return buf.subarray(0, n).equals(PROXY_V2_SIGNATURE.subarray(0, n));
}

/**
 * Parses a PROXY v2 header at the start of `buf`. Returns undefined when more
 * bytes are needed; otherwise the header and the bytes it took.
 */
export function parseProxyV2Header(buf: Buffer): { header: ProxyHeader; size: number } | undefined {
  if (!mayBeProxyV2(buf)) throw new ProtocolError('missing PROXY v2 signature');
  if (buf.length < 16) return undefined;
  const verCmd = buf[12]!;
  if (verCmd >> 4 !== 2) throw new ProtocolError('PROXY header is not version 2');
  const length = buf.readUInt16BE(14);
  if (16 + length > MAX_PROXY_V2_BYTES) throw new ProtocolError('PROXY v2 header is too large');
  if (buf.length < 16 + length) return undefined;
  const size = 16 + length;
  const command = verCmd & 0x0f;
  if (command === 0x0) return { header: { command: 'local' }, size };
  if (command !== 0x1) throw new ProtocolError(`PROXY v2 command ${command} is unknown`);
  const family = buf[13]!;
  const body = buf.subarray(16, size);
  const addrLen = family === 0x11 ? 4 : family === 0x21 ? 16 : 0;
  if (addrLen === 0) return { header: { command: 'local' }, size }; // UNSPEC/UNIX: keep the socket address
  if (body.length < addrLen * 2 + 4) throw new ProtocolError('PROXY v2 address block is truncated');
  return {
    header: {
      command: 'proxy',
      sourceAddress: bytesToIp(body.subarray(0, addrLen)),
      destinationAddress: bytesToIp(body.subarray(addrLen, addrLen * 2)),
      sourcePort: body.readUInt16BE(addrLen * 2),
      destinationPort: body.readUInt16BE(addrLen * 2 + 2),
    },
    size,
  };
}
