// `npm run bench:router`: the router's data path against HAProxy (TCP mode,
// `option splice-auto`) and a direct connection, on the same local sinks behind
// a login handshake, in one bounded run; every goal is printed as a ratio
// against HAProxy measured in the same run:
//   (1) bulk bytes/s after login, both ways (upload to a counting sink, download
//   from a source backend), in alternating rounds against HAProxy at its default
//   threads (one per CPU) and at `nbthread 1` (the router is one Node thread),
//   with the CPU seconds per GiB of each proxy, (2) small-packet round trip p50/p99 through an
//   echo backend, (3) N players (default 10,000): RSS per idle connection (the
//   router's after full GCs, asked over the IPC of a bench-only hook, on a fresh
//   router of its own; marginal N/2 → N, per quarter, and whole, as found as well),
//   then 20 small packets a second each for a
//   bounded time — CPU seconds of each proxy process (/proc/<pid>/stat) and
//   dropped connections.
// The router runs as the image runs it: compiled by tsc, started with node
// (BENCH_ROUTER_RUNTIME=tsx runs the source through tsx instead).
// Then, as before: status-ping round trip via the router vs direct, and wake
// latency from a paused instance (containers; BENCH_SKIP_WAKE=1 skips it).
// It raises its own `ulimit -n` (re-executing itself once under `sh -c ulimit`)
// and starts the proxies under a raised limit; when the hard limit is too low
// (not root) it measures as many players as fit and prints a note.
// Everything it starts (proxies, servers, containers) is cleaned up.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import mc from 'minecraft-protocol';
import { DEFAULT_VERSION } from '../test/support/mc-server.js';
import { freePort } from '../test/support/registry.js';
import { benchConfig, routerBenchConfig } from './bench-config.js';

import { bulkRounds, players, smallPacketRtts, startSink, type BulkSamples, type PlayersResult } from './router-data-path.js';
import {
  haproxyVersion,
  openFilesLimit,
  startHaproxy,
  startRouter,
  threadCount,
  type Backends,
  type Cleanup,
  type ProxyProcess,
} from './router-procs.js';
import { pingTimes, wakeLatency } from './router-wake.js';

const PAYLOAD_BYTES = benchConfig.routerPayloadBytes;
/** Descriptors a proxy needs besides its two sockets per player (listeners, stdio, epoll, loader). */
const PROXY_FD_OVERHEAD = 64;
/** Descriptors this process keeps free besides one client socket per player (HTTP, containers' clients, pings). */
const FD_HEADROOM = 1000;
/** What each proxy needs; this process and each sink need about half. */
const WANTED_FDS = 2 * routerBenchConfig.players + PROXY_FD_OVERHEAD;

const cleanups: Cleanup[] = [];
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const fmt = (n: number, d = 2): string => n.toFixed(d);
const goal = (ok: boolean): string => (ok ? 'ok' : 'MISSED');
const step = (what: string) => process.stderr.write(`bench:router: ${what}\n`);

/** Node cannot raise RLIMIT_NOFILE itself: run this bench again under `sh -c 'ulimit -n …'` once. */
function reexecWithMoreFds(): Promise<number> {
  const script = `ulimit -n ${WANTED_FDS} 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"`;
  const child = spawn('sh', ['-c', script, process.execPath, ...process.execArgv, fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
    env: routerBenchConfig.reexecEnv(),
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => child.kill(signal));
  return new Promise((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
}

/**
 * Players that fit the descriptor limit: each costs two in a proxy (player + backend socket), one
 * here and one in the sink. The children get the same limit as this process (raised as far as the
 * hard limit allows), so the proxy's share decides.
 */
function playerPlan(): { count: number; note?: string } {
  const wanted = routerBenchConfig.players;
  const limit = openFilesLimit();
  if (!Number.isFinite(limit) || limit >= WANTED_FDS) return { count: wanted };
  const fits = Math.max(0, Math.min(Math.floor((limit - PROXY_FD_OVERHEAD) / 2), limit - FD_HEADROOM));
  return {
    count: fits,
    note: `ulimit -n is ${limit} and cannot be raised further (hard limit, or not root): ${wanted} players need about ${WANTED_FDS} descriptors in each proxy process; measuring ${fits}`,
  };
}

interface ProxyRun {
  proxy: ProxyProcess;
  load: PlayersResult;
  rtt: number[];
}

async function runProxy(proxy: ProxyProcess, sinks: Awaited<ReturnType<typeof startSinks>>, count: number): Promise<ProxyRun> {
  step(`${proxy.name}: ${count} players (idle RSS, then ${routerBenchConfig.playerSeconds} s × 20 packets/s)`);
  const load = await players(proxy, proxy.ports.sink!, sinks.sink, count, routerBenchConfig.playerSeconds, step);
  step(`${proxy.name}: small-packet round trips`);
  const rtt = await smallPacketRtts(proxy.ports.echo!, 'echo.bench', routerBenchConfig.rttSamples);
  return { proxy, load, rtt };
}

async function startSinks() {
  return {
    sink: await startSink({ mode: 'count' }, WANTED_FDS, cleanups),
    echo: await startSink({ mode: 'echo' }, FD_HEADROOM, cleanups),
    source: await startSink({ mode: 'source', bytes: PAYLOAD_BYTES }, FD_HEADROOM, cleanups),
  };
}

const median = (xs: number[]): number => pct(xs, 50);
/** "median (min–max over rounds)" of per-round values. */
const spread = (xs: number[], d = 2): string => `${fmt(median(xs), d)} (${fmt(Math.min(...xs), d)}–${fmt(Math.max(...xs), d)})`;
const perRound = (a: number[], b: number[]): number[] => a.map((x, i) => x / b[i]!);

/** The bulk lines: medians over alternating rounds, ratios per round (same round), CPU per GiB. */
function bulkReport(bulk: Map<string, BulkSamples>, haproxyThreads: number): string[] {
  const MB = 1024 * 1024;
  const r = bulk.get('router')!;
  const lines: string[] = [];
  for (const dir of ['up', 'down'] as const) {
    const cpu = dir === 'up' ? 'upCpuPerGiB' : 'downCpuPerGiB';
    const parts = [...bulk.entries()].map(
      ([name, x]) => `${name} ${fmt(median(x[dir]) / MB, 0)} MiB/s${name === 'direct' ? '' : ` ${fmt(median(x[cpu]), 2)} CPU-s/GiB`}`,
    );
    const vs = (other: string) => {
      const o = bulk.get(other)!;
      const ratios = perRound(r[dir], o[dir]);
      return `router/${other} ${spread(ratios)}${other === 'direct' ? '' : `, CPU per byte ${fmt(median(perRound(r[cpu], o[cpu])))}×`}`;
    };
    const main = perRound(r[dir], bulk.get('haproxy')![dir]);
    lines.push(
      `throughput ${dir === 'up' ? 'up  ' : 'down'}  ${parts.join('   ')}`,
      `                ${vs('haproxy')} (goal ≥ 0.90: ${goal(median(main) >= 0.9)})   ${vs('haproxy-1t')}   ${vs('direct')}`,
    );
  }
  lines.push(
    `                medians of ${r.up.length} alternating rounds, ratio per round (min–max); haproxy = default nbthread (${haproxyThreads} threads here), haproxy-1t = nbthread 1; the router is one Node process (one JS thread + V8/libuv helpers)`,
  );
  return lines;
}

function report(
  count: number,
  note: string | undefined,
  direct: { rtt: number[] },
  h: ProxyRun,
  r: ProxyRun,
  rMem: PlayersResult,
  bulk: string[],
): string[] {
  const d50 = pct(r.rtt, 50) - pct(h.rtt, 50);
  const d99 = pct(r.rtt, 99) - pct(h.rtt, 99);
  const rate = (x: PlayersResult) => x.packetsSent / x.loadSeconds;
  // Per packet: when the load generator falls behind 20/s (it shares the cores), the proxies carry
  // different packet counts; CPU per packet compares the same work.
  const usPerPacket = (x: PlayersResult) => (x.cpuSeconds / x.packetsSent) * 1e6;
  const cpuRatio = usPerPacket(r.load) / usPerPacket(h.load);
  const rttLine = (name: string, xs: number[]) => `${name} p50 ${fmt(pct(xs, 50), 3)} p99 ${fmt(pct(xs, 99), 3)} ms`;
  return [
    `against ${haproxyVersion()} (TCP mode, option splice-auto), same sinks, same run${note ? `\nnote: ${note}` : ''}`,
    ...bulk,
    `small-packet RTT ${rttLine('direct', direct.rtt)}   ${rttLine('haproxy', h.rtt)}   ${rttLine('router', r.rtt)}   router − haproxy p50 ${fmt(d50, 3)} ms p99 ${fmt(d99, 3)} ms (goal ≤ 0.100: ${goal(d50 <= 0.1 && d99 <= 0.1)})`,
    `players          ${count} × 20 packets/s for ${routerBenchConfig.playerSeconds} s (achieved haproxy ${fmt(rate(h.load), 0)}/s router ${fmt(rate(r.load), 0)}/s): CPU haproxy ${fmt(h.load.cpuSeconds)} s (${fmt(usPerPacket(h.load))} µs/packet) router ${fmt(r.load.cpuSeconds)} s (${fmt(usPerPacket(r.load))} µs/packet)   router/haproxy per packet ${fmt(cpuRatio)} (goal ≤ 1.50: ${goal(cpuRatio <= 1.5)})   dropped haproxy ${h.load.dropped} router ${r.load.dropped} (goal 0: ${goal(r.load.dropped + rMem.dropped === 0)})${rMem.dropped > 0 ? `   dropped in the router's memory pass ${rMem.dropped}` : ''}${r.load.bytesMissing + h.load.bytesMissing > 0 ? `   bytes missing haproxy ${h.load.bytesMissing} router ${r.load.bytesMissing}` : ''}`,
    `idle memory      ${count} logged-in connections (player + backend socket each), RSS per added connection, marginal N/2 → N: router after full GCs ${fmt(rMem.gcRssKbPerConnectionMarginal, 1)} KiB (goal ≤ 8 KiB: ${goal(rMem.gcRssKbPerConnectionMarginal <= 8)}; a fresh router, no load), of which V8 heap + external ${fmt(rMem.heapKbPerConnectionMarginal, 1)} KiB;  as found (the load's router, no forced GC: the earlier measure) router ${fmt(r.load.idleKbPerConnectionMarginal, 1)} KiB   haproxy ${fmt(h.load.idleKbPerConnectionMarginal, 1)} KiB`,
    `                 per quarter (0 → N/4 → N/2 → 3N/4 → N, KiB per added connection): router after GCs [${rMem.quarterGcRssKb.map((x) => fmt(x, 1)).join(' ')}] as found [${r.load.quarterRssKb.map((x) => fmt(x, 1)).join(' ')}]   haproxy [${h.load.quarterRssKb.map((x) => fmt(x, 1)).join(' ')}];  whole delta / N (includes the heap's one-off growth, as found): haproxy ${fmt(h.load.idleKbPerConnection, 1)} KiB   router ${fmt(r.load.idleKbPerConnection, 1)} KiB (after 5 s ${fmt(r.load.idleKbPerConnectionSettled, 1)}; base RSS ${fmt(r.load.baseRssKb / 1024, 0)} MiB)`,
    `                 router run as ${routerBenchConfig.routerRuntime === 'tsc' ? 'tsc output with node (as the image runs it; BENCH_ROUTER_RUNTIME=tsx for the source through tsx)' : 'TypeScript through tsx (BENCH_ROUTER_RUNTIME=tsx)'}`,
  ];
}

async function main(): Promise<void> {
  const deadline = setTimeout(() => {
    process.stderr.write('bench:router: exceeded 10 minutes; aborting\n');
    void cleanup().finally(() => process.exit(1));
  }, 10 * 60_000);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanup().finally(() => process.exit(130)));

  const plan = playerPlan();
  if (plan.note) step(`note: ${plan.note}`);
  const sinks = await startSinks();
  const backends: Backends = { sink: sinks.sink.port, echo: sinks.echo.port, source: sinks.source.port };
  const haproxy = await startHaproxy(backends, plan.count + 4);
  cleanups.push(() => haproxy.stop());
  const haproxy1 = await startHaproxy(backends, 16, 1, 'haproxy-1t');
  cleanups.push(() => haproxy1.stop());
  const router = await startRouter(backends, WANTED_FDS);
  cleanups.push(() => router.stop());
  const haproxyThreads = threadCount(haproxy.pid);

  step('direct: small-packet round trips');
  const direct = { rtt: await smallPacketRtts(sinks.echo.port, 'echo.bench', routerBenchConfig.rttSamples) };
  // Players first, each proxy fresh (idle RSS is measured from the process's base).
  const h = await runProxy(haproxy, sinks, plan.count);
  const r = await runProxy(router, sinks, plan.count);
  // Memory after full GCs on a fresh router of its own (see players(): GCs must not precede the load).
  step(`router (a fresh process): ${plan.count} idle players, memory after full GCs`);
  const fresh = await startRouter(backends, WANTED_FDS);
  cleanups.push(() => fresh.stop());
  const rMem = await players(fresh, fresh.ports.sink!, sinks.sink, plan.count, 0, step, true);
  await fresh.stop();
  step(`bulk: ${routerBenchConfig.bulkRounds} alternating rounds of ${PAYLOAD_BYTES / 2 ** 20} MiB up and down`);
  const targets = [
    { name: 'direct', upPort: sinks.sink.port, downPort: sinks.source.port },
    ...[haproxy, haproxy1, router].map((p) => ({ name: p.name, upPort: p.ports.sink!, downPort: p.ports.source!, pid: p.pid })),
  ];
  const bulk = await bulkRounds(targets, sinks.sink, PAYLOAD_BYTES, routerBenchConfig.bulkRounds, step);
  await haproxy.stop();
  await haproxy1.stop();
  await router.stop(); // a clean exit writes the --cpu-prof profile
  const MB = 1024 * 1024;
  // Printed as soon as measured: a later failure (containers) does not lose the data-path numbers.
  process.stdout.write(
    `bench:router (${PAYLOAD_BYTES / MB} MiB × ${routerBenchConfig.bulkRounds} rounds, ${routerBenchConfig.rttSamples} round trips, ${plan.count} players, ${benchConfig.routerPings} pings${routerBenchConfig.skipWake ? '' : `, ${benchConfig.routerWakes} wakes`})\n${report(plan.count, plan.note, direct, h, r, rMem, bulkReport(bulk, haproxyThreads)).join('\n')}\n`,
  );
  const lines: string[] = [];

  step('status-ping round trips (router vs direct)');
  const echoPort = await freePort();
  const echo = mc.createServer({ 'online-mode': false, host: '127.0.0.1', port: echoPort, version: DEFAULT_VERSION, motd: 'bench' });
  cleanups.push(() => echo.close());
  await new Promise<void>((res) => echo.once('listening', () => res()));
  const pingRouter = await startRouter({ sink: echoPort, echo: echoPort }, FD_HEADROOM);
  cleanups.push(() => pingRouter.stop());
  const dPing = await pingTimes(echoPort, benchConfig.routerPings);
  const rPing = await pingTimes(pingRouter.ports.sink!, benchConfig.routerPings);
  lines.push(
    `setup (ping RTT) direct p50 ${fmt(pct(dPing, 50))} ms p99 ${fmt(pct(dPing, 99))} ms   router p50 ${fmt(pct(rPing, 50))} ms p99 ${fmt(pct(rPing, 99))} ms   ratio p50 ${fmt(pct(rPing, 50) / pct(dPing, 50))} p99 ${fmt(pct(rPing, 99) / pct(dPing, 99))}`,
  );

  if (!routerBenchConfig.skipWake) {
    step('wake latency (containers)');
    const wake = await wakeLatency(cleanups, benchConfig.routerWakes);
    lines.push(
      `wake             router login→Login Success from Paused p50 ${fmt(pct(wake.routed, 50), 0)} ms   raw unpause+first ping p50 ${fmt(pct(wake.raw, 50), 0)} ms   ratio ${fmt(pct(wake.routed, 50) / pct(wake.raw, 50))}`,
      `  wake path      login→router sees Running p50 ${fmt(pct(wake.seen, 50), 0)} ms (ratio to raw ${fmt(pct(wake.seen, 50) / pct(wake.raw, 50))});  the same login to the Running instance p50 ${fmt(pct(wake.warm, 50), 0)} ms (the backend's own login cost)`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
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

if (openFilesLimit() < WANTED_FDS && !routerBenchConfig.reexecuted) {
  reexecWithMoreFds().then((code) => process.exit(code));
} else {
  main()
    .then(cleanup, async (err: unknown) => {
      process.stderr.write(`bench:router failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      await cleanup();
      process.exitCode = 1;
    })
    .finally(() => setTimeout(() => process.exit(process.exitCode ?? 0), 200).unref());
}
