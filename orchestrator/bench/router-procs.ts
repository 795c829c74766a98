// The proxies under test as child processes of the bench, each started under a
// raised `ulimit -n` and killed by the bench: the EnderCloud router (static
// mode) and HAProxy in TCP mode with `option splice-auto`, config in a temp dir,
// bound to 127.0.0.1 only. CPU time and RSS are read from /proc/<pid>.
// The router runs as the image runs it — TypeScript compiled by tsc, started with
// node — unless BENCH_ROUTER_RUNTIME=tsx; it carries a bench-only hook
// (router-memory-hook.ts) that answers the bench's memory question after a full GC.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/registry.js';
import { until } from '../test/support/router-stack.js';
import { benchConfig, routerBenchConfig } from './bench-config.js';

const ORCHESTRATOR_DIR = fileURLToPath(new URL('..', import.meta.url));
const ROUTER_ENTRY = join(ORCHESTRATOR_DIR, 'src/router/index.ts');
const MEMORY_HOOK = join(ORCHESTRATOR_DIR, 'bench/router-memory-hook.ts');
/** Where the bench compiles the router (under the package, so node_modules resolve; `.test-cache/` is ignored by git and ESLint). */
const COMPILED_DIR = join(ORCHESTRATOR_DIR, '.test-cache/bench-router');
/** Linux reports utime/stime in clock ticks; USER_HZ is 100 on every mainstream kernel. */
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

export type Cleanup = () => Promise<void> | void;

/** A proxy's memory at one moment, KiB. */
export interface MemorySample {
  /** RSS as found (/proc/<pid>/status), no collection asked for. */
  rssKb: number;
  /** The router only: RSS right after two full GCs, and V8 heap used + external memory then. */
  gcRssKb?: number;
  heapKb?: number;
}

export interface ProxyProcess {
  name: string;
  pid: number;
  /** Listening ports by frontend name (`sink`, `echo`). */
  ports: Record<string, number>;
  /** `collect`: the router runs two full GCs first (its memory hook); HAProxy has nothing to collect. */
  memory(collect: boolean): Promise<MemorySample>;
  stop(): Promise<void>;
}

/** The soft RLIMIT_NOFILE of a process; Infinity for unlimited. */
export function openFilesLimit(pid: number | 'self' = 'self'): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  if (!m) return Number.NaN;
  return m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
}

/** `sh -c 'ulimit -n <n> || …; exec cmd'`: raises the limit as far as allowed, then becomes cmd (same pid). */
export function spawnWithFdLimit(fds: number, cmd: string, args: string[], opts: Parameters<typeof spawn>[2]): ChildProcess {
  const script = `ulimit -n ${fds} 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"`;
  return spawn('sh', ['-c', script, cmd, ...args], opts);
}

/** CPU seconds (user + system, all threads) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

export const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

const listening = (port: number): Promise<boolean> =>
  new Promise((r) => {
    const s = connect({ host: '127.0.0.1', port }, () => (s.destroy(), r(true)));
    s.on('error', () => r(false));
  });

/** Stops a child: SIGTERM (the router writes its --cpu-prof profile on a clean exit), SIGKILL after 5 s. */
function stopper(child: ChildProcess, dir: string): () => Promise<void> {
  let stopped: Promise<void> | undefined;
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill); // never leave a proxy behind, even when the run is aborted
  return () =>
    (stopped ??= new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        process.removeListener('exit', kill);
        rmSync(dir, { recursive: true, force: true });
        resolve();
      };
      const timer = setTimeout(kill, 5000);
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once('exit', done);
      child.kill('SIGTERM');
    }));
}

const rssOnly = (pid: number) => (): Promise<MemorySample> => Promise.resolve({ rssKb: rssKb(pid) });

/** Asks the router's memory hook over IPC: collects garbage, then reports RSS and heap. */
function routerMemory(child: ChildProcess): (collect: boolean) => Promise<MemorySample> {
  return async (collect: boolean) => {
    const raw = rssKb(child.pid!);
    if (!collect) return { rssKb: raw };
    const answer = await new Promise<{ rssKb: number; heapUsedKb: number; externalKb: number; collected: boolean }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the router did not answer the memory probe within 30 s')), 30_000);
      child.once('message', (m: { rssKb: number; heapUsedKb: number; externalKb: number; collected: boolean }) => {
        clearTimeout(timer);
        resolve(m);
      });
      child.send('memory');
    });
    if (!answer.collected) throw new Error('the router ran without --expose-gc: the memory probe cannot collect');
    return { rssKb: raw, gcRssKb: answer.rssKb, heapKb: answer.heapUsedKb + answer.externalKb };
  };
}

let compiled: string | undefined;
/**
 * The router (and the memory hook) compiled by tsc into COMPILED_DIR, once per run: the same
 * emit as the image's `tsc --outDir dist` (types are not checked here: `npx tsc --noEmit` does).
 */
function compileRouter(): string {
  if (compiled) return compiled;
  rmSync(COMPILED_DIR, { recursive: true, force: true });
  mkdirSync(COMPILED_DIR, { recursive: true });
  const tsconfig = join(COMPILED_DIR, 'tsconfig.json');
  writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: join(ORCHESTRATOR_DIR, 'tsconfig.json'),
      compilerOptions: { noEmit: false, noCheck: true, types: [], rootDir: ORCHESTRATOR_DIR, outDir: COMPILED_DIR },
      include: [],
      files: [ROUTER_ENTRY, MEMORY_HOOK],
    }),
  );
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const out = spawnSync(process.execPath, [tsc, '-p', tsconfig], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`compiling the router for the bench failed:\n${out.stdout}${out.stderr}`);
  compiled = COMPILED_DIR;
  return compiled;
}

/** The node arguments that start the router the configured way, with the memory hook. */
function routerArgs(): string[] {
  if (routerBenchConfig.routerRuntime === 'tsx') return ['--expose-gc', '--import', 'tsx', '--import', MEMORY_HOOK, ROUTER_ENTRY];
  const dir = compileRouter();
  return ['--expose-gc', '--import', join(dir, 'bench/router-memory-hook.js'), join(dir, 'src/router/index.js')];
}

async function started(
  name: string,
  child: ChildProcess,
  ports: Record<string, number>,
  stop: () => Promise<void>,
  memory: (collect: boolean) => Promise<MemorySample>,
): Promise<ProxyProcess> {
  let exited = '';
  child.once('exit', (code, signal) => (exited = `${name} exited (${code ?? signal}) before listening`));
  try {
    for (const port of Object.values(ports))
      await until(`${name} listening on ${port}`, () => (exited ? Promise.reject(new Error(exited)) : listening(port)), 20_000, 100);
  } catch (err) {
    await stop();
    throw err;
  }
  return { name, pid: child.pid!, ports, memory, stop };
}

/** Backend ports of the bench's sinks: counting, echoing, and the download source (optional). */
export interface Backends {
  sink: number;
  echo: number;
  source?: number;
}

/**
 * The router as its own process (static mode), so its CPU and memory are measured alone.
 * `[servers]` sink, echo and source; the handshake addresses `echo.bench` and `source.bench`
 * pick echo and source (forced hosts), everything else the sink.
 */
export async function startRouter(backends: Backends, fds: number, nodeArgs: string[] = []): Promise<ProxyProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'ec-bench-router-'));
  const port = await freePort();
  const toml = [
    `bind = "127.0.0.1:${port}"`,
    'try = ["sink"]',
    '[servers]',
    `sink = "127.0.0.1:${backends.sink}"`,
    `echo = "127.0.0.1:${backends.echo}"`,
    ...(backends.source ? [`source = "127.0.0.1:${backends.source}"`] : []),
    '[forced-hosts]',
    '"echo.bench" = ["echo"]',
    ...(backends.source ? ['"source.bench" = ["source"]'] : []),
    '[limits]',
    'max_connections_per_ip = 0',
    'login_ratelimit = 0',
  ].join('\n');
  writeFileSync(join(dir, 'router.toml'), `${toml}\n`);
  const prof = routerBenchConfig.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${routerBenchConfig.cpuProfDir}`] : [];
  const child = spawnWithFdLimit(fds, process.execPath, [...prof, ...nodeArgs, ...routerArgs()], {
    env: { PATH: benchConfig.path, ENDERCLOUD_ROUTER_CONFIG: join(dir, 'router.toml'), ENDERCLOUD_ROUTER_ID: 'bench' },
    stdio: ['ignore', benchConfig.routerLog ? 'inherit' : 'ignore', 'inherit', 'ipc'],
  });
  return started('router', child, { sink: port, echo: port, source: port }, stopper(child, dir), routerMemory(child));
}

/**
 * HAProxy 2.x in TCP mode with splice-auto: one frontend per sink, on its own port. `threads`
 * sets `nbthread`; without it HAProxy starts one thread per CPU it may run on (`haproxyThreads`).
 */
export async function startHaproxy(backends: Backends, maxconn: number, threads?: number, name = 'haproxy'): Promise<ProxyProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'ec-bench-haproxy-'));
  const ports: Record<string, number> = { sink: await freePort(), echo: await freePort() };
  if (backends.source) ports.source = await freePort();
  const cfg = [
    'global',
    `  maxconn ${maxconn}`,
    ...(threads ? [`  nbthread ${threads}`] : []),
    // Splicing needs a pipe (2 descriptors) per connection moving bulk data; the bench has one such
    // connection at a time, and HAProxy reserves descriptors for maxconn/4 pipes by default.
    '  maxpipes 16',
    defaultsSection(),
    ...Object.entries(ports).flatMap(([frontendName, port]) =>
      frontend(frontendName, port, backends[frontendName as keyof Backends]!, maxconn),
    ),
  ].join('\n');
  writeFileSync(join(dir, 'haproxy.cfg'), `${cfg}\n`);
  // -db: stay in the foreground (no daemon, no service); the fd limit is raised by HAProxy itself from maxconn.
  const child = spawn(routerBenchConfig.haproxy, ['-db', '-q', '-f', join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const spawnError = new Promise<never>((_, reject) =>
    child.once('error', (err) =>
      reject(new Error(`cannot start ${routerBenchConfig.haproxy} (install Debian haproxy: scripts/prepare-host.sh): ${err.message}`)),
    ),
  );
  return Promise.race([started(name, child, ports, stopper(child, dir), rssOnly(child.pid!)), spawnError]);
}

function defaultsSection(): string {
  return ['defaults', '  mode tcp', '  option splice-auto', '  timeout connect 2s', '  timeout client 5m', '  timeout server 5m'].join(
    '\n',
  );
}

function frontend(name: string, port: number, backendPort: number, maxconn: number): string[] {
  return [
    `frontend fe_${name}`,
    `  bind 127.0.0.1:${port}`,
    `  maxconn ${maxconn}`,
    `  default_backend be_${name}`,
    `backend be_${name}`,
    `  server s1 127.0.0.1:${backendPort}`,
  ];
}

/** Threads of a running process (/proc/<pid>/status), e.g. HAProxy's nbthread. */
export const threadCount = (pid: number): number => Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

/** The HAProxy version line, for the report. */
export function haproxyVersion(): string {
  const out = spawnSync(routerBenchConfig.haproxy, ['-v'], { encoding: 'utf8' });
  return out.stdout?.split('\n')[0]?.trim() || 'haproxy (version unknown)';
}
