// ectl hosts unclaimed / adopt / unclaimed-delete against a real in-process
// orchestrator (fresh SQLite data dir) and a simulated agent that already runs
// managed containers the store has never seen.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulatedAgents, type SimulatedAgents, type SimulatedContainer } from '../../bench/simulated-agents.js';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator } from '../../src/server/orchestrator.js';
import { uniqueId } from '../support/docker.js';
import { freePort } from '../support/registry.js';

const ADMIN_TOKEN = `admin-${'u'.repeat(24)}`;
const hostId = uniqueId('adopt')
  .toLowerCase()
  .replace(/[^a-z0-9-]/g, '-');
let base: string;
let orchestrator: { url: string; stop(): Promise<void> };
let agents: SimulatedAgents;

async function ectl(args: string[]) {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    env: { configPath: join(base, 'config.json'), urlOverride: orchestrator.url, tokenOverride: ADMIN_TOKEN },
    version: 'test',
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

async function api(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${orchestrator.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
}

function container(instanceId: string, hostPort: number, state = 'running'): SimulatedContainer {
  return {
    instanceId,
    containerId: `sim-${instanceId}`,
    containerName: `endercloud-v-${instanceId}`,
    hostPort,
    endpoint: `127.0.0.1:${hostPort}`,
    state,
    groupId: 'lobby',
    variantId: 'v',
    sessionId: null,
  };
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ectl-adopt-'));
  agents = await startSimulatedAgents();
  agents.containers.set(
    hostId,
    new Map([
      ['old-1', container('old-1', 30501)],
      ['old-2', container('old-2', 30502, 'exited')],
    ]),
  );
  orchestrator = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
      ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
    }),
  );
  expect((await api('PUT', '/templates/tpl/versions/1', { image: 'busybox:1', resources: { memoryMb: 256 } })).status).toBe(201);
  expect(
    (await api('PUT', '/groups/lobby', { kind: 'persistent', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] })).status,
  ).toBe(201);
  // No agent token is configured: heartbeats come unauthenticated, as in the dev stack.
  const beat = await fetch(`${orchestrator.url}/api/v1/agents/${hostId}/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(agents.heartbeatBody(hostId)),
  });
  expect(beat.status).toBe(200);
  const deadline = Date.now() + 10_000;
  while (((await (await api('GET', `/hosts/${hostId}`)).json()) as { status: string }).status !== 'ONLINE') {
    if (Date.now() > deadline) throw new Error('host never became ONLINE');
    await new Promise((r) => setTimeout(r, 50));
  }
});

afterAll(async () => {
  await orchestrator?.stop();
  await agents?.close();
  if (base) rmSync(base, { recursive: true, force: true });
});

describe('ectl hosts unclaimed / adopt / unclaimed-delete', () => {
  it('lists unclaimed containers as a table and as JSON', async () => {
    const table = await ectl(['hosts', 'unclaimed', hostId]);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^INSTANCE\s+GROUP\s+VARIANT\s+STATE\s+PORT\s+REASON$/);
    expect(table.stdout).toMatch(/old-1\s+lobby\s+v\s+running\s+30501\s+no stored instance has this id/);
    const json = await ectl(['hosts', 'unclaimed', hostId, '--json']);
    expect((JSON.parse(json.stdout) as { instanceId: string }[]).map((u) => u.instanceId).sort()).toEqual(['old-1', 'old-2']);
  });

  it('adopts one, refuses a group mismatch with the API error, and the adopted one is no longer unclaimed', async () => {
    const adopted = await ectl(['hosts', 'adopt', hostId, 'old-1', '--group', 'lobby', '--variant', 'v', '--name', 'lobby-one']);
    expect(adopted.stderr).toBe('');
    expect(adopted.stdout).toContain(`adopted old-1 as lobby-one on host ${hostId}: starting at 127.0.0.1:30501`);
    const mismatch = await ectl(['hosts', 'adopt', hostId, 'old-2', '--group', 'other', '--variant', 'v']);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toMatch(/CONFLICT: .*made for group lobby variant v.*\(HTTP 409\)/);
    expect((await ectl(['hosts', 'adopt', hostId, 'old-2', '--group', 'lobby'])).code).toBe(2);
    const json = await ectl(['hosts', 'unclaimed', hostId, '--json']);
    expect((JSON.parse(json.stdout) as { instanceId: string }[]).map((u) => u.instanceId)).toEqual(['old-2']);
    const again = await ectl(['hosts', 'adopt', hostId, 'old-1', '--group', 'lobby', '--variant', 'v', '--json']);
    expect(again.stderr).toMatch(/CONFLICT: instance old-1 is already managed/);
  });

  it('unclaimed-delete queues the removal, keeping the data unless --delete-data', async () => {
    const res = await ectl(['hosts', 'unclaimed-delete', hostId, 'old-2', '--json']);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({
      hostId,
      instanceId: 'old-2',
      deleteData: false,
      commandId: expect.stringMatching(/^cmd-/),
    });
    const human = await ectl(['hosts', 'unclaimed-delete', hostId, 'old-2', '--delete-data']);
    expect(human.stdout).toMatch(/removal of the container of old-2 on host .* queued \(command cmd-.*\); its data is deleted too/);
  });
});
