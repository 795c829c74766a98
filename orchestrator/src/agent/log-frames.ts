// Docker's multiplexed log stream (frames of an 8-byte header — stream type,
// three zero bytes, u32 BE payload size — and the payload) turned into one byte
// stream of stdout and stderr as it arrives, with backpressure: followed logs
// never pile up in the agent. Output without a frame header (a TTY) passes as is.

import { Transform, type TransformCallback } from 'node:stream';

const HEADER_BYTES = 8;

export class LogFrameDemuxer extends Transform {
  /** Bytes of a header that was cut between two chunks. */
  private partial: Buffer = Buffer.alloc(0);
  /** Payload bytes of the current frame not yet passed on. */
  private remaining = 0;
  private framed: boolean | undefined;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.framed === false) {
      this.push(chunk);
      return done();
    }
    const buf = this.partial.length > 0 ? Buffer.concat([this.partial, chunk]) : chunk;
    let offset = 0;
    while (offset < buf.length) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, buf.length - offset);
        this.push(buf.subarray(offset, offset + n));
        offset += n;
        this.remaining -= n;
        continue;
      }
      if (buf.length - offset < HEADER_BYTES) break;
      if (this.framed === undefined) this.framed = isHeader(buf, offset);
      if (!this.framed) {
        this.push(buf.subarray(offset));
        offset = buf.length;
        break;
      }
      this.remaining = buf.readUInt32BE(offset + 4);
      offset += HEADER_BYTES;
    }
    this.partial = Buffer.from(buf.subarray(offset));
    done();
  }

  override _flush(done: TransformCallback): void {
    // A stream shorter than one header was never framed.
    if (this.framed !== true && this.partial.length > 0) this.push(this.partial);
    done();
  }
}

function isHeader(buf: Buffer, at: number): boolean {
  return buf[at]! <= 2 && buf[at + 1] === 0 && buf[at + 2] === 0 && buf[at + 3] === 0;
}
