// limits.max_packet_size is the ceiling for every frame the router decodes: a declared length over
// it closes the connection at the length prefix, before the body is waited for or buffered. Raw
// sockets against a real Router; each case sends only part of the declared body, so a router that
// waited for the body would still be open when the exchange gives up.
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeVarInt } from '../../src/protocol/codec.js';
import { MAX_FRAME_SIZE } from '../../src/protocol/frame-reader.js';
import { writeLegacyPing16 } from '../../src/protocol/legacy-ping.js';
import { writeHandshake } from '../../src/protocol/packets.js';
import { closeAll, deadPort, PROTOCOL, rawExchange, startRouter, waitUntil } from './harness.js';

afterEach(closeAll);

/** The phase limits at their maximum and a long deadline: only max_packet_size can close early. */
const LIMITS =
  'login_ratelimit = 0\nhandshake_timeout = "60s"\nmax_handshake_size = 65536\nmax_login_start_size = 65536\nmax_packet_size = 4096\n';
const DECLARED = 60_000;

/** The length prefix and packet id of a frame declaring `length` bytes, plus `sent` bytes of its body. */
function partialFrame(length: number, sent: number): Buffer {
  return Buffer.concat([encodeVarInt(length), Buffer.from([0x00]), Buffer.alloc(sent, 0x41)]);
}

const handshake = (nextState: 1 | 2): Buffer => writeHandshake({ protocolVersion: PROTOCOL, serverAddress: 'x', serverPort: 1, nextState });

describe('limits.max_packet_size', () => {
  it.each([
    ['handshake', (): Buffer[] => [partialFrame(DECLARED, 2000)]],
    ['status request (answered locally)', (): Buffer[] => [handshake(1), partialFrame(DECLARED, 2000)]],
    ['Login Start', (): Buffer[] => [handshake(2), partialFrame(DECLARED, 2000)]],
  ])('closes a %s declared over the limit at its length prefix', async (_phase, writes) => {
    const dead = await deadPort();
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${dead}"\n[limits]\n${LIMITS}`);
    const sent = writes();
    const res = await rawExchange(r.port, sent, { timeoutMs: 3000 });
    expect(res.closed).toBe(true);
    const m = r.router.metrics;
    await waitUntil(() => r.router.activeConnections === 0, 3000, 'the connection to close');
    expect(await m.value(m.connectionsTotal, { outcome: 'oversized' })).toBe(1);
    // Never more than what was sent, far below the declared length.
    expect(await m.value(m.bytes, { direction: 'in' })).toBeLessThanOrEqual(Buffer.concat(sent).length);
  });

  it('refuses a 2 MiB status answer from a backend (legacy ping translation) at 64 KiB and answers locally', async () => {
    const backendSockets: Socket[] = [];
    let closedByRouter = false;
    const backend = createServer((s) => {
      backendSockets.push(s);
      s.on('error', () => undefined);
      s.on('close', () => void (closedByRouter = true));
      // Declares the largest frame a 3-byte length encodes (2 MiB - 1) and sends 16 KiB of it.
      s.once('data', () => s.write(partialFrame(MAX_FRAME_SIZE, 16 * 1024)));
    });
    await new Promise<void>((ok) => backend.listen(0, '127.0.0.1', () => ok()));
    const port = (backend.address() as AddressInfo).port;
    try {
      const r = await startRouter(
        `try = ["a"]\n[servers]\na = "127.0.0.1:${port}"\n[status]\nunreachable = "Local answer"\n[limits]\nbackend_dial_timeout = "30s"\nmax_packet_size = 65536`,
      );
      const res = await rawExchange(r.port, [writeLegacyPing16('127.0.0.1', r.port, 78)], { timeoutMs: 3000 });
      expect(res.closed).toBe(true);
      expect(res.raw[0]).toBe(0xff); // the legacy kick packet with the local answer
      expect(Buffer.from(res.raw.subarray(3)).swap16().toString('utf16le')).toContain('Local answer');
      await waitUntil(() => closedByRouter, 3000, 'the router to close the backend connection');
    } finally {
      for (const s of backendSockets) s.destroy();
      await new Promise<void>((ok) => backend.close(() => ok()));
    }
  });
});
