// Incremental frame reader over a TCP byte stream: works on partial frames
// (one frame split over many segments) and coalesced frames (several frames in
// one segment). It keeps every byte received so the router can replay them.

import { decodeVarInt, PacketReader, ProtocolError } from './codec.js';

/** The length VarInt has at most 3 bytes, so no frame exceeds 2^21 - 1 bytes. */
export const MAX_FRAME_SIZE = 2_097_151;
const MAX_LENGTH_BYTES = 3;

export interface Frame {
  packetId: number;
  /** The packet body after the id. */
  body: Buffer;
  /** Bytes the whole frame took on the wire (length prefix included). */
  wireSize: number;
}

export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered: Buffer = Buffer.alloc(0);
  private readPos = 0;
  private total = 0;

  /** Appends bytes from the socket. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.total += chunk.length;
    this.buffered = this.readPos === this.buffered.length ? chunk : Buffer.concat([this.buffered.subarray(this.readPos), chunk]);
    this.readPos = 0;
  }

  /** Total bytes received so far. */
  get receivedBytes(): number {
    return this.total;
  }

  /** Bytes received but not yet returned as frames. */
  get pendingBytes(): number {
    return this.buffered.length - this.readPos;
  }

  /** Every byte received since construction, in order (for replay to a backend). */
  received(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  /** The unread bytes (without consuming them). */
  peek(): Buffer {
    return this.buffered.subarray(this.readPos);
  }

  /**
   * Returns the next complete frame, or undefined when more bytes are needed.
   * Throws ProtocolError for a malformed length or a frame larger than maxSize,
   * before waiting for its body, so an oversized frame is refused at once.
   */
  next(maxSize: number = MAX_FRAME_SIZE): Frame | undefined {
    const limit = Math.min(maxSize, MAX_FRAME_SIZE);
    const header = decodeVarInt(this.buffered, this.readPos, MAX_LENGTH_BYTES);
    if (header === undefined) return undefined;
    const length = header.value;
    if (length <= 0) throw new ProtocolError(`frame length ${length} is not positive`);
    if (length > limit) throw new ProtocolError(`frame of ${length} bytes exceeds the limit of ${limit}`, 'oversized');
    const start = this.readPos + header.size;
    if (this.buffered.length - start < length) return undefined;
    const payload = this.buffered.subarray(start, start + length);
    this.readPos = start + length;
    const reader = new PacketReader(payload);
    const packetId = reader.varInt();
    return { packetId, body: payload.subarray(reader.offset), wireSize: header.size + length };
  }
}
