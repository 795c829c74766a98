// The data-path measurements of `npm run bench:router`, run the same way
// against every proxy (and a direct connection): bulk bytes/s after a login
// handshake, small-packet round trips through an echo backend, and N logged-in
// players (RSS per idle connection, then 20 small packets a second each for a
// bounded time: CPU seconds of the proxy process, dropped connections).
// Only 127.0.0.1; every loop is bounded.

import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { NextState, writeHandshake, writeLoginStart } from '../src/protocol/packets.js';
import { until } from '../test/support/router-stack.js';
import { cpuSeconds, spawnWithFdLimit, type Cleanup, type MemorySample, type ProxyProcess } from './router-procs.js';

const SINK_ENTRY = fileURLToPath(new URL('./router-sink.ts', import.meta.url));

const PROTOCOL = 767;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A small play-state frame (length 23: id + 22 bytes), about a movement packet. */
const SMALL_PACKET = Buffer.concat([Buffer.from([23, 0x1a]), Buffer.alloc(22, 1)]);
const PACKETS_PER_SECOND = 20;
/** The load loop's tick: each tick writes to 1/SLICES of the players, so each gets 20 packets/s. */
const TICK_MS = 5;
const SLICES = 1000 / PACKETS_PER_SECOND / TICK_MS;

export interface SinkStats {
  received: number;
  accepted: number;
  open: number;
}

export interface Sink {
  port: number;
  stats(): Promise<SinkStats>;
}

export type SinkMode = { mode: 'count' } | { mode: 'echo' } | { mode: 'source'; bytes: number };

/** A backend process that counts bytes, sends every byte back, or answers a login with `bytes` bytes (router-sink.ts). */
export async function startSink(kind: SinkMode, fds: number, cleanups: Cleanup[]): Promise<Sink> {
  const args = kind.mode === 'source' ? ['source', String(kind.bytes)] : [kind.mode];
  const child = spawnWithFdLimit(fds, process.execPath, [...process.execArgv, SINK_ENTRY, ...args], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  cleanups.push(() => {
    process.removeListener('exit', kill);
    kill();
  });
  const waiting: Array<(s: SinkStats) => void> = [];
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('sink process did not start within 20 s')), 20_000);
    child.once('exit', (code) => reject(new Error(`sink process exited (${code})`)));
    child.on('message', (m: { port?: number } & Partial<SinkStats>) => {
      if (m.port !== undefined) {
        clearTimeout(timer);
        resolve(m.port);
      } else waiting.shift()?.(m as SinkStats);
    });
  });
  return {
    port,
    stats: () =>
      new Promise<SinkStats>((resolve) => {
        waiting.push(resolve);
        child.send('stats');
      }),
  };
}

/** Handshake + Login Start, as a player sends before any play traffic. */
export function loginPreamble(address: string, name: string): Buffer {
  return Buffer.concat([
    writeHandshake({ protocolVersion: PROTOCOL, serverAddress: address, serverPort: 25565, nextState: NextState.Login }),
    writeLoginStart({ name: name.slice(0, 16), uuid: '00000000-0000-0000-0000-000000000001' }, PROTOCOL),
  ]);
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, noDelay: true }, () => {
      s.removeListener('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** Bytes/s from a logged-in client to the counting sink (`bytes` in 64 KiB writes, backpressure respected). */
export async function throughput(port: number, sink: Sink, bytes: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024, 7);
  const { accepted, received: base0 } = await sink.stats();
  const socket = await open(port);
  let failure: Error | undefined;
  socket.on('error', (err) => (failure = err));
  const preamble = loginPreamble('bench.local', 'Bulk');
  socket.write(preamble);
  // A client sends play traffic only after the backend answered the login: wait for the backend connection.
  await until(
    'backend connection',
    async () => {
      const st = await sink.stats();
      return st.accepted > accepted && st.received - base0 >= preamble.length;
    },
    10_000,
    1,
  );
  const base = (await sink.stats()).received;
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  const t0 = process.hrtime.bigint();
  let sent = 0;
  while (sent < bytes) {
    if (failure) throw new Error(`throughput connection to ${port} failed after ${sent} bytes: ${failure.message}`);
    sent += chunk.length;
    if (!socket.write(chunk)) await Promise.race([new Promise((r) => socket.once('drain', r)), closed]);
  }
  await until('sink received everything', async () => (await sink.stats()).received - base >= sent, 120_000, 1);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  socket.destroy();
  return sent / seconds;
}

/**
 * Bytes/s from the source backend to a logged-in client: the login goes up, `bytes` come down
 * (the direction Minecraft's bulk data — chunks — takes). Timed from the login write to the last byte.
 */
export async function download(port: number, bytes: number): Promise<number> {
  const socket = await open(port);
  try {
    const done = new Promise<void>((resolve, reject) => {
      let got = 0;
      const finish = (err?: Error): void => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const timer = setTimeout(() => finish(new Error(`download through ${port}: ${got} of ${bytes} bytes within 120 s`)), 120_000);
      socket.on('data', (b: Buffer) => {
        got += b.length;
        if (got >= bytes) finish();
      });
      socket.once('error', finish);
      socket.once('close', () => {
        if (got < bytes) finish(new Error(`download through ${port} closed after ${got} of ${bytes} bytes`));
      });
    });
    const t0 = process.hrtime.bigint();
    socket.write(loginPreamble('source.bench', 'Down'));
    await done;
    return bytes / (Number(process.hrtime.bigint() - t0) / 1e9);
  } finally {
    socket.destroy();
  }
}

export interface BulkTarget {
  name: string;
  /** Frontends: to the counting sink (upload) and from the source (download). */
  upPort: number;
  downPort: number;
  /** The proxy process (CPU per byte); none for a direct connection. */
  pid?: number;
}

export interface BulkSamples {
  /** Bytes/s per round. */
  up: number[];
  down: number[];
  /** Proxy CPU seconds (all threads) per GiB moved, per round. */
  upCpuPerGiB: number[];
  downCpuPerGiB: number[];
}

/**
 * `rounds` rounds of one upload and one download of `bytes` through every target, the targets
 * alternating (each round starts one further along, so none is always first after a pause):
 * on shared cores a single transfer swings by 2×, a ratio is only read from the same round.
 */
export async function bulkRounds(
  targets: BulkTarget[],
  sink: Sink,
  bytes: number,
  rounds: number,
  log: (line: string) => void,
): Promise<Map<string, BulkSamples>> {
  const out = new Map(targets.map((t) => [t.name, { up: [], down: [], upCpuPerGiB: [], downCpuPerGiB: [] } as BulkSamples]));
  const GiB = 1024 * 1024 * 1024;
  const measured = async (pid: number | undefined, run: () => Promise<number>): Promise<[number, number]> => {
    const cpu0 = pid === undefined ? 0 : cpuSeconds(pid);
    const bps = await run();
    return [bps, pid === undefined ? Number.NaN : (cpuSeconds(pid) - cpu0) / (bytes / GiB)];
  };
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(round + k) % targets.length]!;
      const s = out.get(t.name)!;
      const [up, upCpu] = await measured(t.pid, () => throughput(t.upPort, sink, bytes));
      const [down, downCpu] = await measured(t.pid, () => download(t.downPort, bytes));
      s.up.push(up);
      s.upCpuPerGiB.push(upCpu);
      s.down.push(down);
      s.downCpuPerGiB.push(downCpu);
      log(`bulk round ${round + 1}/${rounds} ${t.name}: up ${(up / 2 ** 20).toFixed(0)} MiB/s, down ${(down / 2 ** 20).toFixed(0)} MiB/s`);
    }
  }
  return out;
}

/** Round trips (ms) of one small packet through `port` to the echo sink and back, one at a time. */
export async function smallPacketRtts(port: number, address: string, samples: number): Promise<number[]> {
  const socket = await open(port);
  let pending = 0;
  let wake: (() => void) | undefined;
  socket.on('data', (b: Buffer) => {
    pending -= b.length;
    if (pending <= 0) wake?.();
  });
  socket.on('error', () => undefined);
  const exchange = async (bytes: Buffer): Promise<number> => {
    const t0 = process.hrtime.bigint();
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no echo through port ${port} within 5 s`)), 5000);
      wake = () => (clearTimeout(timer), resolve());
    });
    pending += bytes.length;
    socket.write(bytes);
    await done;
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  try {
    await exchange(loginPreamble(address, 'Rtt')); // the echo of the login: the backend is connected
    for (let i = 0; i < 50; i++) await exchange(SMALL_PACKET); // warm-up (JIT, socket buffers)
    const out: number[] = [];
    for (let i = 0; i < samples; i++) out.push(await exchange(SMALL_PACKET));
    return out;
  } finally {
    socket.destroy();
  }
}

export interface PlayersResult {
  players: number;
  /** RSS of the proxy before connecting, KiB. */
  baseRssKb: number;
  /**
   * The router only (NaN for HAProxy, which has no garbage collector): the same marginal cost
   * measured right after two full GCs in the router — RSS, and V8 heap used + external memory.
   */
  gcRssKbPerConnectionMarginal: number;
  heapKbPerConnectionMarginal: number;
  /**
   * Marginal KiB per connection of each quarter (0 → N/4 → N/2 → 3N/4 → N): RSS as found, and for
   * the router RSS after full GCs — where V8's one-off heap growth lands (printed, not a goal).
   */
  quarterRssKb: number[];
  quarterGcRssKb: number[];
  /** (RSS with every player connected and idle − base) / players, KiB; right after connecting and after a 5 s settle. */
  idleKbPerConnection: number;
  idleKbPerConnectionSettled: number;
  /**
   * (RSS at N − RSS at N/2) / (N/2), KiB: what one more idle connection costs, without the one-off
   * growth of the heap (V8's young generation grows by tens of MiB under any allocation burst).
   */
  idleKbPerConnectionMarginal: number;
  loadSeconds: number;
  packetsSent: number;
  /** Proxy CPU seconds during the load phase. */
  cpuSeconds: number;
  dropped: number;
  bytesMissing: number;
}

/**
 * N players log in through `proxyPort` to the counting sink and stay idle (RSS measured), then each
 * sends 20 small packets a second for `seconds` (proxy CPU measured; 0 skips the load); a player
 * whose socket closes before the end, or whose login never reached the sink, is a dropped
 * connection. `collect`: each memory sample runs full GCs in the router first — in a pass of its
 * own, without the load: forced GCs at low allocation rates shrink V8's young generation, which
 * changed the load's CPU per packet when both ran on one process (measured: 2-4× the GC time).
 */
export async function players(
  proxy: ProxyProcess,
  proxyPort: number,
  sink: Sink,
  count: number,
  seconds: number,
  log: (line: string) => void,
  collect = false,
): Promise<PlayersResult> {
  const proxyPid = proxy.pid;
  await sleep(1000);
  const sockets: Socket[] = [];
  let dropped = 0;
  let ending = false;
  const { accepted: acceptedBefore, received: receivedBefore } = await sink.stats();
  const preambleBytes = [] as number[];
  const reached = async () => (await sink.stats()).accepted - acceptedBefore;
  const half = Math.floor(count / 2);
  /** Connection counts at which memory is sampled: 0, the quarters, N. */
  const marks = [0, Math.floor(count / 4), half, Math.floor((3 * count) / 4), count];
  const samples: MemorySample[] = [await proxy.memory(collect)];
  const baseRssKb = samples[0]!.rssKb;
  const sampleAt = async (n: number): Promise<void> => {
    await until(`${n} backend connections`, async () => (await reached()) >= sockets.length, 60_000, 50).catch(() => false);
    await sleep(500);
    samples.push(await proxy.memory(collect));
  };
  try {
    for (let i = 0, size = 0; i < count; i += size) {
      const next = marks.find((m) => m > i) ?? count;
      size = Math.min(250, next - i);
      if (i > 0 && marks.includes(i) && samples.length < marks.indexOf(i) + 1) await sampleAt(i);
      const batch = await Promise.allSettled(Array.from({ length: size }, () => open(proxyPort)));
      for (const [k, r] of batch.entries()) {
        if (r.status === 'rejected') {
          dropped += 1;
          continue;
        }
        const s = r.value;
        s.on('error', () => undefined);
        s.on('close', () => (ending ? undefined : (dropped += 1)));
        const preamble = loginPreamble('bench.local', `P${i + k}`);
        preambleBytes.push(preamble.length);
        s.write(preamble);
        sockets.push(s);
      }
    }
    const connected = await until(
      `${sockets.length} backend connections`,
      async () => (await reached()) >= sockets.length,
      60_000,
      50,
    ).catch(() => false);
    if (!connected) log(`only ${await reached()} of ${sockets.length} logins reached the sink`);
    dropped += Math.max(0, sockets.length - (await reached()));
    await sleep(500);
    const full = await proxy.memory(collect);
    samples.push(full);
    const halfMemory = samples[2] ?? { rssKb: Number.NaN };
    const idleKb = (full.rssKb - baseRssKb) / count;
    const perAdded = (a: number | undefined, b: number | undefined) =>
      a === undefined || b === undefined ? Number.NaN : (a - b) / (count - half);
    const quarters = (kb: (m: MemorySample) => number | undefined): number[] =>
      samples.slice(1).map((m, k) => {
        const [a, b] = [kb(m), kb(samples[k]!)];
        return a === undefined || b === undefined ? Number.NaN : (a - b) / (marks[k + 1]! - marks[k]!);
      });
    await sleep(5000);
    const settledKb = ((await proxy.memory(collect)).rssKb - baseRssKb) / count;

    const cpu0 = cpuSeconds(proxyPid);
    const t0 = Date.now();
    // Bounded by the wall clock: when the generator cannot keep 20/s (it shares the cores with the
    // proxy and the sink), it sends as fast as it can until the end and the achieved rate is printed.
    const endAt = t0 + seconds * 1000;
    let sent = 0;
    for (let tick = 0; Date.now() < endAt; tick++) {
      const slice = tick % SLICES;
      for (let i = slice; i < sockets.length; i += SLICES) {
        const s = sockets[i]!;
        if (s.destroyed) continue;
        s.write(SMALL_PACKET);
        sent += 1;
      }
      // Keep the schedule by the wall clock: a late tick shortens the next wait instead of slipping.
      const due = t0 + (tick + 1) * TICK_MS;
      await sleep(Math.max(0, due - Date.now()));
    }
    const expected = receivedBefore + preambleBytes.reduce((a, b) => a + b, 0) + sent * SMALL_PACKET.length;
    const loadSeconds = (Date.now() - t0) / 1000;
    await until('the sink received the load', async () => (await sink.stats()).received >= expected, 15_000, 20).catch(() => false);
    const cpu = cpuSeconds(proxyPid) - cpu0;
    return {
      players: count,
      baseRssKb,
      idleKbPerConnection: idleKb,
      idleKbPerConnectionSettled: settledKb,
      idleKbPerConnectionMarginal: perAdded(full.rssKb, halfMemory.rssKb),
      gcRssKbPerConnectionMarginal: perAdded(full.gcRssKb, halfMemory.gcRssKb),
      heapKbPerConnectionMarginal: perAdded(full.heapKb, halfMemory.heapKb),
      quarterRssKb: quarters((m) => m.rssKb),
      quarterGcRssKb: quarters((m) => m.gcRssKb),
      loadSeconds,
      packetsSent: sent,
      cpuSeconds: cpu,
      dropped,
      bytesMissing: Math.max(0, expected - (await sink.stats()).received),
    };
  } finally {
    ending = true;
    for (const s of sockets) s.destroy();
    await until('players closed at the sink', async () => (await sink.stats()).open === 0, 20_000, 50).catch(() => undefined);
  }
}
