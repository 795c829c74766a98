// Source RCON client (the protocol vanilla Minecraft, Paper and itzg images speak
// on port 25575): connect with a timeout, authenticate, run commands one at a
// time and collect multi-packet answers. The password is sent once and never
// appears in an error message or a log line.

import { connect as netConnect, type Socket } from 'node:net';
import { AppError } from './errors.js';

export const RCON_TYPE_RESPONSE = 0;
export const RCON_TYPE_EXEC = 2;
export const RCON_TYPE_AUTH_RESPONSE = 2;
export const RCON_TYPE_AUTH = 3;
/** Vanilla refuses requests over 1460 bytes: 14 bytes of framing plus the body. */
export const RCON_MAX_COMMAND_BYTES = 1446;
/** Servers split answers into 4096-byte bodies; anything far above is not RCON. */
const MAX_FRAME_BYTES = 1 << 20;
const MAX_RESPONSE_BYTES = 16 << 20;

export interface RconPacket {
  id: number;
  type: number;
  body: Buffer;
}

export function encodeRconPacket(id: number, type: number, body: string | Buffer): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const frame = Buffer.alloc(14 + payload.length);
  frame.writeInt32LE(10 + payload.length, 0);
  frame.writeInt32LE(id, 4);
  frame.writeInt32LE(type, 8);
  payload.copy(frame, 12);
  return frame; // body terminator and empty-string terminator are the zeroed last two bytes
}

/** Splits a byte stream into RCON packets; throws on a frame no RCON server sends. */
export class RconFrameDecoder {
  private buffered: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): RconPacket[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const packets: RconPacket[] = [];
    while (this.buffered.length >= 4) {
      const length = this.buffered.readInt32LE(0);
      if (length < 10 || length > MAX_FRAME_BYTES) throw new Error(`invalid RCON frame length ${length}`);
      if (this.buffered.length < 4 + length) break;
      const id = this.buffered.readInt32LE(4);
      const type = this.buffered.readInt32LE(8);
      const bodyEnd = 4 + length - 2; // strip the two NUL terminators
      packets.push({ id, type, body: Buffer.from(this.buffered.subarray(12, Math.max(12, bodyEnd))) });
      this.buffered = this.buffered.subarray(4 + length);
    }
    return packets;
  }
}

export interface RconClientOptions {
  host: string;
  port: number;
  password: string;
  /** Bound on TCP connect plus authentication (default 5 s). */
  connectTimeoutMs?: number;
  /** Bound on one command's full answer (default 10 s). */
  commandTimeoutMs?: number;
  /**
   * How the end of a multi-packet answer is found. `marker` (default) sends an
   * empty type-0 packet after each command: Source servers mirror it and
   * vanilla answers "Unknown request 0", in both cases after the whole answer.
   * `quiet` waits `quietMs` after the last packet, for servers that choke on the marker.
   */
  responseEnd?: 'marker' | 'quiet';
  quietMs?: number;
  /** Transport, injectable for tests; defaults to node:net. */
  connect?: (host: string, port: number) => Socket;
}

interface Pending {
  id: number;
  markerId: number | undefined;
  chunks: Buffer[];
  size: number;
  auth: boolean;
  resolve: (value: string) => void;
  reject: (err: AppError) => void;
  quietTimer?: NodeJS.Timeout;
}

export class RconClient {
  private nextId = 1;
  private pending: Pending | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private closedError: AppError | undefined;
  private readonly decoder = new RconFrameDecoder();

  private constructor(
    private readonly socket: Socket,
    private readonly options: RconClientOptions,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.fail(new AppError('UPSTREAM_FAILED', `RCON connection to ${this.target} failed: ${err.message}`)));
    socket.on('close', () => this.onClose());
  }

  /** Connects and authenticates; rejects with RCON_AUTH_FAILED on a wrong password. */
  static async connect(options: RconClientOptions): Promise<RconClient> {
    const timeoutMs = options.connectTimeoutMs ?? 5000;
    const target = `${options.host}:${options.port}`;
    const socket = (options.connect ?? ((h, p) => netConnect({ host: h, port: p })))(options.host, options.port);
    socket.setNoDelay(true);
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new AppError('TIMEOUT', `RCON connection to ${target} not established within ${timeoutMs} ms`)),
          timeoutMs,
        );
        socket.once('connect', () => {
          clearTimeout(timer);
          resolve();
        });
        socket.once('error', (err) => {
          clearTimeout(timer);
          reject(new AppError('UPSTREAM_FAILED', `RCON connection to ${target} failed: ${err.message}`));
        });
      });
      const client = new RconClient(socket, options);
      await client.request(RCON_TYPE_AUTH, options.password, true);
      return client;
    } catch (err) {
      socket.destroy();
      throw err;
    }
  }

  /** Runs one command and returns the server's whole answer (may be empty). */
  async exec(command: string): Promise<string> {
    if (typeof command !== 'string' || command.trim() === '')
      throw new AppError('VALIDATION_FAILED', 'RCON command must be a non-empty string');
    if (command.includes('\0')) throw new AppError('VALIDATION_FAILED', 'RCON command must not contain NUL bytes');
    const bytes = Buffer.byteLength(command, 'utf8');
    if (bytes > RCON_MAX_COMMAND_BYTES)
      throw new AppError('VALIDATION_FAILED', `RCON command is ${bytes} bytes; the limit is ${RCON_MAX_COMMAND_BYTES}`);
    const run = this.queue.then(() => this.request(RCON_TYPE_EXEC, command, false));
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    if (this.socket.destroyed) return;
    await new Promise<void>((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 1000).unref();
    });
  }

  private get target(): string {
    return `${this.options.host}:${this.options.port}`;
  }

  private allocateId(): number {
    const id = this.nextId;
    this.nextId = id >= 0x7fffffff ? 1 : id + 1;
    return id;
  }

  private request(type: number, body: string, auth: boolean): Promise<string> {
    if (this.closedError) return Promise.reject(this.closedError);
    const timeoutMs = auth ? (this.options.connectTimeoutMs ?? 5000) : (this.options.commandTimeoutMs ?? 10_000);
    const id = this.allocateId();
    const marker = !auth && (this.options.responseEnd ?? 'marker') === 'marker';
    const markerId = marker ? this.allocateId() : undefined;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        // The stream position is unknown after a timeout; the connection is unusable.
        this.fail(
          new AppError(
            'TIMEOUT',
            `RCON ${auth ? 'authentication' : 'command'} on ${this.target} got no complete answer within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      const done =
        <T>(fn: (v: T) => void) =>
        (v: T) => {
          clearTimeout(timer);
          clearTimeout(this.pending?.quietTimer);
          this.pending = undefined;
          fn(v);
        };
      this.pending = { id, markerId, chunks: [], size: 0, auth, resolve: done(resolve), reject: done(reject) };
      this.socket.write(encodeRconPacket(id, type, body));
      if (markerId !== undefined) this.socket.write(encodeRconPacket(markerId, RCON_TYPE_RESPONSE, ''));
    });
  }

  private onData(chunk: Buffer): void {
    let packets: RconPacket[];
    try {
      packets = this.decoder.push(chunk);
    } catch (err) {
      this.fail(new AppError('UPSTREAM_FAILED', `RCON server ${this.target} sent garbage: ${(err as Error).message}`));
      return;
    }
    for (const packet of packets) this.onPacket(packet);
  }

  private onPacket(packet: RconPacket): void {
    const p = this.pending;
    if (!p) return; // late marker echoes and stray packets
    if (p.auth) {
      if (packet.type !== RCON_TYPE_AUTH_RESPONSE) return; // Source sends an empty type-0 first
      if (packet.id === p.id) p.resolve('');
      else {
        p.reject(new AppError('RCON_AUTH_FAILED', `RCON server ${this.target} refused the password`));
        this.socket.destroy();
      }
      return;
    }
    if (packet.id === -1) {
      p.reject(new AppError('RCON_AUTH_FAILED', `RCON server ${this.target} refused the command: not authenticated`));
      return;
    }
    if (packet.id === p.markerId) {
      p.resolve(Buffer.concat(p.chunks).toString('utf8'));
      return;
    }
    if (packet.id !== p.id) return;
    p.chunks.push(packet.body);
    p.size += packet.body.length;
    if (p.size > MAX_RESPONSE_BYTES) {
      this.fail(new AppError('UPSTREAM_FAILED', `RCON answer from ${this.target} exceeds ${MAX_RESPONSE_BYTES} bytes`));
      return;
    }
    if (p.markerId === undefined) {
      clearTimeout(p.quietTimer);
      p.quietTimer = setTimeout(() => p.resolve(Buffer.concat(p.chunks).toString('utf8')), this.options.quietMs ?? 250);
    }
  }

  private onClose(): void {
    const p = this.pending;
    // A server that answered and then closed (e.g. after `stop`) gave its full answer.
    if (p && !p.auth && p.chunks.length > 0) p.resolve(Buffer.concat(p.chunks).toString('utf8'));
    this.fail(new AppError('UPSTREAM_FAILED', `RCON connection to ${this.target} closed`));
  }

  private fail(err: AppError): void {
    this.closedError ??= err;
    this.pending?.reject(err);
    if (!this.socket.destroyed) this.socket.destroy();
  }
}

/** Connects, runs one command, closes: the orchestrator's usual use (stop, save-all, transfer). */
export async function rconExec(options: RconClientOptions, command: string): Promise<string> {
  const client = await RconClient.connect(options);
  try {
    return await client.exec(command);
  } finally {
    await client.close();
  }
}
