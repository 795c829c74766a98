// The first hour of a new operator (issue 20), end to end: the README's run
// command (`npm start`) as a process on a fresh data dir, then only ectl and a
// real minecraft-protocol client on the router's port, with every feature on:
// apply the example network offline, join every group by its address, leave,
// watch a survival world pause and then stop through its pre-stop backup, wake
// it by a join from stopped and from paused, the lobby's buffer refilled after
// an allocation, scale down and back up, a min-0 fleet woken from zero by a
// join, and its limit holding under concurrent spawns. Timings are shortened
// by an applied copy of the example file and `ectl idle-tiers`, as an operator
// would; nothing else is changed behind the CLI's back.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join as pathJoin } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomPortRange } from '../support/agent-harness.js';
import { stopGroup } from '../support/process-group.js';
import { removeContainersByLabel, uniqueId } from '../support/docker.js';
import { loginBot, type Bot } from '../support/mc-server.js';
import { freePort } from '../support/registry.js';
import { until } from '../support/router-stack.js';

type Loose = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ROOT = pathJoin(import.meta.dirname, '..', '..');
const EXAMPLES = pathJoin(ROOT, '..', 'examples');
const agentId = uniqueId('journey');
/** The router's default login rate limit per address is 3 s. */
const LOGIN_GAP_MS = 3200;
const dirs: string[] = [];
const bots: Bot[] = [];
let stack: ChildProcess | undefined;
let out = '';
let url = '';
let token = '';
let routerPort = 0;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The operator's ectl: the built binary the banner prints, with the stack's URL and admin token. */
function ectl(args: string[], timeoutMs = 120_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [pathJoin(ROOT, 'bin', 'ectl.js'), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ENDERCLOUD_SFTP_PORT: '0', HOME: dirs[0], ENDERCLOUD_URL: url, ENDERCLOUD_TOKEN: token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`ectl ${args.join(' ')} did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function ok(args: string[], timeoutMs?: number): Promise<string> {
  const r = await ectl(args, timeoutMs);
  if (r.code !== 0) throw new Error(`ectl ${args.join(' ')} exited ${r.code}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

const okJson = async <T = Loose>(args: string[], timeoutMs?: number): Promise<T> =>
  JSON.parse(await ok([...args, '--json'], timeoutMs)) as T;

/** Reads for the waits (the operator would watch `ectl fleet` or the panel). */
async function get(path: string): Promise<Loose> {
  const res = await fetch(`${url}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
  return (await res.json()) as Loose;
}

const instancesOf = async (group: string): Promise<Loose[]> =>
  ((await get('/instances')).instances as Loose[]).filter((i) => i.groupId === group);
const history = async (id: string): Promise<Loose[]> => (await get(`/instances/${id}/history?limit=200`)).history as Loose[];

async function waitState(id: string, state: string, timeoutMs = 30_000): Promise<Loose> {
  let last: Loose = {};
  try {
    return await until(
      `instance ${id} ${state}`,
      async () => {
        last = await get(`/instances/${id}`);
        return last.state === state ? last : undefined;
      },
      timeoutMs,
      100,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last ${String(last.state)} (${String(last.stateReason)})`);
  }
}

/** A player joining by the address the banner printed for a group (the handshake's host), through the router. */
async function join(groupHost: string, name: string): Promise<Bot> {
  const bot = await loginBot('127.0.0.1', routerPort, name, { virtualHost: groupHost, timeoutMs: 60_000 });
  bots.push(bot);
  return bot;
}

/** The example file with the operator's shorter timings, its layer paths made absolute (it is written elsewhere). */
function quickExample(): string {
  const text = readFileSync(pathJoin(EXAMPLES, 'network.yml'), 'utf8')
    .replace(/^(\s+)(lobby-config|survival-config): layers\//gm, `$1$2: ${EXAMPLES}/layers/`)
    .replace(/whenEmptyFor: \S+/g, 'whenEmptyFor: 3s')
    .replace(/cooldown: \S+/g, 'cooldown: 1s');
  const file = pathJoin(dirs[0]!, 'network-quick.yml');
  writeFileSync(file, text);
  return file;
}

beforeAll(async () => {
  const dataDir = mkdtempSync(pathJoin(tmpdir(), 'ec-journey-'));
  dirs.push(dataDir);
  const range = randomPortRange(20);
  routerPort = await freePort();
  stack = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      ENDERCLOUD_SFTP_PORT: '0',
      HOME: dataDir,
      ENDERCLOUD_LOG_LEVEL: 'warn',
      ENDERCLOUD_DATA_DIR: dataDir,
      ENDERCLOUD_LISTEN: '127.0.0.1:0',
      ENDERCLOUD_ROUTER_BIND: `127.0.0.1:${routerPort}`,
      AGENT_ID: agentId,
      AGENT_PORT: String(await freePort()),
      AGENT_LOG_LEVEL: 'warn',
      AGENT_GAME_PORT_RANGE: `${range.first}-${range.last}`,
      AGENT_HEARTBEAT_INTERVAL: '1s',
      // Faster loops than the defaults, so the hour fits in minutes; the behaviour is the same.
      ENDERCLOUD_PROVISION_INTERVAL: '250ms',
      ENDERCLOUD_SUPERVISE_INTERVAL: '250ms',
      ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
      ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '10',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  stack.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  stack.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  await until(
    'the banner of npm start',
    () => {
      if (stack!.exitCode !== null) throw new Error(`npm start exited ${stack!.exitCode}: ${out}`);
      return /Ctrl-C stops/.test(out) || undefined;
    },
    90_000,
    100,
  );
  url = /API\s+(http:\/\/127\.0\.0\.1:\d+)\/api\/v1/.exec(out)![1]!;
  token = readFileSync(/admin token\s+(\S+)/.exec(out)![1]!, 'utf8').trim();
  await until('the local agent ONLINE', async () => (await get(`/hosts/${agentId}`)).status === 'ONLINE' || undefined, 60_000, 200);
}, 120_000);

afterAll(async () => {
  for (const b of bots) await b.end().catch(() => undefined);
  if (stack) await stopGroup(stack);
  await removeContainersByLabel({ 'orchestrator.host': agentId });
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 60_000);

describe('the first hour, through npm start, ectl and a real client', () => {
  it('the banner says how to join each group, that sleep is on, and the fast ectl', () => {
    expect(out).toMatch(/sleep\s+on by default: empty worlds pause after 10 min and stop after 6 h/);
    expect(out).toMatch(/\.\/bin\/ectl\.js apply -f \.\.\/examples\/network\.yml/);
    expect(out).not.toMatch(/npx --no-install ectl/);
  });

  it('apply -f ../examples/network.yml works offline as printed, pushes its layers, and is idempotent', async () => {
    const first = await ectl(['apply', '-f', '../examples/network.yml']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/lobby-config/);
    expect(await ok(['apply', '-f', '../examples/network.yml'])).toMatch(/nothing to do/);
    // The operator's shorter timings, and a survival world that sleeps fast.
    await ok(['apply', '-f', quickExample()]);
    expect(await ok(['idle-tiers', 'group:survival', 'set', '3s:pause,8s:stop'])).toBe('group:survival: idle tiers 3s:pause,8s:stop\n');
    expect(
      (await get('/audit?limit=500')).entries.filter((e: Loose) => e.result !== 'ok').map((e: Loose) => `${e.action} ${e.errorCode}`),
    ).toEqual([]);
  }, 120_000);

  let survival = '';
  let leftAt = 0;
  it('every group is joinable by its address: lobby (its buffer), survival (a created world), minigame (spawned from zero)', async () => {
    const created = await okJson(
      ['instances', 'create', '--group', 'survival', '--variant', 'vanilla', '--name', 'survival-1', '--wait', '--timeout', '90'],
      120_000,
    );
    survival = created.id as string;
    expect(created.state).toBe('online');
    await until('one Ready lobby', async () => (await get('/groups/lobby/fleet')).buffer.ready >= 1 || undefined, 60_000, 200);
    expect(await instancesOf('minigame')).toEqual([]);
    // One after another: the router allows one login per address every 3 s (limits.login_ratelimit).
    const players: Bot[] = [];
    for (const [host, name] of [
      ['lobby.localhost', 'Lobbyist'],
      ['survival.localhost', 'Settler'],
      ['minigame.localhost', 'Gamer'],
    ] as const) {
      if (players.length > 0) await new Promise((r) => setTimeout(r, LOGIN_GAP_MS));
      players.push(await join(host, name));
    }
    expect((await instancesOf('minigame')).length).toBe(1);
    leftAt = Date.now();
    for (const p of players) await p.end();
  }, 150_000);

  it('an empty survival world pauses, then stops through its pre-stop backup; never error', async () => {
    // The world may already be asleep (the joins took a while): its history tells what happened since they left.
    await waitState(survival, 'stopped', 40_000);
    const all = await history(survival);
    const since = all
      .filter((h) => Date.parse(String(h.at)) >= leftAt)
      .map((h) => h.to)
      .reverse();
    expect(since, `left at ${new Date(leftAt).toISOString()}: ${JSON.stringify(all.map((h) => [h.at, h.to, h.reason]))}`).toEqual(
      expect.arrayContaining(['pausing', 'paused', 'stopped']),
    );
    expect(since.indexOf('paused')).toBeLessThan(since.lastIndexOf('stopped'));
    await until(
      'the pre-stop backup is in the history',
      async () => (await history(survival)).some((h) => /backup \S+ written/.test(String(h.reason))) || undefined,
      20_000,
    );
    expect((await history(survival)).map((h) => h.to)).not.toContain('error');
    expect((await get(`/instances/${survival}/backups`)).backups).not.toHaveLength(0);
  }, 120_000);

  it('a join wakes it from stopped, and again from paused', async () => {
    const cold = await join('survival.localhost', 'Settler');
    expect((await get(`/instances/${survival}`)).state).toBe('online');
    await cold.end();
    await waitState(survival, 'paused', 30_000);
    const warm = await join('survival.localhost', 'Settler');
    expect((await get(`/instances/${survival}`)).state).toBe('online');
    await warm.end();
  }, 150_000);

  it('an allocation takes the Ready lobby, the buffer refills, a release and scale-down shrink it, the next allocation grows it again', async () => {
    const alloc = await okJson(['allocate', 'lobby']);
    expect(alloc.allocationId).toMatch(/\S/);
    await until(
      'the buffer refilled beside the allocation',
      async () => {
        const f = await get('/groups/lobby/fleet');
        return (f.counts.allocated === 1 && f.buffer.ready >= 1) || undefined;
      },
      60_000,
      200,
    );
    await ok(['release', alloc.allocationId as string]);
    await until(
      'scaled down to one lobby',
      async () => (await instancesOf('lobby')).filter((i) => i.state !== 'deleting').length === 1 || undefined,
      60_000,
      200,
    );
    const again = await okJson(['allocate', 'lobby']);
    await until('scaled up again', async () => (await get('/groups/lobby/fleet')).buffer.ready >= 1 || undefined, 60_000, 200);
    await ok(['release', again.allocationId as string]);
  }, 180_000);

  it('the min-0 fleet scales to zero when empty, and a join spawns it from zero', async () => {
    await until('minigame scaled to zero', async () => (await instancesOf('minigame')).length === 0 || undefined, 60_000, 200);
    const gamer = await join('minigame.localhost', 'Gamer');
    expect((await instancesOf('minigame')).length).toBe(1);
    await gamer.end();
  }, 120_000);

  it('concurrent spawns never pass the fleet limit, and the refusals name it', async () => {
    const before = (await instancesOf('minigame')).length;
    const runs = await Promise.all(Array.from({ length: 6 }, () => ectl(['spawn', 'minigame'])));
    const refused = runs.filter((r) => r.code !== 0);
    expect(runs.length - refused.length).toBeLessThanOrEqual(4 - before);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    for (const r of refused) expect(r.stderr).toMatch(/CAP_REACHED: .*maxInstances \(4\)/);
    expect((await instancesOf('minigame')).length).toBeLessThanOrEqual(4);
  }, 120_000);
});
