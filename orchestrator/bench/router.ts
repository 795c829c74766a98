// `npm run bench:router`: the router against a direct loopback connection to the
// same backend, in one bounded run, printed as ratios. (1) bytes/s piped after
// a login handshake, (2) connection setup (status ping round trip) p50/p99,
// (3) 5,000 concurrent idle connections: the router child process's RSS per
// connection (scaled down, with a printed note, when `ulimit -n` is too low),
// (4) wake latency from a paused instance (connect → Login Success packet
// through the router) vs the raw `docker unpause` + first ping.
// Everything it starts (router process, servers, containers) is cleaned up.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import mc from 'minecraft-protocol';
import { NextState, writeHandshake, writeLoginStart } from '../src/protocol/packets.js';
import { docker } from '../test/support/docker.js';
import { DEFAULT_VERSION, pingStatus, startMcServerContainer, waitForStatus } from '../test/support/mc-server.js';
import { freePort } from '../test/support/registry.js';
import { startStack, until } from '../test/support/router-stack.js';
import { benchConfig } from './bench-config.js';

const ROUTER_ENTRY = fileURLToPath(new URL('../src/router/index.ts', import.meta.url));
const PAYLOAD_BYTES = benchConfig.routerPayloadBytes;
const PINGS = benchConfig.routerPings;
const IDLE_WANTED = benchConfig.routerIdleConnections;
/** Descriptors kept free for everything else (containers' clients, HTTP, the echo server, pings). */
const FD_HEADROOM = 1000;
const WAKES = benchConfig.routerWakes;
const PROTOCOL = 767;

const cleanups: Array<() => Promise<void> | void> = [];
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const fmt = (n: number, d = 2): string => n.toFixed(d);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The soft RLIMIT_NOFILE of this process (the router child inherits it); undefined when unknown. */
function openFilesSoftLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (m) return m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
  } catch {
    // not Linux: fall through to the shell
  }
  const out = spawnSync('sh', ['-c', 'ulimit -Sn'], { encoding: 'utf8' }).stdout?.trim();
  if (out === 'unlimited') return Number.POSITIVE_INFINITY;
  return out && /^\d+$/.test(out) ? Number(out) : undefined;
}

/**
 * Each idle connection costs two descriptors in this process (client socket + the sink's
 * accepted one) and two in the router child (player + backend socket): scale down to fit
 * the soft limit, with a note, instead of failing half way with EMFILE.
 */
function idleConnectionsFor(wanted: number): { count: number; note?: string } {
  const limit = openFilesSoftLimit();
  if (limit === undefined || !Number.isFinite(limit)) return { count: wanted };
  const fits = Math.max(0, Math.floor((limit - FD_HEADROOM) / 2));
  if (wanted <= fits) return { count: wanted };
  return { count: fits, note: `ulimit -n is ${limit}: ${wanted} idle connections need about ${2 * wanted + FD_HEADROOM} descriptors per process; measuring ${fits} instead (raise it with \`ulimit -n ${2 * wanted + FD_HEADROOM}\`)` };
}
const IDLE_PLAN = idleConnectionsFor(IDLE_WANTED);
const IDLE = IDLE_PLAN.count;

/** A backend that swallows bytes and counts them (the throughput and idle target). */
async function startSink(): Promise<{ port: number; received: () => number; connections: () => number; accepted: () => number; server: Server }> {
  let received = 0;
  let accepted = 0;
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    accepted += 1;
    sockets.add(s);
    s.on('data', (b: Buffer) => (received += b.length));
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  server.maxConnections = 100_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => {
    for (const s of sockets) s.destroy();
    server.close(() => r());
  }));
  return { port: (server.address() as { port: number }).port, received: () => received, connections: () => sockets.size, accepted: () => accepted, server };
}

function loginPreamble(port: number, name: string): Buffer {
  return Buffer.concat([writeHandshake({ protocolVersion: PROTOCOL, serverAddress: 'bench.local', serverPort: port, nextState: NextState.Login }), writeLoginStart({ name, uuid: '00000000-0000-0000-0000-000000000001' }, PROTOCOL)]);
}

/** Router as its own process (static mode: no orchestrator), so its memory is measured alone. */
async function startRouterProcess(toml: string): Promise<{ port: number; pid: number; child: ChildProcess }> {
  const dir = mkdtempSync(join(tmpdir(), 'ec-bench-router-'));
  const port = await freePort();
  writeFileSync(join(dir, 'router.toml'), `bind = "127.0.0.1:${port}"\n${toml}`);
  const child = spawn(process.execPath, ['--import', 'tsx', ROUTER_ENTRY], {
    env: { PATH: benchConfig.path, ENDERCLOUD_ROUTER_CONFIG: join(dir, 'router.toml'), ENDERCLOUD_ROUTER_ID: 'bench' },
    stdio: ['ignore', benchConfig.routerLog ? 'inherit' : 'ignore', 'inherit'],
  });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill); // never leave a router behind, even when the run is aborted
  cleanups.push(() => {
    kill();
    rmSync(dir, { recursive: true, force: true });
  });
  await until('router process listening', () => new Promise<boolean>((r) => {
    const s = connect({ host: '127.0.0.1', port }, () => (s.destroy(), r(true)));
    s.on('error', () => r(false));
  }), 20_000, 100);
  return { port, pid: child.pid!, child };
}

const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

async function throughput(port: number, sink: Awaited<ReturnType<typeof startSink>>): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024, 7);
  const conns = sink.accepted();
  const socket = connect({ host: '127.0.0.1', port });
  let failure: Error | undefined;
  socket.on('error', (err) => (failure = err));
  await new Promise<void>((r) => socket.once('connect', () => r()));
  // A client sends play traffic only after the backend answered the login: wait for the backend connection.
  const preamble = loginPreamble(port, 'Bulk');
  const base0 = sink.received();
  socket.write(preamble);
  await until('backend connection', () => sink.accepted() > conns && sink.received() - base0 >= preamble.length, 10_000, 1);
  const base = sink.received();
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  const started = process.hrtime.bigint();
  let sent = 0;
  while (sent < PAYLOAD_BYTES) {
    if (failure) throw new Error(`throughput connection to ${port} failed after ${sent} bytes: ${failure.message}`);
    sent += chunk.length;
    if (!socket.write(chunk)) await Promise.race([new Promise((r) => socket.once('drain', r)), closed]);
  }
  await until('sink received everything', () => sink.received() - base >= sent, 120_000, 2);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  socket.destroy();
  return sent / seconds;
}

async function pingTimes(port: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < PINGS; i++) {
    const t0 = performance.now();
    await mc.ping({ host: '127.0.0.1', port, version: DEFAULT_VERSION, closeTimeout: 3000, noPongTimeout: 3000 });
    out.push(performance.now() - t0);
  }
  return out;
}

async function idleMemory(routerPid: number, routerPort: number, sink: Awaited<ReturnType<typeof startSink>>): Promise<{ perConnKb: number; opened: number }> {
  if (IDLE === 0) return { perConnKb: Number.NaN, opened: 0 };
  await sleep(500);
  const base = rssKb(routerPid);
  const sockets: Socket[] = [];
  cleanups.push(() => sockets.forEach((s) => s.destroy()));
  const startConns = sink.accepted();
  for (let i = 0; i < IDLE; i += 250) {
    await Promise.all(Array.from({ length: Math.min(250, IDLE - i) }, (_, k) => new Promise<void>((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port: routerPort }, () => {
        s.write(loginPreamble(routerPort, `Idle${(i + k) % 100_000}`.slice(0, 16)));
        resolve();
      });
      s.on('error', reject);
      s.on('close', () => s.removeAllListeners('error').on('error', () => undefined));
      sockets.push(s);
    })));
  }
  await until(`${IDLE} backend connections`, () => sink.accepted() - startConns >= IDLE, 60_000, 50);
  await sleep(1000);
  const after = rssKb(routerPid);
  for (const s of sockets) s.destroy();
  return { perConnKb: (after - base) / IDLE, opened: IDLE };
}

/** Milliseconds from connecting to the Login Success packet (the end of the login state). */
async function loginSuccessMs(host: string, port: number, username: string, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  const client = mc.createClient({ host, port, username, version: DEFAULT_VERSION, auth: 'offline', hideErrors: true });
  client.on('error', () => undefined);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${username}: no Login Success within ${timeoutMs} ms`)), timeoutMs);
      let refusal = '';
      client.on('packet', (data: { reason?: unknown }, meta: mc.PacketMeta) => {
        if (meta.name === 'disconnect') refusal = ` (${JSON.stringify(data.reason)})`;
        if (meta.state === 'login' && meta.name === 'success') {
          clearTimeout(timer);
          resolve();
        }
      });
      client.once('end', (reason: string) => {
        clearTimeout(timer);
        reject(new Error(`${username} ended before Login Success: ${String(reason)}${refusal}`));
      });
    });
    return performance.now() - t0;
  } finally {
    client.end();
  }
}

async function wakeLatency(): Promise<{ routed: number[]; warm: number[]; seen: number[]; raw: number[] }> {
  const stack = await startStack('bench-rtr');
  cleanups.push(() => stack.close());
  const inst = await stack.createInstance(`${stack.run}-sleepy`);
  const router = await stack.startRouter(`try = ["s"]\n[servers]\ns = "instance:${inst.id}"\n`);
  const routed: number[] = [];
  const warm: number[] = [];
  const seen: number[] = [];
  const raw: number[] = [];
  const pause = async () => {
    const r = await stack.api('POST', `/api/v1/instances/${inst.id}/pause`);
    if (r.status !== 202 && r.status !== 200) throw new Error(`pause answered ${r.status}: ${JSON.stringify(r.body)}`);
    await stack.waitForState(inst.id, 'paused');
    await until('router sees Paused', () => router.parts.registry!.get(inst.id)?.status === 'Paused', 5000);
  };
  // One unmeasured round first: the first login into a fresh container pays its warm-up.
  for (let i = 0; i <= WAKES; i++) {
    await pause();
    const registry = router.parts.registry!;
    const t0 = performance.now();
    let runningAfter = Number.NaN;
    const unsubscribe = registry.subscribe(() => {
      if (Number.isNaN(runningAfter) && registry.get(inst.id)?.status === 'Running') runningAfter = performance.now() - t0;
    });
    const woke = await loginSuccessMs('127.0.0.1', router.port, `Waker${i}`, 25_000);
    unsubscribe();
    // The same login to the now Running instance: what the backend itself costs, for reference.
    const plain = await loginSuccessMs('127.0.0.1', router.port, `Warm${i}`, 25_000);
    if (i > 0) {
      routed.push(woke);
      warm.push(plain);
      seen.push(runningAfter);
    }
  }
  // Raw: a container of the same image outside the orchestrator (whose supervisor would react to a
  // pause it did not ask for), paused and unpaused straight through Docker, then pinged directly.
  const plain = await startMcServerContainer({ labels: { 'endercloud.bench': stack.run } });
  cleanups.push(() => plain.remove());
  await waitForStatus(plain.host, plain.hostPort, (st) => st.max > 0, 30_000);
  const c = docker().getContainer(plain.id);
  for (let i = 0; i < WAKES; i++) {
    await c.pause();
    await sleep(300);
    const t0 = performance.now();
    await c.unpause();
    await until('first ping after unpause', () => pingStatus(plain.host, plain.hostPort, 2000).then(() => true, () => false), 20_000, 5);
    raw.push(performance.now() - t0);
  }
  return { routed, warm, seen, raw };
}

async function main(): Promise<void> {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanup().finally(() => process.exit(130)));
  const deadline = setTimeout(() => {
    process.stderr.write('bench:router: exceeded 10 minutes; aborting\n');
    void cleanup().finally(() => process.exit(1));
  }, 10 * 60_000);

  const sink = await startSink();
  const echoPort = await freePort();
  const echo = mc.createServer({ 'online-mode': false, host: '127.0.0.1', port: echoPort, version: DEFAULT_VERSION, motd: 'bench' });
  cleanups.push(() => echo.close());
  await new Promise<void>((r) => echo.once('listening', () => r()));
  const routerT = await startRouterProcess(`try = ["sink"]\n[servers]\nsink = "127.0.0.1:${sink.port}"\n[limits]\nmax_connections_per_ip = 100000\nlogin_ratelimit = "0ms"\n`);
  const routerP = await startRouterProcess(`try = ["mc"]\n[servers]\nmc = "127.0.0.1:${echoPort}"\n[limits]\nmax_connections_per_ip = 100000\nlogin_ratelimit = "0ms"\n`);

  const step = (what: string) => process.stderr.write(`bench:router: ${what}\n`);
  if (IDLE_PLAN.note) step(`note: ${IDLE_PLAN.note}`);
  step('throughput');
  const direct = await throughput(sink.port, sink);
  const routed = await throughput(routerT.port, sink);
  step('ping round trips');
  const dPing = await pingTimes(echoPort);
  const rPing = await pingTimes(routerP.port);
  step(`${IDLE} idle connections`);
  const idle = await idleMemory(routerT.pid, routerT.port, sink);
  step('wake latency (containers)');
  const wake = await wakeLatency();

  const MB = 1024 * 1024;
  const lines = [
    `throughput       direct ${fmt(direct / MB, 0)} MiB/s   router ${fmt(routed / MB, 0)} MiB/s   ratio router/direct ${fmt(routed / direct)}`,
    `setup (ping RTT) direct p50 ${fmt(pct(dPing, 50))} ms p99 ${fmt(pct(dPing, 99))} ms   router p50 ${fmt(pct(rPing, 50))} ms p99 ${fmt(pct(rPing, 99))} ms   ratio p50 ${fmt(pct(rPing, 50) / pct(dPing, 50))} p99 ${fmt(pct(rPing, 99) / pct(dPing, 99))}`,
    `idle connections ${idle.opened} held (player + backend socket each): ${fmt(idle.perConnKb, 1)} KiB router RSS per connection${IDLE_PLAN.note ? ` (scaled down from ${IDLE_WANTED}: ${IDLE_PLAN.note})` : ''}`,
    `wake             router login→Login Success from Paused p50 ${fmt(pct(wake.routed, 50), 0)} ms   raw unpause+first ping p50 ${fmt(pct(wake.raw, 50), 0)} ms   ratio ${fmt(pct(wake.routed, 50) / pct(wake.raw, 50))}`,
    `  wake path      login→router sees Running p50 ${fmt(pct(wake.seen, 50), 0)} ms (ratio to raw ${fmt(pct(wake.seen, 50) / pct(wake.raw, 50))});  the same login to the Running instance p50 ${fmt(pct(wake.warm, 50), 0)} ms (the backend's own login cost)`,
  ];
  process.stdout.write(`bench:router (${PAYLOAD_BYTES / MB} MiB, ${PINGS} pings, ${IDLE} idle, ${WAKES} wakes)\n${lines.join('\n')}\n`);
  clearTimeout(deadline);
}

async function cleanup(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) {
    try {
      await c();
    } catch {
      // keep cleaning
    }
  }
}

main()
  .then(cleanup, async (err: unknown) => {
    process.stderr.write(`bench:router failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    await cleanup();
    process.exitCode = 1;
  })
  .finally(() => setTimeout(() => process.exit(process.exitCode ?? 0), 200).unref());
