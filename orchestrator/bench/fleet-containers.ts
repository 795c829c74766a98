// Bench parts (b) and (c), on the real Docker engine with the Minecraft-protocol
// test server (test/support/mc-server.ts), through the router stack of
// test/support/router-stack.ts (orchestrator + real agent + router, 127.0.0.1):
// (b) spawn-to-allocatable (POST /groups/:id/spawn with wait, then the
//     allocation's 201) vs a raw Engine API create+start+first status ping;
// (c) paused-to-playable through the router (a minecraft-protocol login to a
//     `group:` target whose only member is Paused → Login Success) vs a raw
//     `docker unpause` + first ping of a container of the same image, in
//     alternating rounds; each pause is of an empty world that has worked
//     through its previous logins (bench/wake-probe.ts says why).
import { docker } from '../test/support/docker.js';
import { pingStatus } from '../test/support/mc-server.js';
import { freePort } from '../test/support/registry.js';
import { RCON_PASSWORD_VARIABLE, startStack, until, type Stack } from '../test/support/router-stack.js';
import { benchConfig } from './bench-config.js';
import { pausedLogin, runningLogin, startRawWake } from './wake-probe.js';

const PROBE_MS = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface ContainerFigures { spawn: number; rawCreate: number; wake: number; seenRunning: number; warmLogin: number; rawUnpause: number; rounds: number }

async function must<T>(stack: Stack, method: string, path: string, body?: unknown): Promise<T> {
  const r = await stack.api<T>(method, `/api/v1${path}`, body);
  if (r.status >= 300) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

async function deleteInstance(stack: Stack, id: string, name: string): Promise<void> {
  await must(stack, 'DELETE', `/instances/${id}`, { scopes: ['container', 'technical', 'player_data'], confirm: name });
  await until(`instance ${name} deleted`, async () => (await stack.api('GET', `/api/v1/instances/${id}`)).status === 404, 60_000, 50);
}

async function spawnRounds(stack: Stack, group: string, image: string, rounds: number): Promise<{ spawn: number[]; raw: number[] }> {
  const spawn: number[] = [];
  const raw: number[] = [];
  for (let i = 0; i <= rounds; i++) {
    // Round 0 warms the image, the network and the code paths; it is not counted.
    let t = performance.now();
    const inst = await must<{ id: string; name: string; state: string }>(stack, 'POST', `/groups/${group}/spawn`, { variantId: 'v', wait: '60s' });
    const alloc = await must<{ allocationId: string; instanceId: string }>(stack, 'POST', `/groups/${group}/allocations`, {});
    if (i > 0) spawn.push(performance.now() - t);
    if (alloc.instanceId !== inst.id) throw new Error(`allocated ${alloc.instanceId}, spawned ${inst.id}`);
    await must(stack, 'DELETE', `/allocations/${alloc.allocationId}`);
    await deleteInstance(stack, inst.id, inst.name);

    const hostPort = await freePort();
    t = performance.now();
    const c = await docker().createContainer({
      name: `${stack.run}-raw-${i}`, Image: image, Labels: { 'orchestrator.host': stack.hostId },
      // On the stack's network, like the agent's containers (router-stack.ts names it `<run>-net`).
      ExposedPorts: { '25565/tcp': {} }, HostConfig: { PortBindings: { '25565/tcp': [{ HostIp: '127.0.0.1', HostPort: String(hostPort) }] }, NetworkMode: `${stack.run}-net` },
    });
    await c.start();
    await until('raw ping', async () => {
      try {
        return (await pingStatus('127.0.0.1', hostPort, 1000)).max > 0;
      } catch {
        await sleep(PROBE_MS - 10);
        return false;
      }
    }, 60_000, 1);
    if (i > 0) raw.push(performance.now() - t);
    await c.remove({ force: true });
  }
  return { spawn, raw };
}

async function wakeRounds(stack: Stack, group: string, rounds: number): Promise<{ wake: number[]; seen: number[]; warm: number[]; raw: number[]; stages: WakeStages[] }> {
  const inst = await must<{ id: string; endpoint: { host: string; port: number } | null }>(stack, 'POST', `/groups/${group}/spawn`, { variantId: 'v', wait: '60s' });
  const endpoint = inst.endpoint;
  if (!endpoint) throw new Error('the spawned member has no endpoint');
  const router = await stack.startRouter(`try = ["fleet"]\n[servers]\nfleet = "group:${group}"\n`);
  const rawWake = await startRawWake({ 'orchestrator.host': stack.hostId });
  const wake: number[] = [];
  const seen: number[] = [];
  const warm: number[] = [];
  const raw: number[] = [];
  const stages: WakeStages[] = [];
  try {
    // Alternated round by round, so both see the same machine load; round 0 is not counted
    // (the first login into a fresh container pays its warm-up).
    for (let i = 0; i <= rounds; i++) {
      const epochAt = Date.now() - performance.now(); // performance.now() → epoch ms, for the store's times
      const login = await pausedLogin(stack, router, inst.id, endpoint, `Fleet${i}`);
      if (i > 0) stages.push(await wakeStages(stack, inst.id, epochAt + login.connectedAt, epochAt + login.runningAt, login.ms));
      const plain = await runningLogin(router, endpoint, `Warm${i}`);
      const rawMs = await rawWake.round();
      if (i > 0) {
        wake.push(login.ms);
        seen.push(login.runningAt - login.connectedAt);
        warm.push(plain);
        raw.push(rawMs);
      }
    }
  } finally {
    await router.close();
    await rawWake.remove();
  }
  return { wake, seen, warm, raw, stages };
}

/** Where a wake's time goes, in ms from the login's TCP connect. */
export interface WakeStages { commandCreated: number; unpauseCalled: number; unpauseDone: number; online: number; routerRunning: number; loginSuccess: number }

/** The stages of the last wake of `id`: its resume command, the agent's unpause call, the `online` transition. */
async function wakeStages(stack: Stack, id: string, connectedAt: number, runningAt: number, loginMs: number): Promise<WakeStages> {
  const store = stack.orchestrator.ctx.store;
  const [cmd] = (await store.commands.list({ instanceId: id })).filter((c) => c.kind === 'resume').sort((a, b) => b.createdAt - a.createdAt);
  const [online] = (await store.history.list(id, { limit: 5 })).filter((h) => h.to === 'online');
  const calls = stack.agent.logLines.filter((l) => typeof (l.req as { url?: string } | undefined)?.url === 'string' && (l.req as { url: string }).url.endsWith('/unpause'));
  const call = calls.at(-1);
  const done = call ? stack.agent.logLines.find((l) => l.requestId === call.requestId && l.msg === 'request completed') : undefined;
  const at = (t: unknown): number => (typeof t === 'number' ? t - connectedAt : Number.NaN);
  return {
    commandCreated: at(cmd?.createdAt), unpauseCalled: at(call?.time), unpauseDone: at(done?.time), online: at(online?.at), routerRunning: runningAt - connectedAt, loginSuccess: loginMs,
  };
}

/** What an aborted run (deadline, Ctrl-C) still has to tear down: containers by label, the network, temp dirs. */
export const openStacks = new Set<Stack>();

export async function containerBench(): Promise<ContainerFigures> {
  const rounds = benchConfig.fleetRounds;
  // 10 beats (3 s) before a host is OFFLINE, as in test/fleet: on a loaded 2-core machine a late heartbeat must not make the fleet Stale mid-run.
  const stack = await startStack('bench-fleet', { env: { ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '10' } });
  openStacks.add(stack);
  try {
    const group = `${stack.run}-fleet`;
    const template = (await must<{ spec?: { image?: string }; image?: string }>(stack, 'GET', `/templates/${stack.run}-mc/versions/1`));
    const image = template.spec?.image ?? template.image;
    if (!image) throw new Error('the stack template has no image');
    await must(stack, 'PUT', `/templates/${group}/versions/1`, {
      image, resources: { memoryMb: 256 }, containerPort: 25565, env: { ACCEPTS_TRANSFERS: 'true', MAX_PLAYERS: '50' },
      variables: [{ name: RCON_PASSWORD_VARIABLE, type: 'string', secret: true }],
      readiness: { kind: 'minecraft', startupTimeoutMs: 60_000, intervalMs: PROBE_MS, probeTimeoutMs: 1000 },
      stop: { signal: 'SIGTERM', timeoutMs: 5000, rcon: { port: 25575, passwordVariable: RCON_PASSWORD_VARIABLE } },
    });
    await must(stack, 'PUT', `/groups/${group}`, { kind: 'ephemeral', variants: [{ id: 'v', template: { name: group, version: '1' } }] });
    const s = await spawnRounds(stack, group, image, rounds);
    const w = await wakeRounds(stack, group, rounds);
    const f: ContainerFigures = { spawn: median(s.spawn), rawCreate: median(s.raw), wake: median(w.wake), seenRunning: median(w.seen), warmLogin: median(w.warm), rawUnpause: median(w.raw), rounds };
    console.log(`(b) spawn-to-allocatable, Minecraft-protocol test server, N=${rounds} each (alternated, after one warm-up round)`);
    console.log(`    POST /groups/:id/spawn {wait} + POST /allocations → 201   median ${f.spawn.toFixed(0)} ms`);
    console.log(`    raw Engine create+start+first status ping                 median ${f.rawCreate.toFixed(0)} ms`);
    console.log(`    ratio                                                     ${(f.spawn / f.rawCreate).toFixed(2)} (goal <= 1.15)`);
    console.log(`(c) paused-to-playable through the router (group: target, login → Login Success), N=${rounds} each (alternated; each pause of an empty, idle world)`);
    console.log(`    router login of a Paused fleet member                     median ${f.wake.toFixed(0)} ms`);
    console.log(`    raw docker unpause + first status ping                    median ${f.rawUnpause.toFixed(0)} ms`);
    console.log(`    difference                                                ${(f.wake - f.rawUnpause).toFixed(0)} ms (goal <= 100)`);
    console.log(`    of which: login → router sees Running ${f.seenRunning.toFixed(0)} ms; the same login to the Running member ${f.warmLogin.toFixed(0)} ms (the backend's own login cost)`);
    const stage = (k: keyof WakeStages): string => median(w.stages.map((x) => x[k])).toFixed(0);
    console.log(`    stages (median ms after the connect): resume command created ${stage('commandCreated')}, agent unpause called ${stage('unpauseCalled')}, unpause answered ${stage('unpauseDone')}, online ${stage('online')}, router sees Running ${stage('routerRunning')}, Login Success ${stage('loginSuccess')}`);
    return f;
  } finally {
    openStacks.delete(stack);
    await stack.close();
  }
}
