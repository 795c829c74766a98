// Parsers and writers for the few plaintext packets a router needs: Handshake,
// Login Start, Status Request/Response, Ping/Pong and Login Disconnect.

import { encodeFrame, encodeString, encodeU16, encodeVarInt, PacketReader, ProtocolError } from './codec.js';
import type { Frame } from './frame-reader.js';

export const NextState = { Status: 1, Login: 2, Transfer: 3 } as const;
export type NextStateValue = (typeof NextState)[keyof typeof NextState];

/** Address limit: 255 characters plus room for Forge markers and TCPShield data. */
export const MAX_HANDSHAKE_ADDRESS_CHARS = 1024;
export const MAX_PLAYER_NAME_CHARS = 16;

/** Protocol numbers where Login Start changed. */
export const PROTOCOL_1_19 = 759;
export const PROTOCOL_1_19_1 = 760;
export const PROTOCOL_1_19_3 = 761;
export const PROTOCOL_1_20_2 = 764;

export interface Handshake {
  protocolVersion: number;
  /** The raw address as sent, before cleaning. */
  serverAddress: string;
  serverPort: number;
  nextState: NextStateValue;
}

export interface LoginStart {
  name: string;
  uuid?: string;
}

function expectId(frame: Frame, id: number, what: string): PacketReader {
  if (frame.packetId !== id)
    throw new ProtocolError(`expected ${what} (id 0x${id.toString(16).padStart(2, '0')}), got id 0x${frame.packetId.toString(16)}`);
  return new PacketReader(frame.body);
}

function expectEnd(reader: PacketReader, what: string): void {
  if (reader.remaining !== 0) throw new ProtocolError(`${what} has ${reader.remaining} trailing bytes`);
}

export function parseHandshake(frame: Frame): Handshake {
  const r = expectId(frame, 0x00, 'Handshake');
  const protocolVersion = r.varInt();
  const serverAddress = r.string(MAX_HANDSHAKE_ADDRESS_CHARS);
  const serverPort = r.u16();
  const nextState = r.varInt();
  if (nextState !== 1 && nextState !== 2 && nextState !== 3) throw new ProtocolError(`handshake next state ${nextState} is not 1, 2 or 3`);
  expectEnd(r, 'Handshake');
  return { protocolVersion, serverAddress, serverPort, nextState };
}

/** Parses Login Start for the given protocol version (the UUID field changed over versions). */
export function parseLoginStart(frame: Frame, protocolVersion: number): LoginStart {
  const r = expectId(frame, 0x00, 'Login Start');
  const name = r.string(MAX_PLAYER_NAME_CHARS);
  if (name.length === 0) throw new ProtocolError('Login Start name is empty');
  let uuid: string | undefined;
  if (protocolVersion >= PROTOCOL_1_20_2) {
    uuid = r.uuid();
  } else if (protocolVersion >= PROTOCOL_1_19_3) {
    if (r.boolean()) uuid = r.uuid();
  } else if (protocolVersion >= PROTOCOL_1_19) {
    // 1.19–1.19.2: optional signature data (timestamp, public key, signature).
    if (r.boolean()) {
      r.i64();
      r.byteArray(512);
      r.byteArray(4096);
    }
    if (protocolVersion >= PROTOCOL_1_19_1 && r.boolean()) uuid = r.uuid();
  }
  expectEnd(r, 'Login Start');
  return uuid === undefined ? { name } : { name, uuid };
}

export function isStatusRequest(frame: Frame): boolean {
  return frame.packetId === 0x00 && frame.body.length === 0;
}

/** Returns the ping payload (8 bytes) or throws. */
export function parsePing(frame: Frame): Buffer {
  if (frame.packetId !== 0x01 || frame.body.length !== 8) throw new ProtocolError('expected Ping (id 0x01, 8-byte payload)');
  return frame.body;
}

export function writeHandshake(h: Handshake): Buffer {
  return encodeFrame(
    0x00,
    Buffer.concat([encodeVarInt(h.protocolVersion), encodeString(h.serverAddress), encodeU16(h.serverPort), encodeVarInt(h.nextState)]),
  );
}

export function writeStatusRequest(): Buffer {
  return encodeFrame(0x00);
}

export function writePing(payload: Buffer): Buffer {
  return encodeFrame(0x01, payload);
}

export function writeStatusResponse(json: unknown): Buffer {
  return encodeFrame(0x00, encodeString(JSON.stringify(json)));
}

export function writePong(payload: Buffer): Buffer {
  return encodeFrame(0x01, payload);
}

/** Login-state disconnect: a JSON text component as a string (also on 1.20.3+). */
export function writeLoginDisconnect(message: string): Buffer {
  return encodeFrame(0x00, encodeString(JSON.stringify({ text: message })));
}

export function writeLoginStart(login: LoginStart, protocolVersion: number): Buffer {
  const parts = [encodeString(login.name)];
  const uuidBytes = (u: string): Buffer => Buffer.from(u.replace(/-/g, ''), 'hex');
  if (protocolVersion >= PROTOCOL_1_20_2) {
    parts.push(uuidBytes(login.uuid ?? '00000000-0000-0000-0000-000000000000'));
  } else if (protocolVersion >= PROTOCOL_1_19_3) {
    parts.push(Buffer.from([login.uuid ? 1 : 0]));
    if (login.uuid) parts.push(uuidBytes(login.uuid));
  } else if (protocolVersion >= PROTOCOL_1_19) {
    parts.push(Buffer.from([0]));
    if (protocolVersion >= PROTOCOL_1_19_1) {
      parts.push(Buffer.from([login.uuid ? 1 : 0]));
      if (login.uuid) parts.push(uuidBytes(login.uuid));
    }
  }
  return encodeFrame(0x00, Buffer.concat(parts));
}
