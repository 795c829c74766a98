// Source RCON server as vanilla Minecraft speaks it: frames of int32 LE length,
// int32 request id, int32 type (3 auth, 2 exec, 0 response), a NUL-terminated
// body and one more NUL. Written independently of src/shared/rcon-client.ts so
// the client is tested against a second implementation, not against itself.

import { createServer, type Server, type Socket } from 'node:net';
import { timingSafeEqual, createHash } from 'node:crypto';

const TYPE_RESPONSE = 0;
const TYPE_EXEC = 2;
const TYPE_AUTH_RESPONSE = 2;
const TYPE_AUTH = 3;
/** Vanilla reads at most 1460-byte requests and splits responses into 4096-byte bodies. */
const MAX_REQUEST = 1460;
const MAX_RESPONSE_BODY = 4096;

export interface CommandResult {
  response: string;
  /** Runs after the response is flushed (the `stop` command shuts the server down here). */
  after?: () => void;
}

export interface RconServerOptions {
  port: number;
  password: string;
  run: (command: string) => CommandResult;
  log: (message: string) => void;
}

export function encodeRconPacket(id: number, type: number, body: string | Buffer): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const frame = Buffer.alloc(14 + payload.length);
  frame.writeInt32LE(10 + payload.length, 0);
  frame.writeInt32LE(id, 4);
  frame.writeInt32LE(type, 8);
  payload.copy(frame, 12);
  return frame; // the two trailing NULs are already zero
}

function samePassword(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export class RconServer {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly options: RconServerOptions) {}

  async listen(): Promise<void> {
    const server = createServer((socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, () => resolve());
    });
    this.options.log(`RCON running on 0.0.0.0:${this.options.port}`);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.end();
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Sockets that do not finish their half-close in time are dropped.
      setTimeout(() => {
        for (const s of this.sockets) s.destroy();
      }, 500).unref();
    });
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    let authed = false;
    let buffered = Buffer.alloc(0);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4) {
        const length = buffered.readInt32LE(0);
        if (length < 10 || length > MAX_REQUEST) {
          this.options.log(`RCON: dropping client sending a ${length}-byte frame`);
          socket.destroy();
          return;
        }
        if (buffered.length < 4 + length) break;
        const id = buffered.readInt32LE(4);
        const type = buffered.readInt32LE(8);
        const bodyEnd = buffered.indexOf(0, 12);
        const body = buffered.toString('utf8', 12, bodyEnd >= 12 && bodyEnd < 4 + length ? bodyEnd : 4 + length - 2);
        buffered = buffered.subarray(4 + length);
        authed = this.handle(socket, authed, id, type, body);
      }
    });
  }

  /** Answers one request; returns the connection's new authentication state. */
  private handle(socket: Socket, authed: boolean, id: number, type: number, body: string): boolean {
    if (type === TYPE_AUTH) {
      if (samePassword(body, this.options.password)) {
        socket.write(encodeRconPacket(id, TYPE_AUTH_RESPONSE, ''));
        return true;
      }
      this.options.log('RCON: authentication failed');
      socket.write(encodeRconPacket(-1, TYPE_AUTH_RESPONSE, ''));
      return false;
    }
    if (type === TYPE_EXEC) {
      if (!authed) {
        socket.write(encodeRconPacket(-1, TYPE_AUTH_RESPONSE, ''));
        return false;
      }
      this.options.log(`Rcon issued command: ${body}`);
      let result: CommandResult;
      try {
        result = this.options.run(body);
      } catch (err) {
        result = { response: `An unexpected error occurred trying to execute that command: ${(err as Error).message}` };
      }
      this.respond(socket, id, result.response);
      if (result.after) socket.write(Buffer.alloc(0), () => result.after!());
      return true;
    }
    // Vanilla's answer to any other type; clients use it as an end-of-response marker.
    this.respond(socket, id, `Unknown request ${type.toString(16)}`);
    return authed;
  }

  private respond(socket: Socket, id: number, response: string): void {
    const bytes = Buffer.from(response, 'utf8');
    if (bytes.length === 0) {
      socket.write(encodeRconPacket(id, TYPE_RESPONSE, ''));
      return;
    }
    // Splitting by bytes may cut a multi-byte character; vanilla does the same
    // (by chars), and a client concatenates the bodies before decoding.
    for (let off = 0; off < bytes.length; off += MAX_RESPONSE_BODY) {
      socket.write(encodeRconPacket(id, TYPE_RESPONSE, bytes.subarray(off, off + MAX_RESPONSE_BODY)));
    }
  }
}
