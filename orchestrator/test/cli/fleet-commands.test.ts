// ectl's fleet commands (spawn, despawn, allocate, release, fleet, idle-tiers)
// against a real orchestrator (socket, worker, supervisor, provisioner; SQLite
// in a temp dir) and the in-test agent of test/server/support.ts, whose
// servers pass the log readiness check, so spawn --wait reaches online.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator } from '../../src/server/orchestrator.js';
import { freePort } from '../support/registry.js';
import { heartbeatBody, startFakeAgent, until, type FakeAgent } from '../server/support.js';

const ADMIN = `admin-${'f'.repeat(24)}`;
let base: string;
let orchestrator: { url: string; stop(): Promise<void> };
let agent: FakeAgent;

async function ectl(args: string[]) {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    version: 'test',
    env: { configPath: join(base, 'config.json'), urlOverride: orchestrator.url, tokenOverride: ADMIN },
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

async function json<T>(args: string[]): Promise<T> {
  const r = await ectl([...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${orchestrator.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ectl-fleet-'));
  agent = await startFakeAgent();
  orchestrator = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
      ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
      ENDERCLOUD_SUPERVISE_INTERVAL: '100ms',
      ENDERCLOUD_COMMAND_RETRY_INITIAL: '10ms',
      ENDERCLOUD_COMMAND_RETRY_MAX: '40ms',
      ENDERCLOUD_COMMAND_MAX_ATTEMPTS: '2',
    }),
  );
  // One heartbeat for the whole file: a long declared interval keeps the host ONLINE (placeable) on a slow machine.
  const beat = await fetch(`${orchestrator.url}/api/v1/agents/host-a/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(heartbeatBody(agent.url, { heartbeatIntervalMs: 600_000 })),
  });
  expect(beat.status).toBe(200);
  expect(
    (
      await api('PUT', '/templates/mc/versions/1', {
        image: 'mc:1',
        resources: { memoryMb: 256 },
        readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 10_000, intervalMs: 100 },
        stop: { signal: 'SIGTERM', timeoutMs: 3000 },
        dataPaths: ['world'],
      })
    ).status,
  ).toBe(201);
  // No scaling policy: the provisioner leaves these groups alone, so the test decides every spawn.
  expect(
    (await api('PUT', '/groups/arena', { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] })).status,
  ).toBe(201);
  expect(
    (await api('PUT', '/groups/empty', { kind: 'ephemeral', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] })).status,
  ).toBe(201);
}, 60_000);

afterAll(async () => {
  await orchestrator?.stop();
  await agent?.close();
  rmSync(base, { recursive: true, force: true });
});

describe('ectl fleet commands', () => {
  it('spawn --wait answers once the instance is online; spawn without --wait answers at once', async () => {
    const r = await ectl(['spawn', 'arena', '--variant', 'v', '--name', 'arena-1', '--wait', '30s']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^instance arena-1 \(i-[0-9a-f]+\) is online at 127\.0\.0\.1:\d+\n$/);
    const later = await ectl(['spawn', 'arena', '--name', 'arena-2']);
    expect(later.code).toBe(0);
    expect(later.stdout).toMatch(/^instance arena-2 \(i-[0-9a-f]+\) spawning \(command [^)]+\)/);
    await until(async () => (await api('GET', '/instances/arena-2')).body.state === 'online', 'arena-2 online', 20_000);
  }, 60_000);

  it('allocate takes a Ready instance, the fleet table shows it allocated, release returns it', async () => {
    const a = await json<{ allocationId: string; instanceId: string; endpoint: string }>(['allocate', 'arena', '--variant', 'v']);
    expect(a.endpoint).toMatch(/^127\.0\.0\.1:\d+$/);
    const fleet = await ectl(['fleet', 'arena']);
    expect(fleet.code).toBe(0);
    const lines = fleet.stdout.split('\n');
    expect(lines[0]).toMatch(/^group arena: buffer 1 ready of 0 wanted \(0 starting\), 1 allocated$/);
    expect(lines[1]).toMatch(/^INSTANCE\s+STATE\s+CLASS\s+PLAYERS\s+ALLOCATED\s+NEXT\s+SLEEPS$/);
    // The next idle tier, or why none is ahead; the tiers in force and where they come from (here the system's default).
    expect(fleet.stdout).toMatch(
      new RegExp(
        `^arena-\\d\\s+online\\s+allocated\\s+0/\\?\\s+${a.allocationId}\\s+awake: allocated to a session\\s+10m:pause,6h:stop \\(system\\)$`,
        'm',
      ),
    );
    expect(fleet.stdout).toMatch(/^arena-\d\s+online\s+ready\s+0\/\?\s+-\s+-\s+10m:pause,6h:stop \(system\)$/m);

    const second = await ectl(['allocate', 'arena', '--label', 'team=red']);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/^error: CAPACITY_EXHAUSTED: .*\(HTTP 409\)/);

    const rel = await ectl(['release', a.allocationId]);
    expect(rel.stdout).toBe(`allocation ${a.allocationId} released (instance ${a.instanceId})\n`);
    expect((await json<{ counts: { allocated: number; ready: number } }>(['fleet', 'arena'])).counts).toMatchObject({
      allocated: 0,
      ready: 2,
    });
  }, 30_000);

  it('allocate from an empty buffer is a clean CAPACITY_EXHAUSTED; bad flags are usage errors (exit 2)', async () => {
    const r = await ectl(['allocate', 'empty']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: CAPACITY_EXHAUSTED: group empty has no Ready, unallocated instance/);
    expect((await ectl(['allocate', 'empty', '--label', 'novalue'])).code).toBe(2);
    expect((await ectl(['allocate', 'empty', '--wait', 'soon'])).stderr).toMatch(/--wait: "soon" is not a duration/);
    expect((await ectl(['despawn', 'arena-1', '--timeout', '10x'])).code).toBe(2);
    expect((await ectl(['fleet', 'nope'])).stderr).toMatch(/GROUP_NOT_FOUND/);
  });

  it('__complete instances lists instance names for the shell completion', async () => {
    const names = (await ectl(['__complete', 'instances'])).stdout.split('\n').filter(Boolean);
    expect(names).toEqual(expect.arrayContaining(['arena-1', 'arena-2']));
    expect((await ectl(['__complete', 'groups'])).stdout.split('\n')).toContain('arena');
  });

  it('idle-tiers set overrides the group for one instance (marked in the fleet table), off stops sleep, clear follows the group again', async () => {
    const set = await ectl(['idle-tiers', 'arena-2', 'set', '10m:pause,6h:stop']);
    expect(set.stderr).toBe('');
    expect(set.stdout).toBe('arena-2: idle tiers 10m:pause,6h:stop\n');
    expect((await ectl(['fleet', 'arena'])).stdout).toMatch(/^arena-2\s.*\[own tiers\]\s+\S+ \(instance\)$/m);
    // One tier is a policy (the API's array coercion once refused it: "body/idleTiers must be null").
    const one = await ectl(['idle-tiers', 'arena-2', 'set', '10m:pause']);
    expect(one).toEqual({ code: 0, stdout: 'arena-2: idle tiers 10m:pause\n', stderr: '' });
    expect((await json<{ idleTiers: unknown }>(['idle-tiers', 'arena-2', 'set', '30s:stop'])).idleTiers).toEqual([
      { after: '30s', afterMs: 30_000, action: 'stop' },
    ]);
    // A bad tier is a usage error, named, before anything is sent: the stored tiers stay.
    const explode = await ectl(['idle-tiers', 'arena-2', 'set', '10m:explode']);
    expect(explode).toMatchObject({ code: 2, stdout: '' });
    expect(explode.stderr).toBe('error: idle tiers[0].action: must be one of pause, stop, archive (got "explode")\n');
    const order = await ectl(['idle-tiers', 'arena-2', 'set', '1h:stop,10m:pause']);
    expect(order.code).toBe(2);
    expect(order.stderr).toMatch(/idle tiers\[1\]\.after: must be longer than idle tiers\[0\] \(1h\)/);
    expect((await ectl(['idle-tiers', 'arena-2', 'set', '10m:delete'])).code).toBe(2);
    expect((await ectl(['idle-tiers', 'arena-2', 'set', '10m'])).code).toBe(2);
    expect((await ectl(['idle-tiers', 'arena-2', 'wipe'])).code).toBe(2);
    expect((await ectl(['idle-tiers', 'arena-2', 'off'])).stdout).toBe(
      'arena-2: idle tiers off (never paused or stopped for being empty)\n',
    );
    expect((await json<{ idleTiers: unknown }>(['idle-tiers', 'arena-2', 'off'])).idleTiers).toEqual([]);
    expect((await ectl(['fleet', 'arena'])).stdout).toMatch(/^arena-2\s.*\[own tiers\]\s+\S+ \(instance\)$/m);
    expect((await ectl(['idle-tiers', 'arena-2', 'clear'])).stdout).toBe("arena-2: follows the group's idle tiers\n");
    expect((await ectl(['fleet', 'arena'])).stdout).not.toMatch(/\[own tiers\]/);
    expect((await ectl(['idle-tiers', 'arena-2', 'set', '30s:pause'])).stdout).toBe('arena-2: idle tiers 30s:pause\n');
    expect((await ectl(['idle-tiers', 'group:arena', 'off'])).stdout).toBe(
      'group:arena: idle tiers off (never paused or stopped for being empty)\n',
    );
    expect((await ectl(['idle-tiers', 'group:arena', 'clear'])).stdout).toBe("group:arena: follows the system's idle tiers\n");
    expect((await ectl(['idle-tiers', 'system', 'set', '20m:pause'])).stdout).toBe('system: idle tiers 20m:pause\n');
    expect((await ectl(['idle-tiers', 'system', 'clear'])).stdout).toBe('system: idle tiers 10m:pause,6h:stop (the configured default)\n');
  });

  it('despawn NAME drains and removes the instance per the savegame policy (archive by default)', async () => {
    const r = await ectl(['despawn', 'arena-1', '--timeout', '5s']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^despawn of arena-1 \(i-[0-9a-f]+\) requested \(command [^)]+\); it is \w+\n$/);
    await until(async () => (await api('GET', '/instances/arena-1')).body.state === 'archived', 'arena-1 archived', 30_000);
    expect((await json<{ instances: { name: string; class: string }[] }>(['fleet', 'arena'])).instances).toContainEqual(
      expect.objectContaining({ name: 'arena-1', class: 'archived' }),
    );
  }, 45_000);
});
