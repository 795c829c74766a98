// Kill on the real Docker engine (issue 24): a server that ignores SIGTERM
// under a template whose stop timeout is two minutes hangs its graceful stop
// (which holds the agent's per-instance lock); POST /kill ends it within
// seconds, the stop command itself finishes and the instance ends `stopped`,
// not in error; a kill of a stopped instance is a no-op; `ectl instances kill`
// is a stop whose method is SIGKILL. Audited.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { randomPortRange } from '../support/agent-harness.js';
import { docker, uniqueId } from '../support/docker.js';
import { mcServerImageTag } from '../support/mc-server.js';
import { startRealAgentStack, waitFor, type RealAgentStack } from '../support/real-agent-stack.js';
import type { Loose } from './support.js';

const AGENT_ID = `${uniqueId('kill')}-host`;
let stack: RealAgentStack;
let url: string;
let cliDir: string;

const get = async (id: string): Promise<Loose> => (await stack.call('GET', `/instances/${id}`)).body;

async function waitState(id: string, state: string, timeoutMs = 30_000): Promise<Loose> {
  return waitFor(
    `instance ${id} ${state}`,
    async () => {
      const i = await get(id);
      return i.state === state ? i : undefined;
    },
    timeoutMs,
  );
}

async function containerLog(id: string): Promise<string> {
  const [c] = await docker().listContainers({
    all: true,
    filters: { label: [`orchestrator.instance=${id}`, `orchestrator.host=${AGENT_ID}`] },
  });
  if (!c) return '';
  return (await docker().getContainer(c.Id).logs({ stdout: true, stderr: true })).toString('utf8');
}

async function ectl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    version: 'test',
    env: { configPath: join(cliDir, 'config.json'), urlOverride: url, tokenOverride: stack.adminToken },
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

beforeAll(async () => {
  cliDir = mkdtempSync(join(tmpdir(), 'ectl-kill-'));
  stack = await startRealAgentStack({ agentId: AGENT_ID, portRange: randomPortRange(10) });
  url = await stack.o.app.listen({ host: '127.0.0.1', port: 0 });
  const template = {
    image: mcServerImageTag(),
    resources: { memoryMb: 256 },
    containerPort: 25565,
    readiness: { kind: 'minecraft', startupTimeoutMs: 30_000, intervalMs: 150, probeTimeoutMs: 1000 },
    // A stop that would hang for two minutes before the agent's own kill.
    stop: { signal: 'SIGTERM', timeoutMs: 120_000 },
  };
  expect((await stack.call('PUT', '/templates/stubborn/versions/1', template)).status).toBe(201);
  expect(
    (
      await stack.call('PUT', '/groups/k', {
        kind: 'persistent',
        variants: [{ id: 'v', template: { name: 'stubborn', version: '1' }, env: { IGNORE_SIGTERM: '1' } }],
      })
    ).status,
  ).toBe(201);
});

afterAll(async () => {
  await stack?.close();
  if (cliDir) rmSync(cliDir, { recursive: true, force: true });
});

describe('kill', () => {
  it('ends a graceful stop that hangs within seconds; the stop command finishes and the instance is stopped, not in error', async () => {
    const created = await stack.call('POST', '/instances', { groupId: 'k', variantId: 'v', name: 'stubborn' });
    expect(created.status).toBe(202);
    const id = created.body.id as string;
    await waitState(id, 'online', 60_000);
    expect((await get(id)).actions).toContain('kill');

    const stop = await stack.call('POST', `/instances/${id}/stop`);
    expect(stop.status).toBe(202);
    const stopCommand = stop.body.commandId as string;
    // The agent holds the stop: the server has received SIGTERM and ignores it.
    await waitFor('SIGTERM ignored', async () => (await containerLog(id)).includes('Ignoring SIGTERM'), 30_000);
    const stopping = await get(id);
    expect(stopping).toMatchObject({ state: 'stopping', activeAction: { kind: 'stop', commandId: stopCommand } });
    expect(stopping.actions).toEqual(['kill']);
    // Any other action is refused while the stop runs; the kill is not.
    expect((await stack.call('POST', `/instances/${id}/start`)).status).toBe(409);

    const t0 = Date.now();
    const kill = await stack.call('POST', `/instances/${id}/kill`);
    expect(kill.status, JSON.stringify(kill.body)).toBe(200);
    expect(kill.body).toMatchObject({ id, ended: true, killed: true, commandId: stopCommand, state: 'stopping' });
    const stopped = await waitState(id, 'stopped', 15_000);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(stopped).toMatchObject({ desiredState: 'stopped', activeAction: null });
    expect(stopped.stateReason).toMatch(/^killed on request \(exit code 137\)/);

    await waitFor(
      'the stop command succeeded',
      async () => (await stack.call('GET', `/commands/${stopCommand}`)).body.status === 'succeeded',
    );
    const history = (await stack.call('GET', `/instances/${id}/history?limit=20`)).body.history as Loose[];
    expect(history[0]).toMatchObject({ from: 'stopping', to: 'stopped', details: { path: 'killed', killedOnRequest: true } });

    // Idempotent on a stopped instance: nothing to do, nothing queued.
    const again = await stack.call('POST', `/instances/${id}/kill`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id, commandId: null, noop: 'already stopped', state: 'stopped' });
    expect((await get(id)).actions).not.toContain('kill');

    const audit = (await stack.call('GET', '/audit?action=instance.kill')).body;
    expect(audit.entries.filter((e: Loose) => e.targetId === id && e.action === 'instance.kill')).toHaveLength(2);
  });

  it('ectl instances kill --yes --wait: a running server is stopped by SIGKILL at once; without --yes and a terminal it refuses', async () => {
    const created = await stack.call('POST', '/instances', { groupId: 'k', variantId: 'v', name: 'stubborn-cli' });
    const id = created.body.id as string;
    await waitState(id, 'online', 60_000);

    const refused = await ectl(['instances', 'kill', 'stubborn-cli']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('pass --yes');
    expect((await get(id)).state).toBe('online');

    const t0 = Date.now();
    const run = await ectl(['instances', 'kill', 'stubborn-cli', '--yes', '--wait', '--timeout', '30']);
    expect(run.stderr.split('\n').filter((l) => l.startsWith('error'))).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('instance stubborn-cli: stopped');
    // Far below the template's two-minute stop timeout: nothing graceful was tried.
    expect(Date.now() - t0).toBeLessThan(20_000);
    const stopped = await get(id);
    expect(stopped.stateReason).toMatch(/^killed on request \(exit code 137\)/);
    expect(await containerLog(id)).not.toContain('Ignoring SIGTERM');
  });
});
