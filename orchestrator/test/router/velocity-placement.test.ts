// Placement (a) of docs/router.md "Velocity in the loop": the router in front of
// Velocity with `[proxy-protocol] send_to_backends = true` and Velocity's
// `haproxy-protocol = true`. Velocity itself cannot be installed here, so the
// peer is a small TCP server that reads the PROXY v2 header the way Velocity
// (Netty's HAProxyMessageDecoder) does — its own parser, not the router's —
// checks the player's address in it, reads the handshake after it, and answers
// a login disconnect that must reach the player through the router.

import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FrameReader } from '../../src/protocol/frame-reader.js';
import { parseHandshake, parseLoginStart, writeHandshake, writeLoginDisconnect, writeLoginStart } from '../../src/protocol/packets.js';
import { writeProxyV2Header } from '../../src/protocol/proxy-protocol.js';
import { closeAll, PROTOCOL, rawExchange, startRouter } from './harness.js';

const peers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await closeAll();
  for (const close of peers.splice(0)) await close();
});

const SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

interface SeenHeader {
  command: number;
  family: 'TCP4' | 'TCP6';
  source: string;
  sourcePort: number;
  destination: string;
  destinationPort: number;
}

const ipv6 = (b: Buffer): string => Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2).toString(16)).join(':');

/** PROXY v2 as the spec (haproxy.org proxy-protocol.txt §2.2) lays it out; undefined until complete. */
function parseV2(buf: Buffer): { header: SeenHeader; size: number } | undefined {
  if (buf.length < 16) return undefined;
  if (!buf.subarray(0, 12).equals(SIGNATURE))
    throw new Error('no PROXY v2 signature: Velocity with haproxy-protocol = true would close the connection');
  if (buf[12]! >> 4 !== 2) throw new Error(`PROXY version ${buf[12]! >> 4}`);
  const length = buf.readUInt16BE(14);
  if (buf.length < 16 + length) return undefined;
  const body = buf.subarray(16, 16 + length);
  const family = buf[13];
  if (family === 0x11) {
    return {
      size: 16 + length,
      header: {
        command: buf[12]! & 0x0f,
        family: 'TCP4',
        source: [...body.subarray(0, 4)].join('.'),
        destination: [...body.subarray(4, 8)].join('.'),
        sourcePort: body.readUInt16BE(8),
        destinationPort: body.readUInt16BE(10),
      },
    };
  }
  if (family === 0x21) {
    return {
      size: 16 + length,
      header: {
        command: buf[12]! & 0x0f,
        family: 'TCP6',
        source: ipv6(body.subarray(0, 16)),
        destination: ipv6(body.subarray(16, 32)),
        sourcePort: body.readUInt16BE(32),
        destinationPort: body.readUInt16BE(34),
      },
    };
  }
  throw new Error(`address family 0x${family!.toString(16)}`);
}

interface VelocityPeer {
  port: number;
  seen: Array<{ header: SeenHeader; address: string; player: string }>;
}

/** Reads PROXY v2, then handshake + Login Start, and disconnects the player naming the address it saw. */
async function startVelocityLikePeer(): Promise<VelocityPeer> {
  const seen: VelocityPeer['seen'] = [];
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let header: SeenHeader | undefined;
    let frames: FrameReader | undefined;
    s.on('data', (chunk: Buffer) => {
      if (!frames) {
        buf = Buffer.concat([buf, chunk]);
        const parsed = parseV2(buf);
        if (!parsed) return;
        header = parsed.header;
        frames = new FrameReader();
        chunk = buf.subarray(parsed.size);
      }
      frames.push(chunk);
      const hs = frames.next();
      const ls = hs && frames.next();
      if (!hs || !ls) return;
      const handshake = parseHandshake(hs);
      const player = parseLoginStart(ls, handshake.protocolVersion);
      seen.push({ header: header!, address: handshake.serverAddress, player: player.name });
      s.end(writeLoginDisconnect(`velocity saw ${header!.source}:${header!.sourcePort}`));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  peers.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return { port: (server.address() as { port: number }).port, seen };
}

const login = (name: string): Buffer =>
  Buffer.concat([
    writeHandshake({ protocolVersion: PROTOCOL, serverAddress: 'play.example.com', serverPort: 25565, nextState: 2 }),
    writeLoginStart({ name, uuid: '11111111-2222-4333-8444-555555555555' }, PROTOCOL),
  ]);

/** The text of a login-state disconnect (a JSON text component; the string is shorter than 128 bytes). */
const disconnectText = (frameBody: Buffer): string => (JSON.parse(frameBody.subarray(1).toString('utf8')) as { text: string }).text;

describe('router in front of Velocity (PROXY v2, haproxy-protocol = true)', () => {
  it("gives Velocity the player's address and port, then the login; Velocity's answer reaches the player", async () => {
    const velocity = await startVelocityLikePeer();
    const r = await startRouter(
      `try = ["velocity"]\n[servers]\nvelocity = "127.0.0.1:${velocity.port}"\n[proxy-protocol]\nsend_to_backends = true`,
    );
    const res = await rawExchange(r.port, [login('Steve')], { untilFrames: 1 });
    expect(res.frames[0]?.packetId).toBe(0);
    const text = disconnectText(res.frames[0]!.body);
    expect(text).toMatch(/^velocity saw 127\.0\.0\.1:\d+$/);
    expect(velocity.seen).toHaveLength(1);
    const seen = velocity.seen[0]!;
    expect(seen.header).toMatchObject({
      command: 1,
      family: 'TCP4',
      source: '127.0.0.1',
      destination: '127.0.0.1',
      destinationPort: r.port,
    });
    expect(seen.header.sourcePort).not.toBe(r.port);
    expect(seen).toMatchObject({ address: 'play.example.com', player: 'Steve' });
  });

  it('behind a trusted load balancer, Velocity sees the player from the balancer header (IPv4 and IPv6)', async () => {
    const velocity = await startVelocityLikePeer();
    const r = await startRouter(
      `try = ["velocity"]\n[servers]\nvelocity = "127.0.0.1:${velocity.port}"\n[proxy-protocol]\nsend_to_backends = true\ntrusted_cidrs = ["127.0.0.0/8"]`,
    );
    const v4 = writeProxyV2Header({
      sourceAddress: '203.0.113.9',
      sourcePort: 4444,
      destinationAddress: '10.0.0.1',
      destinationPort: 25565,
    });
    const a = await rawExchange(r.port, [Buffer.concat([v4, login('Alex')])], { untilFrames: 1 });
    expect(disconnectText(a.frames[0]!.body)).toBe('velocity saw 203.0.113.9:4444');
    const v6 = writeProxyV2Header({
      sourceAddress: '2001:db8::7',
      sourcePort: 5555,
      destinationAddress: '2001:db8::1',
      destinationPort: 25565,
    });
    const b = await rawExchange(r.port, [Buffer.concat([v6, login('Sam')])], { untilFrames: 1 });
    expect(disconnectText(b.frames[0]!.body)).toBe('velocity saw 2001:db8:0:0:0:0:0:7:5555');
    expect(velocity.seen.map((s) => [s.header.family, s.player])).toEqual([
      ['TCP4', 'Alex'],
      ['TCP6', 'Sam'],
    ]);
  });
});
