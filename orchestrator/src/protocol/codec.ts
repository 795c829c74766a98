// Minecraft wire primitives (VarInt, VarLong, String, u16) with hard bounds.
// Every read checks the remaining bytes first, so hostile input can only ever
// produce a ProtocolError, never an out-of-range read or an unbounded loop.

import { AppError } from '../shared/errors.js';

export class ProtocolError extends AppError {
  /** 'oversized' when a size limit was hit, so callers can count it apart from garbage. */
  constructor(
    message: string,
    readonly kind: 'malformed' | 'oversized' = 'malformed',
  ) {
    super('PROTOCOL_ERROR', message);
    this.name = 'ProtocolError';
  }
}

export const MAX_VARINT_BYTES = 5;
export const MAX_VARLONG_BYTES = 10;
/** Java's String max is 32767 UTF-16 units, at most 3 bytes each in UTF-8. */
export const MAX_STRING_CHARS = 32767;

/** Reads wire primitives from one packet body. */
export class PacketReader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}

  get offset(): number {
    return this.pos;
  }

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  private need(n: number, what: string): void {
    if (this.remaining < n) throw new ProtocolError(`truncated ${what}: need ${n} bytes, have ${this.remaining}`);
  }

  varInt(): number {
    const r = decodeVarInt(this.buf, this.pos);
    if (r === undefined) throw new ProtocolError('truncated VarInt');
    this.pos += r.size;
    return r.value;
  }

  varLong(): bigint {
    let result = 0n;
    for (let i = 0; i < MAX_VARLONG_BYTES; i++) {
      this.need(1, 'VarLong');
      const byte = this.buf[this.pos++]!;
      result |= BigInt(byte & 0x7f) << BigInt(7 * i);
      if ((byte & 0x80) === 0) return BigInt.asIntN(64, result);
    }
    throw new ProtocolError('VarLong is longer than 10 bytes');
  }

  /** A VarInt-prefixed UTF-8 string of at most maxChars characters. */
  string(maxChars = MAX_STRING_CHARS): string {
    const byteLength = this.varInt();
    if (byteLength < 0 || byteLength > maxChars * 3)
      throw new ProtocolError(`string of ${byteLength} bytes exceeds ${maxChars} characters`);
    this.need(byteLength, 'string');
    const text = this.buf.toString('utf8', this.pos, this.pos + byteLength);
    this.pos += byteLength;
    if (text.length > maxChars) throw new ProtocolError(`string of ${text.length} characters exceeds ${maxChars}`);
    return text;
  }

  u16(): number {
    this.need(2, 'u16');
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  i64(): bigint {
    this.need(8, 'i64');
    const v = this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }

  boolean(): boolean {
    this.need(1, 'boolean');
    const b = this.buf[this.pos++]!;
    if (b > 1) throw new ProtocolError(`boolean byte ${b} is neither 0 nor 1`);
    return b === 1;
  }

  uuid(): string {
    this.need(16, 'UUID');
    const hex = this.buf.toString('hex', this.pos, this.pos + 16);
    this.pos += 16;
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  /** A VarInt-prefixed byte array, bounded. */
  byteArray(maxBytes: number): Buffer {
    const n = this.varInt();
    if (n < 0 || n > maxBytes) throw new ProtocolError(`byte array of ${n} bytes exceeds ${maxBytes}`);
    this.need(n, 'byte array');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

/**
 * Decodes a VarInt at `offset`; undefined when the buffer ends first.
 * Throws when the VarInt runs past 5 bytes (malformed, not incomplete).
 */
export function decodeVarInt(buf: Buffer, offset = 0, maxBytes = MAX_VARINT_BYTES): { value: number; size: number } | undefined {
  let result = 0;
  for (let i = 0; i < maxBytes; i++) {
    if (offset + i >= buf.length) return undefined;
    const byte = buf[offset + i]!;
    result |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) === 0) return { value: result | 0, size: i + 1 };
  }
  throw new ProtocolError(`VarInt is longer than ${maxBytes} bytes`);
}

export function encodeVarInt(value: number): Buffer {
  const out: number[] = [];
  let v = value >>> 0;
  do {
    let byte = v & 0x7f;
    v >>>= 7;
    if (v !== 0) byte |= 0x80;
    out.push(byte);
  } while (v !== 0);
  return Buffer.from(out);
}

export function encodeVarLong(value: bigint): Buffer {
  const out: number[] = [];
  let v = BigInt.asUintN(64, value);
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Buffer.from(out);
}

export function encodeString(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  return Buffer.concat([encodeVarInt(bytes.length), bytes]);
}

export function encodeU16(value: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(value);
  return b;
}

/** Wraps a packet id and body into a length-prefixed frame. */
export function encodeFrame(packetId: number, body: Buffer = Buffer.alloc(0)): Buffer {
  const payload = Buffer.concat([encodeVarInt(packetId), body]);
  return Buffer.concat([encodeVarInt(payload.length), payload]);
}
