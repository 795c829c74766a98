// A small server-list-ping client: handshake + status request + ping, parsed
// status JSON and latency. The orchestrator's readiness probe uses it (ready
// when players.max > 0: the image's mc-health rule).

import { connect } from 'node:net';
import { PacketReader, ProtocolError } from './codec.js';
import { FrameReader, MAX_FRAME_SIZE } from './frame-reader.js';
import { parsePing, writeHandshake, writePing, writeStatusRequest } from './packets.js';

export interface ServerStatus {
  version?: { name?: string; protocol?: number };
  players?: { max?: number; online?: number; sample?: unknown[] };
  description?: unknown;
  favicon?: string;
  [key: string]: unknown;
}

export interface PingResult {
  status: ServerStatus;
  /** Milliseconds from Ping sent to Pong received. */
  latencyMs: number;
}

export interface PingOptions {
  timeoutMs?: number;
  /** Protocol version to announce; -1 is "unknown" and servers answer with their own. */
  protocol?: number;
  /** Address to put in the handshake (defaults to host). */
  serverAddress?: string;
  /** Largest answer frame accepted; a longer declared length fails the ping at its length prefix. */
  maxFrameSize?: number;
}

export function pingServer(host: string, port: number, options: PingOptions = {}): Promise<PingResult> {
  const timeoutMs = options.timeoutMs ?? 3000;
  const maxFrameSize = options.maxFrameSize ?? MAX_FRAME_SIZE;
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const frames = new FrameReader();
    let status: ServerStatus | undefined;
    let sentAt = 0;
    let settled = false;
    const finish = (err: Error | undefined, result?: PingResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(result!);
    };
    const timer = setTimeout(() => finish(new Error(`status ping to ${host}:${port} timed out after ${timeoutMs} ms`)), timeoutMs);
    socket.on('error', (err) => finish(err));
    socket.on('close', () => finish(new Error(`${host}:${port} closed the connection before answering the status ping`)));
    socket.on('connect', () => {
      socket.write(
        Buffer.concat([
          writeHandshake({
            protocolVersion: options.protocol ?? -1,
            serverAddress: options.serverAddress ?? host,
            serverPort: port,
            nextState: 1,
          }),
          writeStatusRequest(),
        ]),
      );
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        frames.push(chunk);
        for (let frame = frames.next(maxFrameSize); frame; frame = frames.next(maxFrameSize)) {
          if (status === undefined) {
            if (frame.packetId !== 0x00) throw new ProtocolError(`expected Status Response, got id ${frame.packetId}`);
            status = JSON.parse(new PacketReader(frame.body).string()) as ServerStatus;
            const payload = Buffer.alloc(8);
            payload.writeBigInt64BE(BigInt(Date.now()));
            sentAt = performance.now();
            socket.write(writePing(payload));
          } else {
            parsePing(frame);
            finish(undefined, { status, latencyMs: Math.round(performance.now() - sentAt) });
            return;
          }
        }
      } catch (err) {
        finish(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}
