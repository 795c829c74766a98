// The data path after login (byte-pipe.ts `forwardBytes`): bytes only, in
// order, in both directions, with backpressure (a backend that stops reading
// pauses the player, nothing is lost when it resumes), and an orderly end passed
// on; many sessions at once, mixing small frames (the shared read buffer) and
// bulk (pooled buffers, reading paused while a write from one is in flight),
// never mix their bytes.

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
  servers.push(
    () =>
      new Promise<void>((r) => {
        current?.destroy();
        server.close(() => r());
      }),
  );
  return {
    port: (server.address() as { port: number }).port,
    received: () => Buffer.concat(chunks),
    ended: () => ended,
    socket: () => current,
  };
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
    await waitUntil(
      () => backend.received().length >= preamble.length + data.length && backend.ended(),
      20_000,
      'every byte and the end at the backend',
    );
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

  it('keeps concurrent sessions apart while each switches between small frames and bulk, both ways, behind slow readers', async () => {
    const SESSIONS = 6;
    // Sizes that cross the bulk threshold both ways: frames, a few KiB, then 100s of KiB, and back.
    const sizes = [23, 5, 300, 4096, 200_000, 17, 700_000, 64, 40_000, 1, 1_500_000, 90, 3];
    /** What session `seed` sends: its own bytes (xor-ed with the seed) in those sizes. */
    const script = (seed: number): Buffer[] =>
      sizes.map((n, i) => {
        const b = payload(Math.ceil((n + seed + i) / 4) * 4 + 4).subarray(0, n + seed + i);
        for (let k = 0; k < b.length; k++) b[k]! ^= seed * 37 + 1;
        return b;
      });
    const uploads = new Map<number, Buffer[]>();
    const loginFor = (seed: number): Buffer =>
      Buffer.concat([
        writeHandshake({ protocolVersion: PROTOCOL, serverAddress: 'play.example.com', serverPort: 25565, nextState: 2 }),
        // The digit after "Mixed" tells the backend which script to send down.
        writeLoginStart({ name: `Mixed${seed}`, uuid: '11111111-2222-4333-8444-555555555555' }, PROTOCOL),
      ]);
    const bytesOf = (bufs: Buffer[]): number => bufs.reduce((n, b) => n + b.length, 0);
    // Each backend connection reads in bursts with pauses (its kernel buffers fill, the router's
    // writes go partial) and sends its own script down the same way; it ends only once the whole
    // upload arrived (a backend's end closes the session: the router does not keep half-open ones).
    const received = new Map<Socket, Buffer[]>();
    const server = createServer((s) => {
      const got: Buffer[] = [];
      received.set(s, got);
      s.on('data', (c: Buffer) => {
        got.push(c);
        s.pause();
        setTimeout(() => s.resume(), 2);
      });
      s.on('error', () => undefined);
      s.once('data', (first: Buffer) => {
        const at = first.indexOf('Mixed');
        const seed = at >= 0 ? first.readUInt8(at + 5) - 0x30 : 0;
        const expected = loginFor(seed).length + bytesOf(script(seed));
        void (async () => {
          for (const chunk of script(seed + 10)) {
            if (!s.write(chunk)) await new Promise((res) => s.once('drain', res));
            await new Promise((res) => setTimeout(res, 1));
          }
          for (let i = 0; i < 1500 && bytesOf(got) < expected; i++) await new Promise((res) => setTimeout(res, 20));
          s.end();
        })();
      });
    });
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    servers.push(
      () =>
        new Promise<void>((res) => {
          for (const s of received.keys()) s.destroy();
          server.close(() => res());
        }),
    );
    const port = (server.address() as { port: number }).port;
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${port}"\n[limits]\nlogin_ratelimit = 0`);
    const sessions = Array.from({ length: SESSIONS }, async (_, seed) => {
      const login = loginFor(seed);
      const player = connect({ host: '127.0.0.1', port: r.port });
      player.on('error', () => undefined);
      const down: Buffer[] = [];
      let ended = false;
      player.on('data', (c: Buffer) => {
        down.push(c);
        player.pause(); // a slow player too: the backend → player direction waits for it
        setTimeout(() => player.resume(), 1);
      });
      player.on('end', () => (ended = true));
      await new Promise<void>((res) => player.once('connect', () => res()));
      player.write(login);
      // A client sends play traffic only once the login went through (the router caps pre-routing
      // bytes): the backend's first bytes down say it did.
      await waitUntil(() => down.length > 0, 10_000, `the backend's first bytes at player ${seed}`);
      const up = script(seed);
      uploads.set(seed, up);
      for (const chunk of up) {
        if (!player.write(chunk)) await new Promise((res) => player.once('drain', res));
        await new Promise((res) => setTimeout(res, 1));
      }
      await waitUntil(() => ended, 30_000, `the end at player ${seed}`);
      expect(sha(Buffer.concat(down))).toBe(sha(Buffer.concat(script(seed + 10))));
      player.destroy();
      return login;
    });
    const logins = await Promise.all(sessions);
    // Every backend connection got exactly one session's login followed by that session's bytes.
    await waitUntil(
      () => {
        const totals = [...received.values()].map((b) => Buffer.concat(b).length);
        const wanted = logins.map((l, seed) => l.length + Buffer.concat(uploads.get(seed)!).length).sort((a, b) => a - b);
        return JSON.stringify(totals.sort((a, b) => a - b)) === JSON.stringify(wanted);
      },
      30_000,
      'every upload at the backend',
    );
    const bySeed = new Map(
      [...received.values()].map((b) => {
        const all = Buffer.concat(b);
        const seed = logins.findIndex((l) => all.subarray(0, l.length).equals(l));
        return [seed, all] as const;
      }),
    );
    expect([...bySeed.keys()].sort()).toEqual(logins.map((_, i) => i));
    for (const [seed, all] of bySeed) expect(sha(all.subarray(logins[seed]!.length))).toBe(sha(Buffer.concat(uploads.get(seed)!)));
  });
});
