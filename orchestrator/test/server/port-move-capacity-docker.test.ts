// Two seams of a small host on the real Docker engine (in-process orchestrator
// on SQLite, real in-process agent, the Minecraft-protocol test server image):
// a start whose port move finds no free port keeps the world's container and
// ends in `error` with a reason that says what to do; and a create that fails
// before its container exists (an image from a refused registry) gives its
// memory back, so the next placement on that host fits.

import { createServer, type Server } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomPortRange, type TestAgent } from '../support/agent-harness.js';
import { docker, uniqueId } from '../support/docker.js';
import { ensureImage } from '../support/images.js';
import { mcServerImage, pingStatus } from '../support/mc-server.js';
import { startRealAgentStack, waitFor, type RealAgentStack } from '../support/real-agent-stack.js';
import type { Loose } from './support.js';

const AGENT_ID = `${uniqueId('pmc')}-host`;
/** A refused registry: the pull fails at once, and for good. */
const UNPULLABLE = '127.0.0.1:1/none:latest';
const BIG_MB = 256;
const TINY_MB = 192;
/** Room for exactly one big instance (or one tiny one): 100 MiB more, less than a second one. */
const HOST_MB = BIG_MB + 100;

let stack: RealAgentStack;
let agent: TestAgent;
let call: RealAgentStack['call'];
const portRange = randomPortRange(3);

const get = async (id: string): Promise<Loose> => (await call('GET', `/instances/${id}`)).body;
const reservedMb = async (): Promise<number> => (await call('GET', `/hosts/${AGENT_ID}`)).body.memoryReservedMb as number;
const seedOf = (id: string): string =>
  (JSON.parse(readFileSync(join(agent.runtimeDirectory, 'instances', id, 'level.json'), 'utf8')) as { seed: string }).seed;

async function waitState(id: string, state: string, timeoutMs = 30_000): Promise<Loose> {
  let last: Loose = {};
  try {
    return await waitFor(
      `instance ${id} ${state}`,
      async () => {
        last = await get(id);
        return last.state === state && !last.activeAction ? last : undefined;
      },
      timeoutMs,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last ${last.state} (${last.stateReason})`);
  }
}

async function create(variantId: string, name: string): Promise<string> {
  const res = await call('POST', '/instances', { groupId: 'pm', variantId, name });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.id as string;
}

async function containersOf(id: string) {
  return docker().listContainers({ all: true, filters: { label: [`orchestrator.instance=${id}`, `orchestrator.host=${AGENT_ID}`] } });
}

async function deleteAndWait(id: string): Promise<void> {
  expect((await call('DELETE', `/instances/${id}`)).status).toBe(202);
  await waitFor(`instance ${id} deleted`, async () => ((await call('GET', `/instances/${id}`)).status === 404 ? true : undefined));
}

/** Listens on every port of the range nothing else holds (what takes a sleeping world's port, and all the others). */
async function squatRange(): Promise<Map<number, Server>> {
  const held = new Map<number, Server>();
  for (let port = portRange.first; port <= portRange.last; port++) {
    const server = createServer();
    const ok = await new Promise<boolean>((resolve) =>
      server.once('error', () => resolve(false)).listen(port, '127.0.0.1', () => resolve(true)),
    );
    if (ok) held.set(port, server);
  }
  return held;
}

const unsquat = (server: Server | undefined) => new Promise((r) => (server ? server.close(r) : r(undefined)));

beforeAll(async () => {
  const image = await ensureImage(mcServerImage);
  stack = await startRealAgentStack({
    agentId: AGENT_ID,
    portRange,
    env: {
      ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
      ENDERCLOUD_COMMAND_RETRY_MAX: '500ms',
      ENDERCLOUD_COMMAND_LEASE: '2s',
      ENDERCLOUD_UNKNOWN_GRACE: '10m',
    },
    heartbeat: {
      resources: {
        cpuCount: 2,
        memoryTotalBytes: HOST_MB * 1024 * 1024,
        memoryAvailableBytes: HOST_MB * 1024 * 1024,
        diskFreeBytes: 10 * 1024 ** 3,
      },
    },
  });
  ({ agent, call } = stack);
  const template = (img: string) => ({
    image: img,
    resources: { memoryMb: BIG_MB },
    containerPort: 25565,
    readiness: { kind: 'minecraft', startupTimeoutMs: 20_000, intervalMs: 150, probeTimeoutMs: 1000 },
    stop: { signal: 'SIGTERM', timeoutMs: 2000 },
  });
  expect((await call('PUT', '/templates/pm/versions/1', template(image))).status).toBe(201);
  expect((await call('PUT', '/templates/pm-missing/versions/1', template(UNPULLABLE))).status).toBe(201);
  expect(
    (
      await call('PUT', '/groups/pm', {
        kind: 'persistent',
        variants: [
          { id: 'big', template: { name: 'pm', version: '1' } },
          { id: 'tiny', template: { name: 'pm', version: '1' }, resources: { memoryMb: TINY_MB } },
          { id: 'missing', template: { name: 'pm-missing', version: '1' } },
        ],
      })
    ).status,
  ).toBe(201);
});

afterAll(async () => {
  await stack?.close();
});

describe('a small host on the real engine', () => {
  it('a port move with no free port keeps the container: error with the reason; once its port is free, a start brings the same container online with the world', async () => {
    const id = await create('tiny', 'pm-squat');
    const first = await waitState(id, 'online');
    const oldPort = (first.endpoint as { port: number }).port;
    const seed = seedOf(id);
    const [container] = await containersOf(id);
    expect((await call('POST', `/instances/${id}/stop`)).status).toBe(202);
    await waitState(id, 'stopped');
    const squatters = await squatRange();
    try {
      expect(squatters.has(oldPort)).toBe(true);
      expect((await call('POST', `/instances/${id}/start`)).status).toBe(202);
      const failed = await waitState(id, 'error');
      expect(failed.stateReason).toContain(
        `host port ${oldPort} is taken and no other port of ${portRange.first}-${portRange.last} is free on host ${AGENT_ID}`,
      );
      expect(failed.stateReason).toContain('free a port, then start it');
      // The container and the world are still there, untouched.
      expect((await containersOf(id)).map((c) => c.Id)).toEqual([container!.Id]);
      expect(seedOf(id)).toBe(seed);

      await unsquat(squatters.get(oldPort));
      squatters.delete(oldPort);
      expect((await call('POST', `/instances/${id}/start`)).status).toBe(202);
      const online = await waitState(id, 'online');
      expect(online.endpoint).toMatchObject({ port: oldPort });
      expect((await containersOf(id)).map((c) => c.Id)).toEqual([container!.Id]);
      expect((await pingStatus('127.0.0.1', oldPort, 2000)).max).toBeGreaterThan(0);
      expect(seedOf(id)).toBe(seed);
    } finally {
      for (const s of squatters.values()) await unsquat(s);
    }
    await deleteAndWait(id);
  });

  it('a create whose image cannot be pulled fails at once and frees its memory: the next create of the same size is placed on that host; its start reserves again', async () => {
    const before = await reservedMb();
    expect(HOST_MB - before).toBeGreaterThanOrEqual(BIG_MB); // room for exactly one big instance
    expect(HOST_MB - before - BIG_MB).toBeLessThan(BIG_MB);
    const startedAt = Date.now();
    const bad = await create('missing', 'pm-bad');
    const failed = await waitState(bad, 'error');
    expect(Date.now() - startedAt).toBeLessThan(10_000); // one attempt, not eight with backoff
    expect(failed.stateReason).toMatch(/create failed: .*IMAGE_PULL_FAILED|create failed: .*pulling image/);
    expect(failed.stateReason).toContain(`its ${BIG_MB} MiB on host ${AGENT_ID} were released`);
    const commands = (await call('GET', `/commands?instanceId=${bad}`)).body.commands as Loose[];
    expect(commands.find((c) => c.kind === 'create')).toMatchObject({ status: 'failed', attempts: 1 });
    expect(await reservedMb()).toBe(before);

    const good = await create('big', 'pm-good');
    expect((await get(good)).hostId).toBe(AGENT_ID);
    await waitState(good, 'online');
    expect(await reservedMb()).toBe(before + BIG_MB);

    // A start of the failed one needs its room again: there is none now.
    const refused = await call('POST', `/instances/${bad}/start`);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.error.code).toBe('NO_CAPACITY');
    expect((await get(bad)).state).toBe('error');

    await deleteAndWait(good);
    expect(await reservedMb()).toBe(before);
    // Now it fits: the start reserves and runs the create again (which fails again, and gives the room back).
    expect((await call('POST', `/instances/${bad}/start`)).status).toBe(202);
    await waitFor(
      'the re-run create',
      async () =>
        ((await call('GET', `/commands?instanceId=${bad}`)).body.commands as Loose[]).filter((c) => c.kind === 'create').length === 2,
    );
    await waitState(bad, 'error');
    expect(await reservedMb()).toBe(before);
    // Deleting it does not release what it no longer holds.
    await deleteAndWait(bad);
    expect(await reservedMb()).toBe(before);
  });
});
