// Router behaviour with real minecraft-protocol peers (server and client)
// through the Router and the StaticResolver.
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import mc from 'minecraft-protocol';
import { encodeVarInt, PacketReader } from '../../src/protocol/codec.js';
import { writeLegacyPing16 } from '../../src/protocol/legacy-ping.js';
import { writeHandshake, writePing, writeStatusRequest } from '../../src/protocol/packets.js';
import {
  closeAll,
  deadPort,
  mcLogin,
  PROTOCOL,
  rawExchange,
  recordingSessions,
  startMcBackend,
  startRouter,
  VERSION,
  waitUntil,
} from './harness.js';

afterEach(closeAll);

const NO_RATELIMIT = 'login_ratelimit = 0\n';

function decodeLegacy(buf: Buffer): string[] {
  expect(buf[0]).toBe(0xff);
  const body = Buffer.from(buf.subarray(3, 3 + buf.readUInt16BE(1) * 2));
  body.swap16();
  return body.toString('utf16le').split('\0');
}

describe('router with a static configuration', () => {
  it('proxies a status ping to the backend (MOTD and players come from the backend)', async () => {
    const a = await startMcBackend('backend A');
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${a.port}"`);
    const res = (await mc.ping({ host: '127.0.0.1', port: r.port, version: VERSION })) as {
      description: { text: string };
      players: { max: number };
    };
    expect(res.description.text).toBe('backend A');
    expect(res.players.max).toBe(20);
  });

  it('lets a login through to the backend with the original handshake replayed, and reports the session', async () => {
    const a = await startMcBackend('A');
    const sessions = recordingSessions();
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${a.port}"\n[limits]\n${NO_RATELIMIT}`, { sessions });
    const out = await mcLogin(r.port, 'Alex', { waitForBackend: a });
    expect(out.ended).toBe('backend-login');
    expect(a.logins[0]).toMatchObject({ username: 'Alex', serverHost: '127.0.0.1' });
    expect(sessions.accepted[0]).toMatchObject({ player: { name: 'Alex' }, backend: { name: 'a' } });
    expect(sessions.accepted[0]!.player.uuid).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('routes a forced host to its list and everything else to try', async () => {
    const lobby = await startMcBackend('lobby');
    const survival = await startMcBackend('survival');
    const r = await startRouter(
      `try = ["lobby"]\n[servers]\nlobby = "127.0.0.1:${lobby.port}"\nsurvival = "127.0.0.1:${survival.port}"\n[forced-hosts]\n"survival.example.com" = ["survival"]\n[limits]\n${NO_RATELIMIT}`,
    );
    expect((await mcLogin(r.port, 'Forced', { fakeHost: 'Survival.Example.COM.\0FML2\0', waitForBackend: survival })).ended).toBe(
      'backend-login',
    );
    expect((await mcLogin(r.port, 'Plain', { fakeHost: 'other.example.com', waitForBackend: lobby })).ended).toBe('backend-login');
    expect(survival.logins.map((l) => l.username)).toEqual(['Forced']);
    expect(lobby.logins.map((l) => l.username)).toEqual(['Plain']);
  });

  it('falls to the next try entry when the first backend is down', async () => {
    const dead = await deadPort();
    const b = await startMcBackend('second');
    const r = await startRouter(
      `try = ["down", "b"]\n[servers]\ndown = "127.0.0.1:${dead}"\nb = "127.0.0.1:${b.port}"\n[limits]\n${NO_RATELIMIT}`,
    );
    expect((await mcLogin(r.port, 'Fallback', { waitForBackend: b })).ended).toBe('backend-login');
    const res = (await mc.ping({ host: '127.0.0.1', port: r.port, version: VERSION })) as { description: { text: string } };
    expect(res.description.text).toBe('second');
  });

  it('answers status itself when the backend is down: configured MOTD, client protocol echoed, pong', async () => {
    const dead = await deadPort();
    const r = await startRouter(
      `try = ["a"]\n[servers]\na = "127.0.0.1:${dead}"\n[status]\nunreachable = "Gone fishing"\nversion_name = "EC"`,
    );
    for (const version of [VERSION, '1.8.8']) {
      const res = (await mc.ping({ host: '127.0.0.1', port: r.port, version })) as {
        description: { text: string };
        version: { protocol: number; name: string };
        latency: number;
      };
      expect(res.description.text).toBe('Gone fishing');
      expect(res.version).toEqual({ name: 'EC', protocol: version === VERSION ? PROTOCOL : 47 });
      expect(res.latency).toBeGreaterThanOrEqual(0); // mc.ping only resolves after a matching pong
    }
    expect(await r.router.metrics.value(r.router.metrics.statusAnswers, { state: 'Unreachable' })).toBe(2);
  });

  it.each([['backend up'], ['backend down']])('handles handshake + status request + ping in ONE TCP write (%s)', async (mode) => {
    const port = mode === 'backend up' ? (await startMcBackend('one-segment')).port : await deadPort();
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${port}"`);
    const payload = Buffer.from('0123abcd');
    const segment = Buffer.concat([
      writeHandshake({ protocolVersion: PROTOCOL, serverAddress: 'x', serverPort: 25565, nextState: 1 }),
      writeStatusRequest(),
      writePing(payload),
    ]);
    const res = await rawExchange(r.port, [segment], { untilFrames: 2 });
    expect(res.frames).toHaveLength(2);
    const json = JSON.parse(new PacketReader(res.frames[0]!.body).string()) as { description: unknown };
    expect(JSON.stringify(json.description)).toContain(mode === 'backend up' ? 'one-segment' : 'Unreachable');
    expect(res.frames[1]!.packetId).toBe(1);
    expect(res.frames[1]!.body.equals(payload)).toBe(true);
  });

  it('answers legacy FE 01 pings locally, and translates the backend status for FE 01 FA', async () => {
    const dead = await deadPort();
    const down = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${dead}"\n[status]\nunreachable = "Legacy down"`);
    const res = await rawExchange(down.port, [Buffer.from([0xfe, 0x01])]);
    expect(res.closed).toBe(true);
    expect(decodeLegacy(res.raw)).toEqual(['§1', '127', 'EnderCloud', 'Legacy down', '0', '0']);

    const up = await startMcBackend('Legacy up');
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${up.port}"`);
    const res2 = await rawExchange(r.port, [writeLegacyPing16('127.0.0.1', r.port, 78)]);
    const fields = decodeLegacy(res2.raw);
    expect(fields[3]).toBe('Legacy up');
    expect(fields[5]).toBe('20');
  });

  it('drops garbage, oversized and slowloris clients while a concurrent good client logs in', async () => {
    const a = await startMcBackend('A');
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${a.port}"\n[limits]\n${NO_RATELIMIT}handshake_timeout = 600`);
    const started = Date.now();
    const http = rawExchange(r.port, [Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')]);
    const garbage = rawExchange(r.port, [Buffer.from([0x05, 0x07, 0xde, 0xad, 0xbe, 0xef])]);
    const oversized = rawExchange(r.port, [Buffer.concat([encodeVarInt(100_000), Buffer.alloc(64)])]);
    const hs = writeHandshake({ protocolVersion: PROTOCOL, serverAddress: 'slow', serverPort: 1, nextState: 2 });
    const slowloris = rawExchange(
      r.port,
      [...hs.subarray(0, 5)].map((b) => Buffer.from([b])),
      { gapMs: 250, timeoutMs: 4000 },
    );
    const good = mcLogin(r.port, 'Good', { waitForBackend: a });
    const [h, g, o, s, ok] = await Promise.all([http, garbage, oversized, slowloris, good]);
    expect(h.closed && g.closed && o.closed && s.closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(ok.ended).toBe('backend-login');
    const m = r.router.metrics;
    await waitUntil(() => r.router.activeConnections === 0, 3000, 'all connections to close');
    expect(await m.value(m.connectionsTotal, { outcome: 'malformed' })).toBe(1);
    expect(await m.value(m.connectionsTotal, { outcome: 'oversized' })).toBe(1);
    expect(await m.value(m.connectionsTotal, { outcome: 'timeout' })).toBe(2); // HTTP waits for a 71-byte frame, then times out
  });

  it('enforces the per-IP connection limit', async () => {
    const a = await startMcBackend('A');
    const r = await startRouter(
      `try = ["a"]\n[servers]\na = "127.0.0.1:${a.port}"\n[limits]\nmax_connections_per_ip = 2\nhandshake_timeout = 3000`,
    );
    const idle = [connect({ port: r.port, host: '127.0.0.1' }), connect({ port: r.port, host: '127.0.0.1' })];
    for (const s of idle) s.on('error', () => undefined);
    await waitUntil(() => r.router.activeConnections === 2, 2000, 'two idle connections');
    const third = await rawExchange(r.port, [Buffer.from([0x01])], { timeoutMs: 2000 });
    expect(third.closed).toBe(true);
    expect(await r.router.metrics.value(r.router.metrics.rateLimited, { limit: 'connections' })).toBe(1);
    for (const s of idle) s.destroy();
    await waitUntil(() => r.router.activeConnections === 0, 2000, 'slots to free');
    const res = (await mc.ping({ host: '127.0.0.1', port: r.port, version: VERSION })) as { description: { text: string } };
    expect(res.description.text).toBe('A');
  });

  it('enforces the login rate limit with a login-state disconnect message', async () => {
    const a = await startMcBackend('A');
    const r = await startRouter(
      `try = ["a"]\n[servers]\na = "127.0.0.1:${a.port}"\n[limits]\nlogin_ratelimit = "30s"\n[messages]\nrate-limited = "Slow down"`,
    );
    expect((await mcLogin(r.port, 'First', { waitForBackend: a })).ended).toBe('backend-login');
    const second = await mcLogin(r.port, 'Second');
    expect(second.ended).toBe('end');
    expect(JSON.parse(second.disconnectReason!)).toEqual({ text: 'Slow down' });
    expect(a.logins.map((l) => l.username)).toEqual(['First']);
    expect(await r.router.metrics.value(r.router.metrics.rateLimited, { limit: 'login' })).toBe(1);
  });

  it('drops a Login Start larger than max_login_start_size before contacting a backend', async () => {
    const a = await startMcBackend('A');
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${a.port}"\n[limits]\n${NO_RATELIMIT}max_login_start_size = 64`);
    const hs = writeHandshake({ protocolVersion: 47, serverAddress: 'x', serverPort: 1, nextState: 2 });
    const big = Buffer.concat([encodeVarInt(200), Buffer.alloc(200)]);
    const res = await rawExchange(r.port, [hs, big]);
    expect(res.closed).toBe(true);
    expect(a.logins).toHaveLength(0);
    expect(await r.router.metrics.value(r.router.metrics.connectionsTotal, { outcome: 'oversized' })).toBe(1);
  });
});
