// Bench parts (b), (c) and (d), on the real Docker engine with the Minecraft-protocol
// test server (test/support/mc-server.ts), through the router stack of
// test/support/router-stack.ts (orchestrator + real agent + router, 127.0.0.1):
// (b) spawn-to-allocatable (POST /groups/:id/spawn with wait, then the
//     allocation's 201) vs a raw Engine API create+start+first status ping;
// (c) paused → Login Success and (d) stopped → Login Success through the
//     router, each against the raw Docker call + a login straight to a
//     container of the same image, in alternating rounds (bench/fleet-wake.ts).
import { docker } from '../test/support/docker.js';
import { pingStatus } from '../test/support/mc-server.js';
import { freePort } from '../test/support/registry.js';
import { RCON_PASSWORD_VARIABLE, startStack, until, type Stack } from '../test/support/router-stack.js';
import { benchConfig } from './bench-config.js';
import { median, must, printWake, wakeRounds } from './fleet-wake.js';

const PROBE_MS = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ContainerFigures {
  spawn: number;
  rawCreate: number;
  wakeDiff: number;
  coldRatio: number;
  rounds: number;
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
    const inst = await must<{ id: string; name: string; state: string }>(stack, 'POST', `/groups/${group}/spawn`, {
      variantId: 'v',
      wait: '60s',
    });
    const alloc = await must<{ allocationId: string; instanceId: string }>(stack, 'POST', `/groups/${group}/allocations`, {});
    if (i > 0) spawn.push(performance.now() - t);
    if (alloc.instanceId !== inst.id) throw new Error(`allocated ${alloc.instanceId}, spawned ${inst.id}`);
    await must(stack, 'DELETE', `/allocations/${alloc.allocationId}`);
    await deleteInstance(stack, inst.id, inst.name);

    const hostPort = await freePort();
    t = performance.now();
    const c = await docker().createContainer({
      name: `${stack.run}-raw-${i}`,
      Image: image,
      Labels: { 'orchestrator.host': stack.hostId },
      // On the stack's network, like the agent's containers (router-stack.ts names it `<run>-net`).
      ExposedPorts: { '25565/tcp': {} },
      HostConfig: { PortBindings: { '25565/tcp': [{ HostIp: '127.0.0.1', HostPort: String(hostPort) }] }, NetworkMode: `${stack.run}-net` },
    });
    await c.start();
    await until(
      'raw ping',
      async () => {
        try {
          return (await pingStatus('127.0.0.1', hostPort, 1000)).max > 0;
        } catch {
          await sleep(PROBE_MS - 10);
          return false;
        }
      },
      60_000,
      1,
    );
    if (i > 0) raw.push(performance.now() - t);
    await c.remove({ force: true });
  }
  return { spawn, raw };
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
    const template = await must<{ spec?: { image?: string }; image?: string }>(stack, 'GET', `/templates/${stack.run}-mc/versions/1`);
    const image = template.spec?.image ?? template.image;
    if (!image) throw new Error('the stack template has no image');
    await must(stack, 'PUT', `/templates/${group}/versions/1`, {
      image,
      resources: { memoryMb: 256 },
      containerPort: 25565,
      env: { ACCEPTS_TRANSFERS: 'true', MAX_PLAYERS: '50' },
      variables: [{ name: RCON_PASSWORD_VARIABLE, type: 'string', secret: true }],
      readiness: { kind: 'minecraft', startupTimeoutMs: 60_000, intervalMs: PROBE_MS, probeTimeoutMs: 1000 },
      stop: { signal: 'SIGTERM', timeoutMs: 5000, rcon: { port: 25575, passwordVariable: RCON_PASSWORD_VARIABLE } },
    });
    await must(stack, 'PUT', `/groups/${group}`, { kind: 'ephemeral', variants: [{ id: 'v', template: { name: group, version: '1' } }] });
    const s = await spawnRounds(stack, group, image, rounds);
    const spawn = median(s.spawn);
    const rawCreate = median(s.raw);
    console.log(`(b) spawn-to-allocatable, Minecraft-protocol test server, N=${rounds} each (alternated, after one warm-up round)`);
    console.log(`    POST /groups/:id/spawn {wait} + POST /allocations → 201   median ${spawn.toFixed(0)} ms`);
    console.log(`    raw Engine create+start+first status ping                 median ${rawCreate.toFixed(0)} ms`);
    console.log(`    ratio                                                     ${(spawn / rawCreate).toFixed(2)} (goal <= 1.15)`);
    const w = printWake(await wakeRounds(stack, group, rounds), rounds);
    const f: ContainerFigures = { spawn, rawCreate, ...w, rounds };
    return f;
  } finally {
    openStacks.delete(stack);
    await stack.close();
  }
}
