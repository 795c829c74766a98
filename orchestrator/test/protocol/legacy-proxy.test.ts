import { describe, expect, it } from 'vitest';
import { parseLegacyPing, writeLegacyPing16, writeLegacyPingResponse } from '../../src/protocol/legacy-ping.js';
import { parseProxyV2Header, writeProxyV2Header, PROXY_V2_SIGNATURE } from '../../src/protocol/proxy-protocol.js';

function decodeLegacy(buf: Buffer): string {
  expect(buf[0]).toBe(0xff);
  const units = buf.readUInt16BE(1);
  const body = Buffer.from(buf.subarray(3));
  expect(body.length).toBe(units * 2);
  body.swap16();
  return body.toString('utf16le');
}

describe('legacy ping', () => {
  it('recognises FE, FE 01 and FE 01 FA MC|PingHost', () => {
    expect(parseLegacyPing(Buffer.from([0xfe]), false)).toBeUndefined();
    expect(parseLegacyPing(Buffer.from([0xfe]), true)).toEqual({ kind: 'beta' });
    expect(parseLegacyPing(Buffer.from([0xfe, 0x01]), true)).toEqual({ kind: '1.4' });
    expect(parseLegacyPing(writeLegacyPing16('Play.Example.com', 25565, 74), false)).toEqual({
      kind: '1.6',
      protocolVersion: 74,
      host: 'Play.Example.com',
      port: 25565,
    });
  });

  it('waits for the rest of a split MC|PingHost', () => {
    const full = writeLegacyPing16('a.example', 25565);
    expect(parseLegacyPing(full.subarray(0, 20), false)).toBeUndefined();
  });

  it('answers §1 form for 1.4+ and motd§online§max for beta', () => {
    const status = { protocolVersion: 127, versionName: 'EnderCloud', motd: 'Asleep', online: 0, max: 20 };
    expect(decodeLegacy(writeLegacyPingResponse('1.4', status))).toBe('§1\u0000127\u0000EnderCloud\u0000Asleep\u00000\u000020');
    expect(decodeLegacy(writeLegacyPingResponse('beta', status))).toBe('Asleep§0§20');
  });
});

describe('PROXY protocol v2', () => {
  it('writes and parses an IPv4 header', () => {
    const h = writeProxyV2Header({
      sourceAddress: '203.0.113.7',
      sourcePort: 50000,
      destinationAddress: '10.0.0.1',
      destinationPort: 25565,
    });
    expect(h.subarray(0, 12).equals(PROXY_V2_SIGNATURE)).toBe(true);
    expect(h[12]).toBe(0x21);
    expect(h[13]).toBe(0x11);
    expect(h.length).toBe(28);
    expect(parseProxyV2Header(h)).toEqual({
      header: { command: 'proxy', sourceAddress: '203.0.113.7', sourcePort: 50000, destinationAddress: '10.0.0.1', destinationPort: 25565 },
      size: 28,
    });
  });

  it('writes IPv6 (and widens a mixed pair), returns undefined on partial input', () => {
    const h = writeProxyV2Header({
      sourceAddress: '2001:db8::1',
      sourcePort: 1,
      destinationAddress: '::ffff:127.0.0.1',
      destinationPort: 2,
    });
    expect(h[13]).toBe(0x21);
    expect(h.length).toBe(16 + 36);
    const parsed = parseProxyV2Header(h)!;
    expect(parsed.header).toMatchObject({ command: 'proxy', sourceAddress: '2001:db8:0:0:0:0:0:1', sourcePort: 1 });
    expect(parseProxyV2Header(h.subarray(0, 20))).toBeUndefined();
  });
});
