// The data path after login (connection.ts `forward`): bytes only, in order, in
// both directions, with backpressure (a backend that stops reading pauses the
// player, nothing is lost when it resumes), and an orderly end passed on.

import { createHash } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { writeHandshake, writeLoginStart } from '../../src/protocol/packets.js';
import { closeAll, PROTOCOL, startRouter, waitUntil } from './harness.js';

const servers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await closeAll();
  for (const close of servers.splice(0)) await close();
});

const preamble = Buffer.concat([
  writeHandshake({ protocolVersion: PROTOCOL, serverAddress: 'play.example.com', serverPort: 25565, nextState: 2 }),
  writeLoginStart({ name: 'Bulk', uuid: '11111111-2222-4333-8444-555555555555' }, PROTOCOL),
]);

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
/** Bytes that are not all the same, so a reordering or a lost chunk changes the hash. */
const payload = (size: number): Buffer => {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4) b.writeUInt32LE(i >>> 2, i);
  return b;
};

interface Backend {
  port: number;
  received(): Buffer;
  ended(): boolean;
  socket(): Socket | undefined;
}

/** A backend that reads nothing for `stallMs` after accepting (the kernel buffers fill), then collects. */
async function startStallingBackend(stallMs: number, onConnect?: (s: Socket) => void): Promise<Backend> {
  const chunks: Buffer[] = [];
  let ended = false;
  let current: Socket | undefined;
  const server = createServer((s) => {
    current = s;
    s.pause();
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => (ended = true));
    s.on('error', () => undefined);
    setTimeout(() => s.resume(), stallMs);
    onConnect?.(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(() => new Promise<void>((r) => {
    current?.destroy();
    server.close(() => r());
  }));
  return { port: (server.address() as { port: number }).port, received: () => Buffer.concat(chunks), ended: () => ended, socket: () => current };
}

describe('data path after login', () => {
  it('carries a large upload to a stalled backend in order, pausing the player instead of buffering it all', async () => {
    const backend = await startStallingBackend(1500);
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${backend.port}"`);
    // More than the kernel buffers on the way hold (loopback autotuning: a few MiB per socket).
    const data = payload(48 * 1024 * 1024);
    const player = connect({ host: '127.0.0.1', port: r.port });
    player.on('error', () => undefined);
    await new Promise<void>((res) => player.once('connect', () => res()));
    player.write(preamble);
    // A client sends play traffic only once the login went through (the router caps pre-routing bytes).
    await waitUntil(() => backend.socket() !== undefined, 5000, 'the backend connection');
    player.end(data);
    // While the backend reads nothing, the router stops reading the player: the rest waits in the
    // player's own send buffer, not in the router's memory.
    await new Promise((res) => setTimeout(res, 700));
    expect(backend.received().length).toBe(0);
    expect(player.writableLength).toBeGreaterThan(0);
    await waitUntil(() => backend.received().length >= preamble.length + data.length && backend.ended(), 20_000, 'every byte and the end at the backend');
    const got = backend.received();
    expect(got.length).toBe(preamble.length + data.length);
    expect(got.subarray(0, preamble.length).equals(preamble)).toBe(true);
    expect(sha(got.subarray(preamble.length))).toBe(sha(data));
    player.destroy();
  });

  it('carries backend → player bytes in order and passes the backend’s end on', async () => {
    const data = payload(8 * 1024 * 1024);
    const backend = await startStallingBackend(0, (s) => s.end(data));
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${backend.port}"`);
    const chunks: Buffer[] = [];
    let ended = false;
    const player = connect({ host: '127.0.0.1', port: r.port });
    player.on('error', () => undefined);
    player.on('data', (c: Buffer) => chunks.push(c));
    player.on('end', () => (ended = true));
    player.write(preamble);
    await waitUntil(() => ended, 20_000, 'the end at the player');
    const got = Buffer.concat(chunks);
    expect(got.length).toBe(data.length);
    expect(sha(got)).toBe(sha(data));
    await waitUntil(() => backend.received().equals(preamble), 5000, 'the replayed login at the backend');
    player.destroy();
  });
});
