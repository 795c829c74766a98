// The data path after login: bytes from one socket to the other, with
// backpressure, and nothing parsed. Profiling the bulk path (docs/router.md,
// "Performance") showed that Node's default read path — a fresh 64 KiB
// allocation per read, handed to JS as a new Buffer — cost more than the
// copies themselves: page faults on the fresh memory, and major GCs of the
// router's whole heap triggered by the external-memory pressure. So:
// - small frames (the Minecraft common case) keep Node's `data` events: an idle
//   or chatty session costs what it did;
// - the first read of 32 KiB or more switches the direction, once, to reused
//   read buffers ("user buffers", what `net.connect({ onread })` does): small
//   reads then land in one 64 KiB buffer shared by every switched direction and
//   are copied out before the callback returns; large reads get a 256 KiB
//   buffer of the direction's own from a small pool, written from directly
//   (no copy in JS); when the kernel does not take such a write whole, the
//   direction stops reading until the write completed (the buffer is still
//   being sent) — which is also the backpressure; when its reads are small
//   again, the buffer goes back to the pool.
//
// Node has no public API to give an accepted socket user buffers (only sockets
// made by `net.connect` take `onread`), so `useUserBuffers` sets what the
// `onread` option sets — found by symbol description on the socket, the
// handle's `useUserBuffer` — and reports false when this Node does not look
// like that; the direction then stays on `data` events.

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
 * The direction reading from a socket, and the one writing to it: every listener below is one
 * function shared by all sockets (Node calls it with the socket as `this`), so a direction costs
 * one small object and two map entries instead of a handful of closures and their context
 * (measured, docs/router.md "Memory per idle connection"). WeakMaps, not properties on the
 * socket: a property added by `socket[symbol] =` counts against V8's limit for keyed stores
 * (12 out-of-object fields), and a socket over it becomes a dictionary (1.6 KiB, and slower
 * property access in Node's stream code) — measured under tsx.
 */
const outOf = new WeakMap<Socket, Direction>();
const into = new WeakMap<Socket, Direction>();

/** One direction of a session: `from`'s reads go to `to`. */
class Direction {
  /** This direction's bulk buffer, while its reads are large or a write from it is in flight. */
  own: Buffer | undefined = undefined;
  /** Reading stopped until `to` has nothing queued (user buffers). */
  waiting = false;
  /** Reads go to `read` (user buffers) instead of `data` events. */
  userBuffers = false;
  /** The switch to user buffers is scheduled. */
  switching = false;
  /** Write callback of the writes from `own`: made when a direction first goes bulk (idle ones never need it). */
  private afterWrite: (() => void) | undefined = undefined;

  constructor(
    readonly from: Socket,
    readonly to: Socket,
  ) {}

  /** A write from `own` completed, or `to` drained: read again once nothing is queued. */
  written(): void {
    if (this.waiting && this.to.writableLength === 0) {
      this.waiting = false;
      this.from.resume();
    }
  }

  /** `bytes` were read into `buffer`; false stops reading. */
  read(bytes: number, buffer: Buffer): boolean {
    const to = this.to;
    if (buffer !== this.own) {
      // The shared buffer is overwritten by the next read of any socket: copy what was read.
      const queued = !to.write(Buffer.from(buffer.subarray(0, bytes)));
      if (bytes >= BULK_READ_BYTES) this.own = pool.pop() ?? Buffer.allocUnsafeSlow(BULK_BUFFER_BYTES);
      if (queued && to.writableLength > 0) {
        this.waiting = true; // 'drain' follows: write returned false
        return false;
      }
      return true;
    }
    to.write(buffer.subarray(0, bytes), (this.afterWrite ??= () => this.written()));
    // Not taken whole: the rest is sent from `own` later, so nothing may read into it until then.
    if (to.writableLength > 0) {
      this.waiting = true;
      return false;
    }
    if (bytes < BULK_READ_BYTES) {
      if (pool.length < POOL_MAX) pool.push(buffer);
      this.own = undefined;
    }
    return true;
  }
}

/**
 * The same callback and buffer generator on every socket (per-socket closures in these slots cost
 * each socket its own hidden class: ~0.5 KiB per direction, measured): Node calls the callback as
 * a method of the socket and the generator right after it, so the callback leaves the next buffer
 * in `nextBuffer`.
 */
let nextBuffer: Buffer = shared;
function onUserBufferRead(this: Socket, bytes: number, buffer: Buffer): boolean {
  const d = outOf.get(this);
  if (!d) return true; // not ours: never happens
  const more = d.read(bytes, buffer);
  nextBuffer = d.own ?? shared;
  return more;
}
const nextUserBuffer = (): Buffer => {
  const b = nextBuffer;
  nextBuffer = shared;
  return b;
};

/**
 * Makes `d.from` read into the shared buffer (and its own, when bulk), calling `d.read` instead
 * of emitting `data` (returning false pauses it, `resume()` restarts) — what the `onread` option
 * of `net.connect` sets. The socket must be paused, with nothing buffered. False (and nothing
 * changed) when the socket or this Node cannot.
 */
function useUserBuffers(d: Direction): boolean {
  const handle = (d.from as unknown as { _handle?: StreamHandle | null })._handle;
  if (!slots || !handle || typeof handle.useUserBuffer !== 'function') return false;
  const target = d.from as unknown as Record<symbol, unknown>;
  target[slots.buffer] = shared;
  target[slots.generator] = nextUserBuffer;
  target[slots.callback] = onUserBufferRead;
  handle.useUserBuffer(shared);
  d.userBuffers = true;
  return true;
}

/** `end` of `from`: passed on. */
function onEnd(this: Socket): void {
  outOf.get(this)?.to.end();
}

/** `data` of `from` (event mode): forwarded; a bulk read schedules the switch to user buffers. */
function onData(this: Socket, chunk: Buffer): void {
  const d = outOf.get(this);
  if (!d) return;
  const queued = !d.to.write(chunk) && d.to.writableLength > 0;
  const bulk = chunk.length >= BULK_READ_BYTES && userBuffersSupported;
  if (queued || bulk) this.pause();
  // Switched once Node is done with this read: meanwhile the paused socket buffers what it
  // reads, and the switch forwards that first.
  if (bulk && !d.switching) {
    d.switching = true;
    process.nextTick(toUserBuffers, d);
  }
}

/** `drain` of `to`: the direction writing to it reads again. */
function onDrain(this: Socket): void {
  const d = into.get(this);
  if (!d) return;
  if (d.userBuffers) d.written();
  else d.from.resume();
}

function toUserBuffers(d: Direction): void {
  const { from, to } = d;
  if (from.destroyed) return;
  from.removeListener('data', onData);
  for (let chunk: Buffer | null; (chunk = from.read() as Buffer | null) !== null;) to.write(chunk);
  if (!useUserBuffers(d)) from.on('data', onData); // this socket has no handle to read into: stay on events
  // 'drain' follows when `to` needs it (it resumes); otherwise read on now.
  if (to.writableNeedDrain) d.waiting = true;
  else from.resume();
}

/**
 * Forwards `from` → `to` with backpressure. Small frames go the ordinary way (`data` events, as
 * before: an idle or chatty session costs what it did); the first read of at least
 * BULK_READ_BYTES switches the direction to reused buffers when this Node allows it. Bytes
 * `from` already buffered (read before the pipe started) go first, as `data` events when it
 * flows. Errors and closes are the caller's; `end` is passed on.
 */
export function forwardBytes(from: Socket, to: Socket): void {
  const d = new Direction(from, to);
  outOf.set(from, d);
  into.set(to, d);
  // Bytes `from` buffered before (a paused socket) come first as `data` events once it flows.
  from.on('end', onEnd);
  from.on('data', onData);
  to.on('drain', onDrain);
  from.resume();
}
