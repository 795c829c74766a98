// The data path after login: bytes from one socket to the other, with
// backpressure, and nothing parsed. Profiling the bulk path (docs/router.md,
// "Performance") showed that Node's default read path — a fresh 64 KiB
// allocation per read, handed to JS as a new Buffer — cost more than the
// copies themselves: page faults on the fresh memory, and major GCs of the
// router's whole heap triggered by the external-memory pressure. So reads land
// in reused buffers instead ("user buffers", what `net.connect({ onread })`
// does):
// - every direction reads into one shared 64 KiB buffer; what it read is copied
//   out before the callback returns (small frames, the Minecraft common case:
//   a pooled copy of a few bytes, cheaper than Node's 64 KiB allocation);
// - a direction whose reads are large (bulk) gets its own 256 KiB buffer from a
//   small pool and writes straight from it, zero copies in JS; when the kernel
//   does not take a write whole, the direction stops reading until that write
//   completed (the buffer is still being sent) — which is also the
//   backpressure; when its reads are small again, the buffer goes back.
// Idle sessions therefore hold no buffer of their own.
//
// Node has no public API to give an accepted socket user buffers (only sockets
// made by `net.connect` take `onread`), so `useUserBuffers` sets what the
// `onread` option sets — found by symbol description on the socket, the
// handle's `useUserBuffer` — and reports false when this Node does not look
// like that; the connection then forwards with `data` events (`forwardEvents`).

import { Socket } from 'node:net';

/** A read at least this large marks the direction as bulk. */
const BULK_READ_BYTES = 32 * 1024;
/** The read buffer of a bulk direction: fewer, larger reads (and writes) per byte. */
const BULK_BUFFER_BYTES = 256 * 1024;
/** The shared read buffer: libuv's own read size. */
const SHARED_BUFFER_BYTES = 64 * 1024;
/** Free bulk buffers kept for the next bulk direction (the rest is garbage). */
const POOL_MAX = 16;

const shared = Buffer.allocUnsafeSlow(SHARED_BUFFER_BYTES);
const pool: Buffer[] = [];

type ReadCallback = (bytes: number, buffer: Buffer) => boolean;
interface UserBufferSlots {
  buffer: symbol;
  generator: symbol;
  callback: symbol;
}
interface StreamHandle {
  useUserBuffer?: (buffer: Uint8Array) => void;
}

/** The slots `net.Socket`'s constructor fills from `onread`, when this Node has them. */
const slots: UserBufferSlots | undefined = (() => {
  const probe = new Socket();
  const byName = new Map(Object.getOwnPropertySymbols(probe).map((s) => [s.description, s]));
  const buffer = byName.get('kBuffer');
  const generator = byName.get('kBufferGen');
  const callback = byName.get('kBufferCb');
  probe.destroy();
  return buffer && generator && callback ? { buffer, generator, callback } : undefined;
})();

/** Whether this Node lets the router read into its own buffers (else: `data` events). */
export const userBuffersSupported = slots !== undefined;

/**
 * Makes `socket` read into the buffers `next` returns, calling `onRead` instead of emitting
 * `data` (returning false pauses it, `resume()` restarts). The socket must be paused, with nothing
 * buffered. False (and nothing changed) when the socket or this Node cannot.
 */
function useUserBuffers(socket: Socket, next: () => Buffer, onRead: ReadCallback): boolean {
  const handle = (socket as unknown as { _handle?: StreamHandle | null })._handle;
  if (!slots || !handle || typeof handle.useUserBuffer !== 'function') return false;
  const first = next();
  const target = socket as unknown as Record<symbol, unknown>;
  target[slots.buffer] = first;
  target[slots.generator] = next;
  target[slots.callback] = onRead;
  handle.useUserBuffer(first);
  return true;
}

/**
 * Forwards `from` → `to` with backpressure, reading into reused buffers when this Node allows it.
 * Bytes `from` already buffered (read before the pipe started) go first. Errors and closes are
 * the caller's; `end` is passed on.
 */
export function forwardBytes(from: Socket, to: Socket): void {
  from.pause();
  for (let chunk: Buffer | null; (chunk = from.read() as Buffer | null) !== null; ) to.write(chunk);
  from.on('end', () => to.end());
  /** This direction's bulk buffer, while its reads are large or a write from it is in flight. */
  let own: Buffer | undefined;
  let waiting = false;
  if (!useUserBuffers(from, () => own ?? shared, onRead)) return forwardEvents(from, to);
  /** A write from `own` completed: read again once nothing is queued. */
  const written = (): void => {
    if (waiting && to.writableLength === 0) {
      waiting = false;
      from.resume();
    }
  };
  to.on('drain', written);
  function onRead(bytes: number, buffer: Buffer): boolean {
    if (buffer !== own) {
      // The shared buffer is overwritten by the next read of any socket: copy what was read.
      const queued = !to.write(Buffer.from(buffer.subarray(0, bytes)));
      if (bytes >= BULK_READ_BYTES) own = pool.pop() ?? Buffer.allocUnsafeSlow(BULK_BUFFER_BYTES);
      if (queued && to.writableLength > 0) {
        waiting = true; // 'drain' follows: write returned false
        return false;
      }
      return true;
    }
    to.write(buffer.subarray(0, bytes), written);
    // Not taken whole: the rest is sent from `own` later, so nothing may read into it until then.
    if (to.writableLength > 0) {
      waiting = true;
      return false;
    }
    if (bytes < BULK_READ_BYTES) {
      if (pool.length < POOL_MAX) pool.push(own);
      own = undefined;
    }
    return true;
  }
  from.resume();
}

/** The fallback: `data` events (a fresh Buffer per read), pausing while `to` has bytes queued. */
function forwardEvents(from: Socket, to: Socket): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk) && to.writableLength > 0) from.pause();
  });
  to.on('drain', () => from.resume());
  from.resume();
}
