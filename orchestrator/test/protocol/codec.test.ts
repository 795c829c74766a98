import { describe, expect, it } from 'vitest';
import {
  decodeVarInt,
  encodeFrame,
  encodeString,
  encodeVarInt,
  encodeVarLong,
  PacketReader,
  ProtocolError,
} from '../../src/protocol/codec.js';
import { cleanServerAddress } from '../../src/protocol/address.js';
import { FrameReader, MAX_FRAME_SIZE } from '../../src/protocol/frame-reader.js';
import {
  parseHandshake,
  parseLoginStart,
  writeHandshake,
  writeLoginStart,
  writePing,
  writeStatusRequest,
  isStatusRequest,
  parsePing,
  writeLoginDisconnect,
} from '../../src/protocol/packets.js';

const VARINTS: Array<[number, number[]]> = [
  [0, [0x00]],
  [1, [0x01]],
  [2, [0x02]],
  [127, [0x7f]],
  [128, [0x80, 0x01]],
  [255, [0xff, 0x01]],
  [25565, [0xdd, 0xc7, 0x01]],
  [2097151, [0xff, 0xff, 0x7f]],
  [2147483647, [0xff, 0xff, 0xff, 0xff, 0x07]],
  [-1, [0xff, 0xff, 0xff, 0xff, 0x0f]],
  [-2147483648, [0x80, 0x80, 0x80, 0x80, 0x08]],
];

describe('VarInt / VarLong / String codec', () => {
  it.each(VARINTS)('VarInt %i encodes and decodes as the wiki vector', (value, bytes) => {
    expect([...encodeVarInt(value)]).toEqual(bytes);
    expect(decodeVarInt(Buffer.from(bytes))).toEqual({ value, size: bytes.length });
  });

  it('reports an incomplete VarInt as undefined, and a 6-byte VarInt as malformed', () => {
    expect(decodeVarInt(Buffer.from([0x80, 0x80]))).toBeUndefined();
    expect(() => decodeVarInt(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]))).toThrow(ProtocolError);
  });

  it.each([0n, 1n, 2147483647n, 9223372036854775807n, -1n, -9223372036854775808n])('VarLong %s round-trips', (v) => {
    expect(new PacketReader(encodeVarLong(v)).varLong()).toBe(v);
  });

  it('bounds strings by characters and by remaining bytes', () => {
    expect(new PacketReader(encodeString('héllo')).string(5)).toBe('héllo');
    expect(() => new PacketReader(encodeString('toolongname_12345')).string(16)).toThrow(/exceeds 16/);
    const truncated = Buffer.concat([encodeVarInt(10), Buffer.from('abc')]);
    expect(() => new PacketReader(truncated).string()).toThrow(/truncated/);
  });
});

describe('FrameReader', () => {
  const handshake = writeHandshake({ protocolVersion: 765, serverAddress: 'play.example.com', serverPort: 25565, nextState: 1 });
  const all = Buffer.concat([handshake, writeStatusRequest(), writePing(Buffer.from('12345678'))]);

  it('reads a handshake, status request and ping coalesced into one segment', () => {
    const r = new FrameReader();
    r.push(all);
    expect(parseHandshake(r.next()!)).toMatchObject({ protocolVersion: 765, serverAddress: 'play.example.com', nextState: 1 });
    expect(isStatusRequest(r.next()!)).toBe(true);
    expect(parsePing(r.next()!).toString()).toBe('12345678');
    expect(r.next()).toBeUndefined();
    expect(r.received().equals(all)).toBe(true);
  });

  it('reassembles frames split across one-byte segments and keeps every byte for replay', () => {
    const r = new FrameReader();
    const seen: number[] = [];
    for (const byte of all) {
      r.push(Buffer.from([byte]));
      for (let f = r.next(); f; f = r.next()) seen.push(f.packetId);
    }
    expect(seen).toEqual([0, 0, 1]);
    expect(r.received().equals(all)).toBe(true);
  });

  it('refuses an oversized frame from its length prefix alone, and a 4-byte length', () => {
    const r = new FrameReader();
    r.push(encodeVarInt(5000));
    expect(() => r.next(1024)).toThrow(/exceeds the limit of 1024/);
    const r2 = new FrameReader();
    r2.push(Buffer.from([0xff, 0xff, 0xff, 0x01]));
    expect(() => r2.next()).toThrow(ProtocolError);
    expect(MAX_FRAME_SIZE).toBe(2_097_151);
  });

  it('refuses a zero-length frame', () => {
    const r = new FrameReader();
    r.push(Buffer.from([0x00]));
    expect(() => r.next()).toThrow(/not positive/);
  });
});

describe('Handshake and Login Start', () => {
  it('rejects a next state outside 1-3 and trailing bytes', () => {
    const bad = writeHandshake({ protocolVersion: 765, serverAddress: 'a', serverPort: 1, nextState: 1 });
    bad[bad.length - 1] = 4;
    const r = new FrameReader();
    r.push(bad);
    expect(() => parseHandshake(r.next()!)).toThrow(/next state 4/);
  });

  it.each([
    [47, undefined],
    [759, undefined],
    [760, 'b4d2c6a0-1234-4abc-8def-0123456789ab'],
    [761, 'b4d2c6a0-1234-4abc-8def-0123456789ab'],
    [763, undefined],
    [764, 'b4d2c6a0-1234-4abc-8def-0123456789ab'],
    [774, 'b4d2c6a0-1234-4abc-8def-0123456789ab'],
  ])('parses Login Start for protocol %i (UUID %s)', (proto, uuid) => {
    const r = new FrameReader();
    r.push(writeLoginStart(uuid ? { name: 'Steve', uuid } : { name: 'Steve' }, proto));
    const parsed = parseLoginStart(r.next()!, proto);
    expect(parsed.name).toBe('Steve');
    if (proto >= 764 || uuid) expect(parsed.uuid).toBe(uuid ?? '00000000-0000-0000-0000-000000000000');
  });

  it('rejects a player name longer than 16 characters', () => {
    const r = new FrameReader();
    r.push(encodeFrame(0, encodeString('x'.repeat(17))));
    expect(() => parseLoginStart(r.next()!, 47)).toThrow(/exceeds 16/);
  });

  it('writes a login disconnect as a JSON text component string', () => {
    const r = new FrameReader();
    r.push(writeLoginDisconnect('Starting, retry in 30 s'));
    const f = r.next()!;
    expect(f.packetId).toBe(0);
    expect(JSON.parse(new PacketReader(f.body).string())).toEqual({ text: 'Starting, retry in 30 s' });
  });
});

describe('cleanServerAddress', () => {
  it.each([
    ['play.example.com', 'play.example.com'],
    ['Play.Example.COM', 'play.example.com'],
    ['play.example.com.', 'play.example.com'],
    ['play.example.com\0FML\0', 'play.example.com'],
    ['play.example.com\0FML2\0', 'play.example.com'],
    ['play.example.com\0FML3\0', 'play.example.com'],
    ['play.example.com\x00192.168.1.5\x00069a79f444e94726a5befca90e38aaf5\x00[]', 'play.example.com'],
    ['play.example.com///10.0.0.1:51234///1700000000///c2lnbmF0dXJl', 'play.example.com'],
    ['PLAY.example.com.\0FML2\0', 'play.example.com'],
    ['', ''],
  ])('cleans %j to %j', (raw, clean) => {
    expect(cleanServerAddress(raw)).toBe(clean);
  });
});
