// forwardBytes (byte-pipe.ts) on its own: a direction switches to reused read
// buffers at its first bulk read (small reads then land in one buffer shared by
// every switched session and are copied out); a session whose destination is
// not reading waits without losing or mixing bytes while another one flows.

import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { forwardBytes, userBuffersSupported } from '../../src/router/byte-pipe.js';
import { waitUntil } from './harness.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

const listen = async (server: Server): Promise<number> => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => server.close());
  return (server.address() as { port: number }).port;
};

const connected = (port: number): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, noDelay: true }, () => resolve(s));
    s.once('error', reject);
    cleanups.push(() => s.destroy());
  });

/** A backend that collects what it reads; `stalled` ones read nothing until `release()`. */
async function backend(stalled: boolean) {
  const chunks: Buffer[] = [];
  let socket: Socket | undefined;
  const server = createServer((s) => {
    socket = s;
    if (stalled) s.pause();
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => undefined);
    cleanups.push(() => s.destroy());
  });
  const port = await listen(server);
  return { port, received: () => Buffer.concat(chunks), release: () => socket?.resume() };
}

/** A proxy whose only job is forwardBytes both ways (no router around it). */
async function pipeTo(backendPort: number, before?: (toBackend: Socket) => void): Promise<number> {
  const server = createServer((player) => {
    player.pause();
    const b = connect({ host: '127.0.0.1', port: backendPort, noDelay: true }, () => {
      before?.(b);
      forwardBytes(player, b);
      forwardBytes(b, player);
    });
    for (const s of [player, b]) s.on('error', () => s.destroy());
    cleanups.push(() => {
      player.destroy();
      b.destroy();
    });
  });
  return listen(server);
}

const frame = (i: number): Buffer => {
  const f = Buffer.alloc(40 + (i % 300), i % 251);
  f.writeUInt32LE(i, 0);
  return f;
};

describe('forwardBytes', () => {
  it('reads into reused buffers on this Node', () => {
    expect(userBuffersSupported).toBe(true);
  });

  it('keeps a session whose backend stopped reading intact while another session switches to the reused buffers and sends small frames', async () => {
    // Session 1's backend reads nothing and already has 16 MiB queued towards it: every frame its
    // player sends waits in the router. Session 2 keeps small frames flowing meanwhile.
    const filler = Buffer.alloc(16 * 1024 * 1024, 0xee);
    const stalled = await backend(true);
    const busy = await backend(false);
    const p1 = await connected(await pipeTo(stalled.port, (b) => b.write(filler)));
    const p2 = await connected(await pipeTo(busy.port));
    // A bulk read first: both directions switch to the reused buffers.
    const opener = (n: number): Buffer => Buffer.alloc(64 * 1024, n);
    const sent1: Buffer[] = [opener(1)];
    const sent2: Buffer[] = [opener(2)];
    p1.write(sent1[0]!);
    p2.write(sent2[0]!);
    await new Promise((r) => setTimeout(r, 100));
    for (let i = 0; i < 400; i++) {
      if (i % 20 === 0) {
        const f = frame(100_000 + i);
        sent1.push(f);
        p1.write(f);
      }
      const g = frame(i);
      sent2.push(g);
      p2.write(g);
      if (i % 4 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    const want2 = Buffer.concat(sent2);
    await waitUntil(() => busy.received().length >= want2.length, 10_000, 'session 2 at its backend');
    expect(busy.received().equals(want2)).toBe(true);
    stalled.release();
    const want1 = Buffer.concat([filler, ...sent1]);
    await waitUntil(() => stalled.received().length >= want1.length, 20_000, 'session 1 at its backend');
    expect(stalled.received().equals(want1)).toBe(true);
  });
});
