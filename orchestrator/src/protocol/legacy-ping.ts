// Pre-1.7 server list ping (`FE`, `FE 01`, `FE 01 FA …MC|PingHost…`): detection,
// parsing and the legacy kick-packet answer (`FF` + u16 length + UTF-16BE text).

import { ProtocolError } from './codec.js';

export const LEGACY_PING_BYTE = 0xfe;
/** The 1.6 MC|PingHost packet is small; anything larger is not a legacy ping. */
export const MAX_LEGACY_PING_BYTES = 512;
/** Protocol number legacy clients read as "incompatible version", used when unknown. */
export const LEGACY_UNKNOWN_PROTOCOL = 127;

export type LegacyPingKind = 'beta' | '1.4' | '1.6';

export interface LegacyPing {
  kind: LegacyPingKind;
  protocolVersion?: number;
  host?: string;
  port?: number;
}

export function isLegacyPing(firstBytes: Buffer): boolean {
  return firstBytes.length > 0 && firstBytes[0] === LEGACY_PING_BYTE;
}

function utf16be(buf: Buffer, offset: number, units: number): string {
  const le = Buffer.from(buf.subarray(offset, offset + units * 2));
  le.swap16();
  return le.toString('utf16le');
}

/**
 * Parses a legacy ping from the bytes received so far. Returns undefined when
 * a longer form may still be arriving and `complete` is false; with `complete`
 * true (the client stopped sending) it settles on the form seen so far.
 */
export function parseLegacyPing(buf: Buffer, complete: boolean): LegacyPing | undefined {
  if (!isLegacyPing(buf)) throw new ProtocolError('not a legacy ping');
  if (buf.length > MAX_LEGACY_PING_BYTES) throw new ProtocolError('legacy ping is too large');
  if (buf.length === 1) return complete ? { kind: 'beta' } : undefined;
  if (buf[1] !== 0x01) throw new ProtocolError('legacy ping: second byte is not 0x01');
  if (buf.length === 2) return complete ? { kind: '1.4' } : undefined;
  if (buf[2] !== 0xfa) throw new ProtocolError('legacy ping: expected MC|PingHost (0xFA)');
  const parsed = parsePingHost(buf);
  if (parsed) return parsed;
  return complete ? { kind: '1.4' } : undefined;
}

function parsePingHost(buf: Buffer): LegacyPing | undefined {
  // FE 01 FA, u16 len, "MC|PingHost" (UTF-16BE), u16 data len, u8 protocol, u16 host len, host, i32 port
  let pos = 3;
  if (buf.length < pos + 2) return undefined;
  const channelUnits = buf.readUInt16BE(pos);
  pos += 2;
  if (buf.length < pos + channelUnits * 2) return undefined;
  const channel = utf16be(buf, pos, channelUnits);
  if (channel !== 'MC|PingHost') throw new ProtocolError(`legacy ping channel ${JSON.stringify(channel)} is not MC|PingHost`);
  pos += channelUnits * 2;
  if (buf.length < pos + 2 + 1 + 2) return undefined;
  pos += 2; // data length: recomputed from the fields below
  const protocolVersion = buf[pos]!;
  pos += 1;
  const hostUnits = buf.readUInt16BE(pos);
  pos += 2;
  if (hostUnits > 255) throw new ProtocolError('legacy ping host is too long');
  if (buf.length < pos + hostUnits * 2 + 4) return undefined;
  const host = utf16be(buf, pos, hostUnits);
  pos += hostUnits * 2;
  const port = buf.readInt32BE(pos);
  if (port < 0 || port > 65535) throw new ProtocolError(`legacy ping port ${port} is out of range`);
  return { kind: '1.6', protocolVersion, host, port };
}

export interface LegacyStatus {
  protocolVersion: number;
  versionName: string;
  motd: string;
  online: number;
  max: number;
}

/** The `FF` kick packet answering a legacy ping, in the form the client's kind expects. */
export function writeLegacyPingResponse(kind: LegacyPingKind, status: LegacyStatus): Buffer {
  const text =
    kind === 'beta'
      ? `${status.motd.replace(/§/g, '')}§${status.online}§${status.max}`
      : ['§1', String(status.protocolVersion), status.versionName, status.motd, String(status.online), String(status.max)].join('\0');
  const body = Buffer.from(text, 'utf16le');
  body.swap16();
  const header = Buffer.alloc(3);
  header[0] = 0xff;
  header.writeUInt16BE(text.length, 1);
  return Buffer.concat([header, body]);
}

/** Builds the 1.6 client's ping (for tests and the status client). */
export function writeLegacyPing16(host: string, port: number, protocolVersion = 78): Buffer {
  const enc = (s: string): Buffer => {
    const b = Buffer.from(s, 'utf16le');
    b.swap16();
    return b;
  };
  const channel = 'MC|PingHost';
  const hostBytes = enc(host);
  const data = Buffer.alloc(1 + 2 + hostBytes.length + 4);
  data[0] = protocolVersion;
  data.writeUInt16BE(host.length, 1);
  hostBytes.copy(data, 3);
  data.writeInt32BE(port, 3 + hostBytes.length);
  const head = Buffer.alloc(5);
  head[0] = 0xfe;
  head[1] = 0x01;
  head[2] = 0xfa;
  head.writeUInt16BE(channel.length, 3);
  const dataLen = Buffer.alloc(2);
  dataLen.writeUInt16BE(data.length);
  return Buffer.concat([head, enc(channel), dataLen, data]);
}
