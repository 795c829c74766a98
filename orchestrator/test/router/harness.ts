// Test harness for router tests: in-process minecraft-protocol backends, a
// router on a random 127.0.0.1 port, raw sockets, and bounded waits. Everything
// created is tracked and closed by closeAll() in afterEach.

import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import mc from 'minecraft-protocol';
import { createLogger } from '../../src/shared/logger.js';
import { parseRouterToml, type RouterFileConfig } from '../../src/router/config.js';
import { Router } from '../../src/router/router.js';
import { StaticResolver } from '../../src/router/static-resolver.js';
import type { BackendResolver, BackendTarget, Player, SessionInfo, SessionReporter, WakeCoordinator } from '../../src/router/resolver.js';
import type { WakeAction } from '../../src/protocol/registry-contract.js';
import { pino } from 'pino';
import type { Clock } from '../../src/router/clock.js';
import type { Logger } from '../../src/shared/logger.js';
import { FrameReader, type Frame } from '../../src/protocol/frame-reader.js';

export const VERSION = '1.20.4';
export const PROTOCOL = 765;

type Closer = () => Promise<void> | void;
const closers: Closer[] = [];

export async function closeAll(): Promise<void> {
  for (const close of closers.splice(0).reverse()) {
    try {
      await close();
    } catch {
      // best effort: keep closing the rest
    }
  }
}

export async function waitUntil(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface McBackend {
  port: number;
  logins: Array<{ username: string; serverHost: string }>;
  close(): Promise<void>;
}

/** A real minecraft-protocol server (offline mode) on 127.0.0.1. */
export function startMcBackend(motd: string, port = 0): Promise<McBackend> {
  return new Promise((resolve, reject) => {
    const server = mc.createServer({ 'online-mode': false, host: '127.0.0.1', port, version: VERSION, motd, maxPlayers: 20 });
    const logins: McBackend['logins'] = [];
    const socketServer = (): Server => (server as unknown as { socketServer: Server }).socketServer;
    server.on('login', (client) => {
      logins.push({ username: client.username, serverHost: (client as unknown as { serverHost: string }).serverHost });
    });
    server.on('error', reject);
    const close = async (): Promise<void> => {
      for (const c of Object.values(server.clients)) c.socket?.destroy();
      await new Promise<void>((r) => {
        socketServer().close(() => r());
        setTimeout(r, 1000);
      });
    };
    closers.push(close);
    server.on('listening', () => resolve({ port: (socketServer().address() as AddressInfo).port, logins, close }));
  });
}

/** A port with nothing listening (bound, then released). */
export async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A raw TCP backend recording every byte it receives. */
export async function startRawBackend(): Promise<{ port: number; received: () => Buffer; connections: number }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  const state = { connections: 0 };
  const server: Server = createServer((s) => {
    state.connections++;
    sockets.add(s);
    s.on('data', (c) => chunks.push(c));
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  closers.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return {
    port: (server.address() as AddressInfo).port,
    received: () => Buffer.concat(chunks),
    get connections() {
      return state.connections;
    },
  };
}

export interface RecordedSessions extends SessionReporter {
  accepted: SessionInfo[];
  denied: Array<{ session: SessionInfo; reason: string }>;
  disconnects: SessionInfo[];
}

export function recordingSessions(): RecordedSessions {
  const r: RecordedSessions = {
    accepted: [],
    denied: [],
    disconnects: [],
    loginAccepted: (s) => void r.accepted.push(s),
    loginDenied: (s, reason) => void r.denied.push({ session: s, reason }),
    disconnected: (s) => void r.disconnects.push(s),
  };
  return r;
}

export interface StartedRouter {
  router: Router;
  port: number;
  config: RouterFileConfig;
}

/** Starts a router from TOML text (defaults relaxed for tests unless the TOML sets them). */
export async function startRouter(
  toml: string,
  extra: {
    resolver?: BackendResolver;
    waker?: WakeCoordinator;
    sessions?: SessionReporter;
    limits?: Partial<RouterFileConfig['limits']>;
    logger?: Logger;
    clock?: Clock;
  } = {},
): Promise<StartedRouter> {
  const parsed = parseRouterToml(toml);
  const config: RouterFileConfig = { ...parsed, limits: { ...parsed.limits, ...extra.limits } };
  const router = new Router({
    config,
    resolver: extra.resolver ?? new StaticResolver(config.routing),
    logger: extra.logger ?? createLogger('router-test', 'silent'),
    ...(extra.waker ? { waker: extra.waker } : {}),
    ...(extra.clock ? { clock: extra.clock } : {}),
    ...(extra.sessions ? { sessions: extra.sessions } : {}),
  });
  const address = await router.listen(0, '127.0.0.1');
  closers.push(() => router.close());
  return { router, port: address.port, config };
}

export interface RawResult {
  frames: Frame[];
  raw: Buffer;
  closed: boolean;
}

/**
 * Opens a raw socket to the router, writes `bytes` (each element one write),
 * and collects what comes back until close, `untilFrames` frames, or timeout.
 */
export function rawExchange(
  port: number,
  writes: Buffer[],
  opts: { untilFrames?: number; timeoutMs?: number; gapMs?: number } = {},
): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    closers.push(() => void socket.destroy());
    const reader = new FrameReader();
    const frames: Frame[] = [];
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ frames, raw: Buffer.concat(chunks), closed });
    };
    const timer = setTimeout(() => finish(false), opts.timeoutMs ?? 3000);
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      try {
        reader.push(c);
        for (let f = reader.next(); f; f = reader.next()) frames.push(f);
      } catch {
        // raw (legacy) answers are not frames
      }
      if (opts.untilFrames !== undefined && frames.length >= opts.untilFrames) finish(false);
    });
    socket.on('connect', async () => {
      for (const w of writes) {
        if (socket.destroyed) return;
        socket.write(w);
        if (opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
      }
    });
  });
}

export interface LoginOutcome {
  ended: string;
  disconnectReason?: string;
}

/** Logs in with the real minecraft-protocol client; resolves when the client ends or logs in. */
export function mcLogin(
  port: number,
  username: string,
  opts: { fakeHost?: string; waitForBackend?: McBackend; timeoutMs?: number } = {},
): Promise<LoginOutcome> {
  return new Promise((resolve) => {
    const client = mc.createClient({
      host: '127.0.0.1',
      port,
      username,
      version: VERSION,
      auth: 'offline',
      ...(opts.fakeHost ? { fakeHost: opts.fakeHost } : {}),
      hideErrors: true,
    });
    closers.push(() => client.end());
    let disconnectReason: string | undefined;
    let done = false;
    const finish = (ended: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(poll);
      client.end();
      resolve(disconnectReason === undefined ? { ended } : { ended, disconnectReason });
    };
    const timer = setTimeout(() => finish('timeout'), opts.timeoutMs ?? 8000);
    const poll = setInterval(() => {
      if (opts.waitForBackend?.logins.some((l) => l.username === username)) finish('backend-login');
    }, 20);
    client.on('disconnect', (p: { reason: string }) => {
      disconnectReason = p.reason;
    });
    client.on('error', () => undefined);
    client.on('end', () => finish('end'));
  });
}

/** A wake coordinator from plain functions (unset ones resolve at once), recording what it was asked. */
export function fakeWakes(parts: Partial<WakeCoordinator> = {}): WakeCoordinator & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    wake: (id: string, action: WakeAction | null, signal: AbortSignal) => (
      calls.push(`wake ${id} ${action ?? 'wait'}`),
      parts.wake ? parts.wake(id, action, signal) : Promise.resolve()
    ),
    request: (id: string, action: WakeAction) => (
      calls.push(`${action} ${id}`),
      parts.request ? parts.request(id, action) : Promise.resolve()
    ),
    joinGroup: (
      groupId: string,
      name: string,
      player: Player,
      signal: AbortSignal,
      onInstance?: (instanceId: string, paused?: BackendTarget) => void,
    ): Promise<BackendTarget> => {
      calls.push(`join ${groupId} ${player.name}`);
      return parts.joinGroup ? parts.joinGroup(groupId, name, player, signal, onInstance) : Promise.reject(new Error('no join'));
    },
    expectedStartMs: (id: string) => (parts.expectedStartMs ? parts.expectedStartMs(id) : null),
    returnWhenOnline: (player: Player, id: string, signal: AbortSignal) => {
      calls.push(`return ${player.name} ${id}`);
      parts.returnWhenOnline?.(player, id, signal);
    },
  };
}

/** A real pino logger that keeps every line (parsed JSON) for assertions on the log contract. */
export function recordingLogger(level = 'debug'): Logger & { lines: Array<Record<string, unknown> & { level: number; msg: string }> } {
  const lines: Array<Record<string, unknown> & { level: number; msg: string }> = [];
  const logger = pino({ level }, { write: (text: string) => void lines.push(JSON.parse(text) as (typeof lines)[number]) });
  return Object.assign(logger, { lines });
}
