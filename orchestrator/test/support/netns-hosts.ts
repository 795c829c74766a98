// Several real hosts on one machine, for test/multihost: each host is a
// `dockerd` in its own network namespace (`ip netns add ec-mh<slot>-h<i>`),
// reached from the root namespace over a veth pair (root side
// 10.231.<slot*10+i>.1/24, namespace side .2/24), with its own data-root,
// exec-root, pidfile, socket, bridge (--bip 10.232.<slot*10+i>.1/24) and
// cgroup parent, started with `nsenter --net=` (`ip netns exec` remounts /sys
// and loses the cgroup mounts). Images are moved in with `docker save | load`.
// One agent per host runs inside its namespace (`nsenter --net=`, a child
// process) against its own dockerd — src/agent/index.ts bundled once per run
// with esbuild (its packages stay external, resolved through a node_modules
// link), since three tsx compilations on two busy cores take half a minute; the orchestrator runs in the root
// namespace on `orchestratorAddress` (10.231.<slot*10>.1, on a veth pair of its
// own, so cutting one host's link leaves the others connected).
//
// A slot (1..20) is claimed by an atomic mkdir of /tmp/ecmh/<slot> holding the
// owner's pid: two test processes never share addresses, and a slot whose
// owner died (a crashed run) is swept — processes killed, mounts unmounted,
// namespaces, links and cgroups removed, files deleted — before it is reused.
// close() does the same for its own slot, also after a failed test.
// Root only: `netnsSkipReason()` says why a suite must skip.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  rmdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildSync } from 'esbuild';

const run = promisify(execFile);
const ORCHESTRATOR_DIR = fileURLToPath(new URL('../..', import.meta.url));
const BASE = '/tmp/ecmh';
const SLOTS = 20;
const CGROUP_ROOT = '/sys/fs/cgroup';

/** Why netns hosts cannot run here, or undefined when they can. */
export function netnsSkipReason(): string | undefined {
  if (process.platform !== 'linux') return 'multihost tests need Linux network namespaces';
  if (process.getuid?.() !== 0) return 'multihost tests need root (ip netns, nsenter, dockerd); they run as root in CI';
  for (const bin of ['/usr/sbin/dockerd', '/usr/bin/nsenter'])
    if (!existsSync(bin) && !existsSync(bin.replace('/usr', ''))) return `multihost tests need ${bin}`;
  return undefined;
}

async function sh(cmd: string, args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  const { stdout } = await run(cmd, args, { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

const quiet = (p: Promise<unknown>): Promise<void> =>
  p.then(
    () => undefined,
    () => undefined,
  );
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function bounded(what: string, fn: () => Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await fn().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export interface AgentEnv {
  orchestratorUrl: string;
  token: string;
  /** Extra AGENT_* variables. */
  env?: Record<string, string>;
}

export interface NetnsHost {
  index: number;
  /** The agent id (AGENT_ID). */
  id: string;
  netns: string;
  /** The namespace side of the veth: control URL and game address. */
  address: string;
  dir: string;
  socket: string;
  agentUrl: string;
  /** Lines the agent wrote (stdout and stderr). */
  agentLog: string[];
  /** `docker -H unix://<socket> …` */
  docker(args: string[]): Promise<string>;
  /** Managed containers of this host's dockerd: instance id → container state. */
  containers(): Promise<Map<string, { id: string; state: string }>>;
  startDockerd(): Promise<void>;
  /** SIGTERM (clean; with --live-restore its containers keep running) or SIGKILL. */
  stopDockerd(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  startAgent(): Promise<void>;
  killAgent(): Promise<void>;
  /** Power loss: the agent, dockerd, containerd, shims and every container process, SIGKILL. */
  kill(): Promise<void>;
  /** After kill(): dockerd, then the agent (its containers come back exited). */
  restore(): Promise<void>;
  /** Root side of the veth down / up. */
  partition(): Promise<void>;
  heal(): Promise<void>;
}

export interface NetnsCluster {
  slot: number;
  orchestratorAddress: string;
  hosts: NetnsHost[];
  /** Loads an image of the machine's engine into every host (docker save | load). */
  loadImage(tag: string): Promise<void>;
  startAgents(env: AgentEnv): Promise<void>;
  close(): Promise<void>;
}

const hostOctet = (slot: number, i: number): number => slot * 10 + i;
const netnsName = (slot: number, i: number): string => `ec-mh${slot}-h${i}`;
const rootVeth = (slot: number, i: number): string => `ecmh${slot}h${i}r`;
const nsVeth = (slot: number, i: number): string => `ecmh${slot}h${i}n`;
const orchestratorVeth = (slot: number): string => `ecmh${slot}o0`;
const cgroupParent = (slot: number, i: number): string => `ecmh-${slot}-h${i}`;

/** Every pid in a cgroup subtree (cgroup v1 pids controller, else memory; or v2). */
function cgroupPids(parent: string): number[] {
  const pids: number[] = [];
  for (const ctrl of ['pids', 'memory', '']) {
    const root = join(CGROUP_ROOT, ctrl, parent);
    if (!existsSync(root)) continue;
    const walk = (dir: string): void => {
      try {
        for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (line.trim()) pids.push(Number(line));
        for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
      } catch {
        /* gone meanwhile */
      }
    };
    walk(root);
    break;
  }
  return [...new Set(pids)];
}

function removeCgroups(parent: string): void {
  let controllers: string[] = [];
  try {
    controllers = readdirSync(CGROUP_ROOT);
  } catch {
    return;
  }
  for (const ctrl of ['', ...controllers]) {
    const root = join(CGROUP_ROOT, ctrl, parent);
    if (!existsSync(root)) continue;
    const walk = (dir: string): void => {
      try {
        for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
        rmdirSync(dir);
      } catch {
        /* busy or gone */
      }
    };
    walk(root);
  }
}

function killPids(pids: readonly number[]): void {
  for (const pid of pids) {
    if (pid === process.pid) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

async function netnsPids(name: string): Promise<number[]> {
  const out = await sh('ip', ['netns', 'pids', name]).catch(() => '');
  return out
    .split('\n')
    .filter((l) => l.trim())
    .map(Number);
}

/** Unmounts everything dockerd left mounted under `dir`, deepest first. */
async function unmountUnder(dir: string): Promise<void> {
  const points = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1]?.replace(/\\040/g, ' '))
    .filter((p): p is string => p !== undefined && (p === dir || p.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const p of points) await quiet(sh('umount', ['-l', p]));
}

/** Everything of a slot: processes, mounts, namespaces, links, cgroups, files. */
async function sweepSlot(slot: number): Promise<void> {
  const names = (await sh('ip', ['netns', 'list']).catch(() => ''))
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(`ec-mh${slot}-h`));
  const indexes = new Set<number>(names.map((n) => Number(n.slice(`ec-mh${slot}-h`.length))));
  for (let i = 1; i <= 9; i++) if (existsSync(join(CGROUP_ROOT, 'pids', cgroupParent(slot, i)))) indexes.add(i);
  for (let round = 0; round < 3; round++) {
    for (const i of indexes) {
      killPids(await netnsPids(netnsName(slot, i)));
      killPids(cgroupPids(cgroupParent(slot, i)));
    }
    await sleep(200);
  }
  await unmountUnder(join(BASE, String(slot)));
  for (const i of indexes) {
    await quiet(sh('ip', ['netns', 'del', netnsName(slot, i)]));
    await quiet(sh('ip', ['link', 'del', rootVeth(slot, i)]));
  }
  for (let i = 1; i <= 9; i++)
    if (existsSync(`/sys/class/net/${rootVeth(slot, i)}`)) await quiet(sh('ip', ['link', 'del', rootVeth(slot, i)]));
  await quiet(sh('ip', ['link', 'del', orchestratorVeth(slot)]));
  for (const i of indexes) removeCgroups(cgroupParent(slot, i));
  rmSync(join(BASE, String(slot)), { recursive: true, force: true });
}

/** Sweeps the slots of crashed runs, then claims a free one. */
async function claimSlot(): Promise<number> {
  mkdirSync(BASE, { recursive: true });
  for (let slot = 1; slot <= SLOTS; slot++) {
    const dir = join(BASE, String(slot));
    if (!existsSync(dir)) continue;
    const owner = Number(readFileSync(join(dir, 'owner'), 'utf8').trim() || 'NaN');
    const young = Date.now() - statSync(dir).mtimeMs < 30_000;
    if ((Number.isFinite(owner) && !alive(owner)) || (!Number.isFinite(owner) && !young)) await sweepSlot(slot).catch(() => undefined);
  }
  for (let slot = 1; slot <= SLOTS; slot++) {
    const dir = join(BASE, String(slot));
    try {
      mkdirSync(dir, { mode: 0o755 });
    } catch {
      continue;
    }
    writeFileSync(join(dir, 'owner'), String(process.pid));
    // Namespaces of this slot without a directory are leftovers too.
    await sweepNamespacesOnly(slot);
    return slot;
  }
  throw new Error(`no free netns slot under ${BASE} (all ${SLOTS} are owned by live processes)`);
}

async function sweepNamespacesOnly(slot: number): Promise<void> {
  const names = (await sh('ip', ['netns', 'list']).catch(() => ''))
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(`ec-mh${slot}-h`));
  for (const n of names) {
    killPids(await netnsPids(n));
    await quiet(sh('ip', ['netns', 'del', n]));
  }
  for (let i = 1; i <= 9; i++)
    if (existsSync(`/sys/class/net/${rootVeth(slot, i)}`)) await quiet(sh('ip', ['link', 'del', rootVeth(slot, i)]));
  await quiet(sh('ip', ['link', 'del', orchestratorVeth(slot)]));
}

export async function createNetnsCluster(count: number, opts: { prefix?: string } = {}): Promise<NetnsCluster> {
  if (count < 1 || count > 9) throw new RangeError('1..9 hosts');
  const slot = await claimSlot();
  const slotDir = join(BASE, String(slot));
  const orchestratorAddress = `10.231.${slot * 10}.1`;
  const hosts: NetnsHost[] = [];
  let agentEnv: AgentEnv | undefined;
  const cluster: NetnsCluster = {
    slot,
    orchestratorAddress,
    hosts,
    async loadImage(tag) {
      const tar = join(slotDir, `${tag.replace(/[^a-z0-9]+/gi, '_')}.tar`);
      if (!existsSync(tar)) await sh('docker', ['save', '-o', tar, tag], { timeoutMs: 120_000 });
      await Promise.all(hosts.map((h) => h.docker(['load', '-q', '-i', tar])));
    },
    async startAgents(env) {
      agentEnv = env;
      bundleAgent(slotDir);
      await Promise.all(hosts.map((h) => h.startAgent()));
    },
    async close() {
      for (const h of hosts) await h.killAgent().catch(() => undefined);
      await sweepSlot(slot);
    },
  };

  try {
    // The orchestrator's own address: a veth pair in the root namespace, both ends up.
    await sh('ip', ['link', 'add', orchestratorVeth(slot), 'type', 'veth', 'peer', 'name', `ecmh${slot}o1`]);
    await sh('ip', ['addr', 'add', `${orchestratorAddress}/32`, 'dev', orchestratorVeth(slot)]);
    await sh('ip', ['link', 'set', orchestratorVeth(slot), 'up']);
    await sh('ip', ['link', 'set', `ecmh${slot}o1`, 'up']);
    for (let i = 1; i <= count; i++) hosts.push(await createHost(slot, i, slotDir, opts.prefix ?? 'mh', () => agentEnv));
    await Promise.all(hosts.map((h) => h.startDockerd()));
  } catch (err) {
    await cluster.close().catch(() => undefined);
    throw err;
  }
  return cluster;
}

/** src/agent/index.ts as one ESM file next to a node_modules link (the agent's dependencies stay packages). */
function bundleAgent(slotDir: string): string {
  const dir = join(slotDir, 'agent');
  const outfile = join(dir, 'agent.mjs');
  if (existsSync(outfile)) return outfile;
  mkdirSync(dir, { recursive: true });
  symlinkSync(join(ORCHESTRATOR_DIR, 'node_modules'), join(dir, 'node_modules'));
  buildSync({
    entryPoints: [join(ORCHESTRATOR_DIR, 'src/agent/index.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile,
    logLevel: 'silent',
  });
  return outfile;
}

async function createHost(
  slot: number,
  i: number,
  slotDir: string,
  prefix: string,
  agentEnv: () => AgentEnv | undefined,
): Promise<NetnsHost> {
  const octet = hostOctet(slot, i);
  const netns = netnsName(slot, i);
  const address = `10.231.${octet}.2`;
  const rootAddress = `10.231.${octet}.1`;
  const dir = join(slotDir, `h${i}`);
  const socket = join(dir, 'docker.sock');
  const runtimeDir = join(dir, 'runtime');
  mkdirSync(runtimeDir, { recursive: true });
  mkdirSync(join(dir, 'cache'), { recursive: true });
  writeFileSync(join(dir, 'daemon.json'), '{}\n');

  await sh('ip', ['netns', 'add', netns]);
  await sh('ip', ['link', 'add', rootVeth(slot, i), 'type', 'veth', 'peer', 'name', nsVeth(slot, i)]);
  await sh('ip', ['link', 'set', nsVeth(slot, i), 'netns', netns]);
  await sh('ip', ['addr', 'add', `${rootAddress}/24`, 'dev', rootVeth(slot, i)]);
  await sh('ip', ['link', 'set', rootVeth(slot, i), 'up']);
  const inNs = (args: string[]) => sh('nsenter', [`--net=/var/run/netns/${netns}`, ...args]);
  await inNs(['ip', 'addr', 'add', `${address}/24`, 'dev', nsVeth(slot, i)]);
  await inNs(['ip', 'link', 'set', nsVeth(slot, i), 'up']);
  await inNs(['ip', 'link', 'set', 'lo', 'up']);
  await inNs(['ip', 'route', 'add', 'default', 'via', rootAddress]);

  let agent: ChildProcess | undefined;
  let agentExited: Promise<void> = Promise.resolve();
  const agentLog: string[] = [];
  const agentPort = 8081;
  const agentUrl = `http://${address}:${agentPort}`;
  const docker = (args: string[]) => sh('docker', ['-H', `unix://${socket}`, ...args], { timeoutMs: 120_000 });

  const host: NetnsHost = {
    index: i,
    id: `${prefix}-s${slot}-h${i}`,
    netns,
    address,
    dir,
    socket,
    agentUrl,
    agentLog,
    docker,
    async containers() {
      const out = await docker([
        'ps',
        '-a',
        '--filter',
        'label=orchestrator.managed=true',
        '--format',
        '{{.ID}} {{.State}} {{.Label "orchestrator.instance"}}',
      ]);
      const m = new Map<string, { id: string; state: string }>();
      for (const line of out.split('\n').filter((l) => l.trim())) {
        const [id, state, instanceId] = line.split(' ');
        if (instanceId) m.set(instanceId, { id: id!, state: state! });
      }
      return m;
    },
    async startDockerd() {
      const log = openSync(join(dir, 'dockerd.log'), 'a');
      const child = spawn(
        'nsenter',
        [
          `--net=/var/run/netns/${netns}`,
          'dockerd',
          '--data-root',
          join(dir, 'docker'),
          '--exec-root',
          join(dir, 'exec'),
          '--pidfile',
          join(dir, 'docker.pid'),
          '-H',
          `unix://${socket}`,
          '--bip',
          `10.232.${octet}.1/24`,
          '--cgroup-parent',
          `/${cgroupParent(slot, i)}`,
          '--config-file',
          join(dir, 'daemon.json'),
          '--live-restore',
          '--userland-proxy=false',
          '--shutdown-timeout',
          '3',
          '--log-level',
          'warn',
        ],
        { stdio: ['ignore', log, log], detached: true },
      );
      closeSync(log);
      child.unref();
      await bounded(
        `dockerd of ${netns}`,
        async () => {
          if (child.exitCode !== null)
            throw new Error(
              `dockerd of ${netns} exited with ${child.exitCode}: ${readFileSync(join(dir, 'dockerd.log'), 'utf8').slice(-1500)}`,
            );
          await docker(['version', '--format', '{{.Server.Version}}']);
          return true;
        },
        60_000,
        200,
      ).catch((err: unknown) => {
        if ((err as Error).message.includes('exited')) throw err;
        throw new Error(`${(err as Error).message}: ${readFileSync(join(dir, 'dockerd.log'), 'utf8').slice(-1500)}`);
      });
    },
    async stopDockerd(signal = 'SIGTERM') {
      const pidFile = join(dir, 'docker.pid');
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : NaN;
      if (!Number.isFinite(pid)) return;
      try {
        process.kill(pid, signal);
      } catch {
        return;
      }
      await bounded(`dockerd ${pid} to exit`, async () => !alive(pid), 30_000);
    },
    async startAgent() {
      const env = agentEnv();
      if (!env) throw new Error('startAgents() first');
      agentLog.length = 0;
      const child = spawn('nsenter', [`--net=/var/run/netns/${netns}`, process.execPath, bundleAgent(slotDir)], {
        cwd: ORCHESTRATOR_DIR,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/tmp',
          AGENT_ID: host.id,
          AGENT_ORCHESTRATOR_URL: env.orchestratorUrl,
          AGENT_TOKEN: env.token,
          AGENT_LISTEN_ADDRESS: address,
          AGENT_PORT: String(agentPort),
          AGENT_CONTROL_URL: agentUrl,
          AGENT_GAME_ADDRESS: address,
          AGENT_GAME_BIND_ADDRESS: address,
          AGENT_GAME_PORT_RANGE: '25600-25619',
          AGENT_RUNTIME_DIRECTORY: runtimeDir,
          AGENT_CACHE_DIRECTORY: join(dir, 'cache'),
          AGENT_DOCKER_SOCKET: socket,
          DOCKER_HOST: `unix://${socket}`,
          AGENT_DOCKER_NETWORK: 'endercloud',
          AGENT_HEARTBEAT_INTERVAL: '500ms',
          AGENT_STOP_TIMEOUT: '3s',
          AGENT_LOG_LEVEL: 'info',
          ...env.env,
        },
      });
      const keep = (b: Buffer) => {
        agentLog.push(b.toString());
        if (agentLog.length > 2000) agentLog.splice(0, 1000);
      };
      child.stdout!.on('data', keep);
      child.stderr!.on('data', keep);
      agent = child;
      agentExited = new Promise<void>((r) => child.once('exit', () => r()));
      const reap = (): void => void child.kill('SIGKILL');
      process.once('exit', reap);
      void agentExited.then(() => process.off('exit', reap));
      await bounded(
        `agent of ${netns} answers /health`,
        async () => {
          if (child.exitCode !== null)
            throw new Error(`agent of ${netns} exited with ${child.exitCode}: ${agentLog.join('').slice(-2000)}`);
          return (await fetch(`${agentUrl}/api/v1/health`, { signal: AbortSignal.timeout(1000) })).status < 500;
        },
        60_000,
        200,
      ).catch(async (err: unknown) => {
        child.kill('SIGKILL');
        throw err;
      });
    },
    async killAgent() {
      if (!agent || agent.exitCode !== null || agent.signalCode !== null) return;
      agent.kill('SIGKILL');
      await Promise.race([agentExited, sleep(10_000)]);
    },
    async kill() {
      await host.killAgent();
      for (let round = 0; round < 3; round++) {
        killPids(await netnsPids(netns));
        killPids(cgroupPids(cgroupParent(slot, i)));
        await sleep(100);
      }
      await bounded(
        `every process of ${netns} gone`,
        async () => (await netnsPids(netns)).length === 0 && cgroupPids(cgroupParent(slot, i)).length === 0,
        10_000,
      );
      await unmountUnder(join(dir, 'exec'));
      rmSync(join(dir, 'docker.pid'), { force: true });
    },
    async restore() {
      await host.startDockerd();
      await host.startAgent();
    },
    async partition() {
      await sh('ip', ['link', 'set', rootVeth(slot, i), 'down']);
    },
    async heal() {
      await sh('ip', ['link', 'set', rootVeth(slot, i), 'up']);
    },
  };
  return host;
}
