// ectl's data commands against a real orchestrator and an in-test agent that
// also answers image inspection and backups: backup --wait, backups, restore
// with the typed name, update (plan, ask, apply) --wait until online again.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { scriptedPrompt, type Prompt } from '../../src/cli/prompt.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator } from '../../src/server/orchestrator.js';
import { freePort } from '../support/registry.js';
import { heartbeatBody } from '../server/support.js';
import { startAgentWithData, type AgentWithData } from './agent-with-data.js';

const ADMIN = `admin-${'d'.repeat(24)}`;
let base: string;
let orchestrator: { url: string; stop(): Promise<void> };
let agent: AgentWithData;

async function ectl(args: string[], prompt?: Prompt) {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    version: 'test',
    ...(prompt ? { prompt } : {}),
    env: { configPath: join(base, 'config.json'), urlOverride: orchestrator.url, tokenOverride: ADMIN },
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

const api = (method: string, path: string, body?: unknown) =>
  fetch(`${orchestrator.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ectl-data-'));
  agent = await startAgentWithData();
  orchestrator = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
      ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
      ENDERCLOUD_SUPERVISE_INTERVAL: '100ms',
    }),
  );
  expect(
    (
      await fetch(`${orchestrator.url}/api/v1/agents/host-d/heartbeat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(heartbeatBody(agent.url, { heartbeatIntervalMs: 600_000 })),
      })
    ).status,
  ).toBe(200);
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
  expect(
    (await api('PUT', '/groups/g', { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] })).status,
  ).toBe(201);
  expect((await ectl(['instances', 'create', '--group', 'g', '--variant', 'v', '--name', 'world', '--wait', '--timeout', '30'])).code).toBe(
    0,
  );
});

afterAll(async () => {
  await orchestrator?.stop();
  await agent?.close();
  rmSync(base, { recursive: true, force: true });
});

describe('ectl data commands', () => {
  let backupId: string;
  it('backup --wait returns when the backup action is done; backups lists it', async () => {
    // The test template has no online save: a running server is stopped for its backup only when asked (--stop).
    const r = await ectl(['instances', 'backup', 'world', '--stop', '--reason', 'before the event', '--wait', '--timeout', '30']);
    expect(r.stderr).toMatch(/\nbackup of world done\n$/);
    expect(r.stdout).toMatch(/^backup of world done \(instance \w+\)\n$/);
    expect(r.code).toBe(0);
    const list = JSON.parse((await ectl(['instances', 'backups', 'world', '--json'])).stdout) as { backupId: string }[];
    expect(list).toHaveLength(1);
    backupId = list[0]!.backupId;
    expect((await ectl(['instances', 'backups', 'world'])).stdout).toMatch(new RegExp(`^${backupId}\\s+4\\.0 KiB\\s+`, 'm'));
  });

  it('restore asks for the typed name on a terminal and restores a stopped instance', async () => {
    expect((await ectl(['instances', 'stop', 'world', '--wait'])).code).toBe(0);
    const prompt = scriptedPrompt(['world']);
    const r = await ectl(['instances', 'restore', 'world', backupId, '--wait', '--timeout', '30'], prompt);
    expect(r.stderr).not.toMatch(/error/);
    expect(r.code).toBe(0);
    expect(prompt.questions).toEqual([
      `restoring ${backupId} replaces the current data of world: type the instance name (world) to confirm: `,
    ]);
    expect(agent.restores.map((x) => x.backupId)).toContain(backupId);
    expect((await ectl(['instances', 'start', 'world', '--wait', '--timeout', '30'])).stdout).toBe('instance world: online\n');
  });

  it('update shows the plan, refuses without --yes in a script, asks on a terminal, then waits until online on the new image', async () => {
    const planOnly = await ectl(['instances', 'update', 'world', '--image', 'mc:2', '--plan-only']);
    expect(planOnly.stdout).toMatch(/^update plan for world \(i-[0-9a-f]+, online\)\n {2}current: {3}mc:1\n {2}candidate: mc:2\nchecks:\n/);
    expect(planOnly.stdout).toMatch(/compatible: yes\n$/);
    const script = await ectl(['instances', 'update', 'world', '--image', 'mc:2']);
    expect(script.code).toBe(2);
    expect(script.stderr).toBe('error: update world to mc:2 needs confirmation: pass --yes (no terminal to ask on)\n');
    const no = await ectl(['instances', 'update', 'world', '--image', 'mc:2'], scriptedPrompt(['n']));
    expect(no.code).toBe(1);
    expect(no.stderr).toMatch(/not confirmed: nothing was done/);
    const yes = scriptedPrompt(['y']);
    const r = await ectl(['instances', 'update', 'world', '--image', 'mc:2', '--wait', '--timeout', '30'], yes);
    expect(r.stderr).not.toMatch(/error/);
    expect(r.code).toBe(0);
    expect(yes.questions).toEqual(['update world to mc:2 [y/N] ']);
    expect(r.stdout).toMatch(/instance world: online\n$/);
    expect(JSON.parse((await ectl(['instances', 'get', 'world', '--json'])).stdout)).toMatchObject({ image: 'mc:2', state: 'online' });
  });
});
