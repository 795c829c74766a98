// The Minecraft-protocol test server in a real container, driven by the real
// minecraft-protocol client and by src/shared/rcon-client.ts: status, logins,
// files under /data, graceful stops, misbehaviour switches, RCON and transfer.

import { mkdtempSync, readFileSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/shared/errors.js';
import { RconClient, rconExec } from '../../src/shared/rcon-client.js';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { ensureImage } from '../support/images.js';
import {
  expectLoginRefused,
  loginBot,
  mcServerImage,
  pingStatus,
  startMcServerContainer,
  waitForStatus,
  type McServerContainer,
} from '../support/mc-server.js';
import { freePort } from '../support/registry.js';

const FILE_ID = uniqueId('mcsrv');
const LABELS = { 'endercloud.test': FILE_ID };
const PASSWORD = 'rcon-secret-1';
const READY = /Done \(\d+\.\d+s\)! For help, type "help"/;
const tempDirs: string[] = [];

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ec-mcsrv-'));
  tempDirs.push(dir);
  return dir;
}

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
/** Player files, skipping the server's in-flight `.tmp` files. */
const readPlayers = (dir: string) =>
  readdirSync(join(dir, 'playerdata'))
    .filter((f) => f.endsWith('.json'))
    .map((f) => readJson(join(dir, 'playerdata', f)));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rcon = (c: McServerContainer, password = PASSWORD) => ({ host: c.host, port: c.rconHostPort, password });

async function start(env: Record<string, string>, dir?: string): Promise<McServerContainer> {
  return startMcServerContainer({ labels: LABELS, env: { RCON_PASSWORD: PASSWORD, ...env }, dataDir: dir });
}

beforeAll(async () => {
  await ensureImage(mcServerImage);
});

afterAll(async () => {
  await removeContainersByLabel(LABELS);
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe('test server image', () => {
  it('stays well under 150 MB', async () => {
    const info = await docker()
      .getImage(await ensureImage(mcServerImage))
      .inspect();
    const mb = info.Size / 1e6;
    console.log(`mc-server image: ${mb.toFixed(1)} MB`);
    expect(mb).toBeLessThan(150);
  });
});

describe('a running test server (one container, in order)', () => {
  let server: McServerContainer;
  let dir: string;

  beforeAll(async () => {
    dir = dataDir();
    server = await start({}, dir);
    await server.waitForLog(READY);
  });

  it('answers the status ping with 0/20, then 1/20 while a bot plays, then 0/20 again', async () => {
    const before = await pingStatus(server.host, server.hostPort);
    expect(before).toMatchObject({ online: 0, max: 20, protocol: 767, versionName: '1.21.1' });
    const bot = await loginBot(server.host, server.hostPort, 'PingBot');
    try {
      expect((await pingStatus(server.host, server.hostPort)).online).toBe(1);
    } finally {
      await bot.end();
    }
    await waitForStatus(server.host, server.hostPort, (s) => s.online === 0, 5000);
  });

  it('lets an offline-mode client reach the play state and stay connected', async () => {
    const bot = await loginBot(server.host, server.hostPort, 'PlayBot');
    try {
      const position = await bot.waitForPacket('position');
      expect(position).toMatchObject({ x: 0, y: 100, z: 0 });
      await sleep(1500);
      expect(bot.client.ended).toBe(false);
      expect(await rconExec(rcon(server), 'list')).toBe('There are 1 of a max of 20 players online: PlayBot');
    } finally {
      await bot.end();
    }
  });

  it('writes level.json, playerdata/<uuid>.json, session.lock and a ticks file that changes', async () => {
    await waitForStatus(server.host, server.hostPort, (s) => s.online === 0, 5000);
    const level = readJson(join(dir, 'level.json'));
    expect(level).toMatchObject({ name: 'world', version: '1.21.1', spawn: { x: 0, y: 100, z: 0 } });
    expect(String(level.seed)).toMatch(/^-?\d+$/);
    expect(existsSync(join(dir, 'session.lock'))).toBe(true);
    const players = readPlayers(dir);
    expect(players.map((p) => p.name).sort()).toEqual(['PingBot', 'PlayBot']);
    expect(players.every((p) => p.online === false && p.joins === 1)).toBe(true);
    const ticks = () => readJson(join(dir, 'stats', 'ticks.json')).ticks as number;
    const first = ticks();
    await sleep(1200);
    expect(ticks()).toBeGreaterThan(first);
  });

  it('saves on the RCON save-all command and broadcasts say to players', async () => {
    const bot = await loginBot(server.host, server.hostPort, 'ChatBot');
    try {
      expect(await rconExec(rcon(server), 'say hello players')).toBe('');
      const chat = await bot.waitForPacket('system_chat');
      expect(JSON.stringify(chat)).toContain('[Server] hello players');
      expect(await rconExec(rcon(server), 'save-all')).toBe('Saved the game');
      expect(readJson(join(dir, 'level.json')).saves).toBe(1);
    } finally {
      await bot.end();
    }
  });

  it('sends the Transfer packet with host and port on RCON transfer', async () => {
    const bot = await loginBot(server.host, server.hostPort, 'MoveBot');
    try {
      expect(await rconExec(rcon(server), 'transfer play.example.net 25570 MoveBot')).toBe(
        'Transferring MoveBot to play.example.net:25570',
      );
      expect(await bot.waitForPacket('transfer')).toEqual({ host: 'play.example.net', port: 25570 });
      expect(await rconExec(rcon(server), 'transfer play.example.net 25570 Nobody')).toBe('No player was found');
    } finally {
      await bot.end();
    }
  });

  it('accepts a login with handshake intent 3 (a transfer) and records it', async () => {
    const bot = await loginBot(server.host, server.hostPort, 'ArrivedBot', { intent: 'transfer' });
    try {
      const file = readPlayers(dir).find((p) => p.name === 'ArrivedBot');
      expect(file).toMatchObject({ online: true, transferred: true });
    } finally {
      await bot.end();
    }
  });

  it('refuses a wrong RCON password with RCON_AUTH_FAILED', async () => {
    const err = await RconClient.connect(rcon(server, 'wrong-password')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('RCON_AUTH_FAILED');
    expect((err as AppError).message).not.toContain('wrong-password');
  });

  it('collects a multi-packet RCON answer by marker and by quiet period, on one connection', async () => {
    const client = await RconClient.connect(rcon(server));
    try {
      const long = await client.exec('repeat 3000 abcdef');
      expect(long).toHaveLength(18_000); // five 4096-byte packets
      expect(long).toBe('abcdef'.repeat(3000));
      expect(await client.exec('list')).toMatch(/^There are 0 of a max of 20 players online/);
      await expect(client.exec('say ' + 'x'.repeat(1500))).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
      expect(await client.exec('help')).toContain('/transfer');
    } finally {
      await client.close();
    }
    expect(await rconExec({ ...rcon(server), responseEnd: 'quiet', quietMs: 200 }, 'repeat 2000 xyz')).toBe('xyz'.repeat(2000));
  });

  it('stops on RCON stop: players kicked and saved, lock released, exit 0', async () => {
    const bot = await loginBot(server.host, server.hostPort, 'StopBot');
    expect(await rconExec(rcon(server), 'stop')).toBe('Stopping the server');
    expect(await bot.ended).toBeTruthy();
    expect(await server.waitForExit(10_000)).toEqual({ exitCode: 0, oomKilled: false });
    expect(existsSync(join(dir, 'session.lock'))).toBe(false);
    expect(readJson(join(dir, 'level.json')).lastSavedAt).not.toBeNull();
    const stopBot = readPlayers(dir).find((p) => p.name === 'StopBot');
    expect(stopBot).toMatchObject({ online: false });
    expect(await server.logs()).toMatch(/All dimensions are saved/);
  });
});

describe('graceful stop and misbehaviour switches', () => {
  it('saves and exits 0 on SIGTERM, keeping the world for the next start', async () => {
    const dir = dataDir();
    const server = await start({}, dir);
    await server.waitForLog(READY);
    const bot = await loginBot(server.host, server.hostPort, 'TermBot');
    const seed = readJson(join(dir, 'level.json')).seed;
    await docker().getContainer(server.id).stop({ t: 10 });
    expect(await server.waitForExit()).toEqual({ exitCode: 0, oomKilled: false });
    await bot.ended;
    expect(existsSync(join(dir, 'session.lock'))).toBe(false);
    expect(await server.logs()).toMatch(/Stopping the server \(SIGTERM\)/);
    const again = await start({}, dir);
    expect(await again.waitForLog(READY)).toContain(`Loading level "world" (seed ${String(seed)})`);
  });

  it('crashes with EXIT_CODE after CRASH_AFTER_SECONDS, leaving session.lock behind', async () => {
    const dir = dataDir();
    const server = await start({ CRASH_AFTER_SECONDS: '1', EXIT_CODE: '42' }, dir);
    expect(await server.waitForExit()).toEqual({ exitCode: 42, oomKilled: false });
    expect(existsSync(join(dir, 'session.lock'))).toBe(true);
  });

  it('is killed by docker stop -t 2 (exit 137) when it ignores SIGTERM', async () => {
    const server = await start({ IGNORE_SIGTERM: 'true' });
    await server.waitForLog(READY);
    const t0 = Date.now();
    await docker().getContainer(server.id).stop({ t: 2 });
    expect(await server.waitForExit()).toEqual({ exitCode: 137, oomKilled: false });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1900);
    expect(await server.logs()).toMatch(/Ignoring SIGTERM/);
  });

  it('NEVER_READY=status answers with players.max 0 and refuses logins; NEVER_READY=listen never opens the port', async () => {
    const [status, listen] = await Promise.all([start({ NEVER_READY: 'status' }), start({ NEVER_READY: 'listen' })]);
    await Promise.all([status.waitForLog(/NEVER_READY=status/), listen.waitForLog(/NEVER_READY=listen/)]);
    expect(await pingStatus(status.host, status.hostPort)).toMatchObject({ max: 0, online: 0 });
    expect(await expectLoginRefused(status.host, status.hostPort, 'EarlyBot')).toMatch(/disconnected before playing/);
    // Docker's proxy accepts the TCP connection, but no status answer ever comes.
    await expect(pingStatus(listen.host, listen.hostPort, 1500)).rejects.toThrow();
    expect(await status.logs()).not.toMatch(READY);
    expect(await listen.logs()).not.toMatch(READY);
  });

  it('opens the port only after STARTUP_DELAY_SECONDS and honours MAX_PLAYERS, MOTD and ACCEPTS_TRANSFERS=false', async () => {
    const server = await start({ STARTUP_DELAY_SECONDS: '2', MAX_PLAYERS: '5', MOTD: 'Delayed world', ACCEPTS_TRANSFERS: 'false' });
    await server.waitForLog(/Preparing spawn area/);
    await expect(pingStatus(server.host, server.hostPort, 1000)).rejects.toThrow();
    await server.waitForLog(READY, 10_000);
    expect(await pingStatus(server.host, server.hostPort)).toMatchObject({ max: 5, motd: 'Delayed world' });
    expect(await expectLoginRefused(server.host, server.hostPort, 'XferBot', { intent: 'transfer' })).toMatch(
      /disconnected before playing/,
    );
    const bot = await loginBot(server.host, server.hostPort, 'PlainBot');
    await bot.end();
  });
});

describe('rcon-client failure modes', () => {
  let silent: Server;
  let silentPort: number;
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    // Accepts connections and never answers: an RCON port behind a stuck server.
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.resume(); // read and drop, so the client's close is seen
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    silentPort = (silent.address() as { port: number }).port;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
  });

  it('times out authentication against a server that never answers, with TIMEOUT', async () => {
    const err = (await RconClient.connect({ host: '127.0.0.1', port: silentPort, password: 'x', connectTimeoutMs: 300 }).catch(
      (e: unknown) => e,
    )) as AppError;
    expect(err.code).toBe('TIMEOUT');
    expect(err.retryable).toBe(true);
  });

  it('reports a refused connection as retryable UPSTREAM_FAILED', async () => {
    const port = await freePort();
    const err = (await RconClient.connect({ host: '127.0.0.1', port, password: 'x' }).catch((e: unknown) => e)) as AppError;
    expect(err.code).toBe('UPSTREAM_FAILED');
    expect(err.retryable).toBe(true);
  });
});
