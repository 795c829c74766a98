// The Minecraft-protocol test server image (test-images/mc-server/image.ts) and helpers
// to run it and talk to it: start a container, Server List Ping, log a
// minecraft-protocol bot in. Every wait is bounded.

import net from 'node:net';
import mc from 'minecraft-protocol';
import { DEFAULT_VERSION } from '../../test-images/mc-server/config.js';
import { docker } from './docker.js';
import { freePort } from './registry.js';
import { isPortInUse } from '../../src/agent/docker-runtime.js';
import { MC_RCON_PORT, MC_SERVER_PORT, mcServerImageTag } from '../../test-images/mc-server/image.js';

export { DEFAULT_VERSION };
export { MC_RCON_PORT, mcServerImage, mcServerImageTag } from '../../test-images/mc-server/image.js';

export interface McServerContainerOptions {
  labels: Record<string, string>;
  env?: Record<string, string>;
  /** Host port for the game port on 127.0.0.1; a free one when omitted. */
  hostPort?: number;
  /** Host port for RCON on 127.0.0.1; a free one when omitted. */
  rconHostPort?: number;
  /** Host directory bind-mounted at /data. */
  dataDir?: string;
  name?: string;
}

export interface McServerContainer {
  id: string;
  host: string;
  hostPort: number;
  rconHostPort: number;
  logs(): Promise<string>;
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
  waitForExit(timeoutMs?: number): Promise<{ exitCode: number; oomKilled: boolean }>;
  remove(): Promise<void>;
}

/** Docker's multiplexed log stream (no TTY) as text: 8-byte frame headers stripped. */
export function demuxDockerLogs(raw: Buffer): string {
  const parts: Buffer[] = [];
  let off = 0;
  while (off + 8 <= raw.length) {
    const size = raw.readUInt32BE(off + 4);
    parts.push(raw.subarray(off + 8, off + 8 + size));
    off += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Tries with other ports when ports it picked itself were taken before Docker published them (two test files can be handed the same free port). */
const PORT_ATTEMPTS = 3;

export async function startMcServerContainer(options: McServerContainerOptions): Promise<McServerContainer> {
  const picked = options.hostPort === undefined || options.rconHostPort === undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      if (!picked || attempt >= PORT_ATTEMPTS || !isPortInUse(err)) throw err;
    }
  }
}

async function startOnce(options: McServerContainerOptions): Promise<McServerContainer> {
  const hostPort = options.hostPort ?? (await freePort());
  const rconHostPort = options.rconHostPort ?? (await freePort());
  const gamePort = Number(options.env?.SERVER_PORT ?? MC_SERVER_PORT);
  const rconPort = Number(options.env?.RCON_PORT ?? MC_RCON_PORT);
  const container = await docker().createContainer({
    name: options.name,
    Image: mcServerImageTag(),
    Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
    Labels: options.labels,
    ExposedPorts: { [`${gamePort}/tcp`]: {}, [`${rconPort}/tcp`]: {} },
    HostConfig: {
      PortBindings: {
        [`${gamePort}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: String(hostPort) }],
        [`${rconPort}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: String(rconHostPort) }],
      },
      Binds: options.dataDir ? [`${options.dataDir}:/data`] : [],
      RestartPolicy: { Name: 'no' },
    },
  });
  try {
    await container.start();
  } catch (err) {
    await container.remove({ force: true }).catch(() => undefined); // not left behind for a retry or the next test
    throw err;
  }
  const logs = async () => demuxDockerLogs((await container.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer);
  return {
    id: container.id,
    host: '127.0.0.1',
    hostPort,
    rconHostPort,
    logs,
    async waitForLog(pattern, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const text = await logs();
        if (pattern.test(text)) return text;
        if (Date.now() > deadline) throw new Error(`no log line matching ${pattern} within ${timeoutMs} ms; logs:\n${text}`);
        await sleep(150);
      }
    },
    async waitForExit(timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const state = (await container.inspect()).State;
        if (!state.Running && state.Status !== 'created') return { exitCode: state.ExitCode, oomKilled: state.OOMKilled };
        if (Date.now() > deadline) throw new Error(`container did not exit within ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    async remove() {
      await container.remove({ force: true, v: true }).catch(() => undefined);
    },
  };
}

export interface StatusAnswer {
  online: number;
  max: number;
  motd: string;
  protocol: number;
  versionName: string;
}

/** One Server List Ping (status + pong), bounded by timeoutMs. */
export async function pingStatus(host: string, port: number, timeoutMs = 3000): Promise<StatusAnswer> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`status ping to ${host}:${port} timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const res = (await Promise.race([
      mc.ping({ host, port, version: DEFAULT_VERSION, closeTimeout: timeoutMs, noPongTimeout: timeoutMs }),
      timeout,
    ])) as mc.NewPingResult;
    const d = res.description;
    return {
      online: res.players.online,
      max: res.players.max,
      motd: typeof d === 'string' ? d : (d.text ?? ''),
      protocol: res.version.protocol,
      versionName: res.version.name,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Pings until `accept` says yes; returns that answer. Failed pings count as "not yet". */
export async function waitForStatus(
  host: string,
  port: number,
  accept: (s: StatusAnswer) => boolean,
  timeoutMs = 15_000,
): Promise<StatusAnswer> {
  const deadline = Date.now() + timeoutMs;
  let last: StatusAnswer | Error | undefined;
  for (;;) {
    try {
      last = await pingStatus(host, port, 2000);
      if (accept(last)) return last;
    } catch (err) {
      last = err as Error;
    }
    if (Date.now() > deadline)
      throw new Error(
        `status of ${host}:${port} not as expected within ${timeoutMs} ms; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
      );
    await sleep(200);
  }
}

export interface ReceivedPacket {
  name: string;
  data: Record<string, unknown>;
}

export interface Bot {
  client: mc.Client;
  username: string;
  /** Resolves with the first packet of that name (already received or arriving within timeoutMs). */
  waitForPacket(name: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the reason when the connection ends. */
  ended: Promise<string>;
  end(): Promise<void>;
}

export interface LoginOptions {
  timeoutMs?: number;
  version?: string;
  /** `transfer` logs in with handshake intent 3, as a client following a Transfer packet does. */
  intent?: 'login' | 'transfer';
  /** The address the player typed (the handshake's server address, for forced hosts); the TCP connection still goes to host:port. */
  virtualHost?: string;
}

/** Noisy world packets are not kept; everything else is, for waitForPacket. */
const IGNORED_PACKETS = new Set(['keep_alive', 'map_chunk', 'update_light', 'registry_data', 'tags']);

/** Logs an offline-mode minecraft-protocol client in; resolves once it is in the play state. */
export async function loginBot(host: string, port: number, username: string, options: LoginOptions = {}): Promise<Bot> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const client = mc.createClient({
    host: options.virtualHost ?? host,
    port,
    username,
    version: options.version ?? DEFAULT_VERSION,
    auth: 'offline',
    hideErrors: true,
    ...(options.virtualHost ? { connect: (c: mc.Client) => c.setSocket(net.connect(port, host)) } : {}),
  });
  if (options.intent === 'transfer') {
    const write = client.write.bind(client);
    client.write = (name: string, params: unknown) =>
      write(name, name === 'set_protocol' ? { ...(params as object), nextState: 3 } : params);
  }
  const received: ReceivedPacket[] = [];
  client.on('packet', (data: Record<string, unknown>, meta: mc.PacketMeta) => {
    if (!IGNORED_PACKETS.has(meta.name) && received.length < 500) received.push({ name: meta.name, data });
  });
  const ended = new Promise<string>((resolve) => client.once('end', (reason: string) => resolve(String(reason ?? ''))));
  client.on('error', () => undefined); // surfaced through `ended` / the login rejection

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.end();
      reject(new Error(`${username} did not reach the play state on ${host}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    client.once('login', () => {
      clearTimeout(timer);
      resolve();
    });
    void ended.then((reason) => {
      clearTimeout(timer);
      const kick = received.find((p) => p.name === 'disconnect' || p.name === 'kick_disconnect');
      reject(new Error(`${username} was disconnected before playing: ${reason}${kick ? ` (${JSON.stringify(kick.data.reason)})` : ''}`));
    });
  });

  return {
    client,
    username,
    ended,
    async waitForPacket(name, waitMs = 5000) {
      const deadline = Date.now() + waitMs;
      for (;;) {
        const hit = received.find((p) => p.name === name);
        if (hit) return hit.data;
        if (Date.now() > deadline)
          throw new Error(
            `${username} received no ${name} packet within ${waitMs} ms (got: ${[...new Set(received.map((p) => p.name))].join(', ')})`,
          );
        await sleep(50);
      }
    },
    async end() {
      if (client.ended) return;
      client.end();
      await Promise.race([ended, sleep(2000)]);
    },
  };
}

/** Like loginBot, but resolves with the disconnect reason when the server refuses the login. */
export async function expectLoginRefused(host: string, port: number, username: string, options: LoginOptions = {}): Promise<string> {
  try {
    const bot = await loginBot(host, port, username, options);
    await bot.end();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${username} was expected to be refused but logged in`);
}
