// The agent's start-time credential decision (src/agent/enrolment.ts) against a
// real orchestrator listening on 127.0.0.1: enrol with AGENT_JOIN_TOKEN and save
// credentials.json (0600, whole); a restart with the same used token reuses
// them; a different token re-enrols (rotation); saved credentials of another
// agent id, a refused token, and a non-loopback listen without any credential
// stop the start.

import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CREDENTIALS_FILE, resolveAgentAuth, type ResolveAuthOptions } from '../../src/agent/enrolment.js';
import { silentLogger, testOrchestrator, type TestOrchestrator } from '../server/support.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => undefined);
});

async function setup(): Promise<{ t: TestOrchestrator; url: string; dir: string }> {
  const t = await testOrchestrator();
  cleanups.push(() => t.close());
  const url = await t.o.app.listen({ host: '127.0.0.1', port: 0 });
  const dir = await mkdtemp(path.join(tmpdir(), 'ec-agent-enrol-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return { t, url, dir };
}

async function joinToken(t: TestOrchestrator, agentId: string): Promise<string> {
  const res = await t.call('POST', '/api/v1/hosts/join-tokens', { body: { agentId } });
  expect(res.status).toBe(201);
  return res.body.secret as string;
}

function options(url: string, dir: string, over: Partial<ResolveAuthOptions> = {}): ResolveAuthOptions {
  return {
    agentId: 'ae-a',
    orchestratorUrl: url,
    controlUrl: 'http://127.0.0.1:45999',
    listenAddress: '127.0.0.1',
    runtimeDirectory: dir,
    joinToken: undefined,
    token: undefined,
    facts: async () => ({
      controlUrl: 'http://127.0.0.1:45999',
      gameAddress: '127.0.0.1',
      version: '0.1.0',
      resources: { cpuCount: 2, memoryTotalBytes: 2 * 1024 ** 3, memoryAvailableBytes: 1024 ** 3, diskFreeBytes: null },
      portRange: { first: 45000, last: 45009 },
      heartbeatIntervalMs: 1000,
    }),
    fetch: globalThis.fetch,
    logger: silentLogger,
    ...over,
  };
}

describe('agent enrolment at start', () => {
  it('enrols once and saves credentials.json 0600; the same used token reuses them; a new token re-enrols', async () => {
    const { t, url, dir } = await setup();
    const first = await joinToken(t, 'ae-a');
    const a = await resolveAgentAuth(options(url, dir, { joinToken: first }));
    expect(a.mode).toBe('enrolled');
    if (a.mode !== 'enrolled') return;
    expect(a.enrolledNow).toBe(true);
    expect(a.credentials).toMatchObject({ agentId: 'ae-a', generation: 1, controlUrl: 'http://127.0.0.1:45999' });
    const file = path.join(dir, CREDENTIALS_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(a.credentials);

    // Restart with the used token still set: no call, the saved credentials.
    const again = await resolveAgentAuth(
      options(url, dir, { joinToken: first, fetch: () => Promise.reject(new Error('no call expected')) }),
    );
    expect(again).toMatchObject({ mode: 'enrolled', enrolledNow: false, credentials: { hostCredential: a.credentials.hostCredential } });
    // And without any token.
    expect(await resolveAgentAuth(options(url, dir))).toMatchObject({ mode: 'enrolled', enrolledNow: false });

    const rotated = await resolveAgentAuth(options(url, dir, { joinToken: await joinToken(t, 'ae-a') }));
    expect(rotated).toMatchObject({ mode: 'enrolled', enrolledNow: true, credentials: { generation: 2 } });
    if (rotated.mode !== 'enrolled') return;
    expect(rotated.credentials.hostCredential).not.toBe(a.credentials.hostCredential);
    // The old host credential is dead at the orchestrator, the new one beats.
    const beat = (cred: string) =>
      fetch(`${url}/api/v1/agents/ae-a/heartbeat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${cred}` },
        body: JSON.stringify({
          controlUrl: 'http://127.0.0.1:45999',
          gameAddress: '127.0.0.1',
          version: '0.1.0',
          resources: { cpuCount: 2, memoryTotalBytes: 2 * 1024 ** 3 },
          portRange: { first: 45000, last: 45009 },
          heartbeatIntervalMs: 1000,
        }),
      });
    expect((await beat(a.credentials.hostCredential)).status).toBe(401);
    expect((await beat(rotated.credentials.hostCredential)).status).toBe(200);
  });

  it('stops the start: a refused token (the message says why), saved credentials of another agent id, no credential beyond loopback', async () => {
    const { t, url, dir } = await setup();
    const secret = await joinToken(t, 'ae-a');
    await expect(resolveAgentAuth(options(url, dir, { agentId: 'ae-b', joinToken: secret }))).rejects.toThrow(
      /refused the enrolment \(403\): .*enrols agent ae-a only, not ae-b/,
    );
    await resolveAgentAuth(options(url, dir, { joinToken: secret }));
    await expect(resolveAgentAuth(options(url, dir, { agentId: 'ae-b' }))).rejects.toThrow(/credentials of agent ae-a, not ae-b/);

    const empty = await mkdtemp(path.join(tmpdir(), 'ec-agent-enrol-'));
    cleanups.push(() => rm(empty, { recursive: true, force: true }));
    await expect(resolveAgentAuth(options(url, empty, { listenAddress: '0.0.0.0' }))).rejects.toThrow(/AGENT_JOIN_TOKEN.*AGENT_TOKEN/);
    expect(await resolveAgentAuth(options(url, empty, { listenAddress: '0.0.0.0', token: 'legacy-token-0123456789' }))).toEqual({
      mode: 'shared',
      token: 'legacy-token-0123456789',
    });
    expect(await resolveAgentAuth(options(url, empty))).toEqual({ mode: 'none' });

    // A credentials file readable by others is narrowed to 0600 at start.
    await writeFile(path.join(empty, CREDENTIALS_FILE), await readFile(path.join(dir, CREDENTIALS_FILE), 'utf8'), { mode: 0o644 });
    await resolveAgentAuth(options(url, empty));
    expect((await stat(path.join(empty, CREDENTIALS_FILE))).mode & 0o777).toBe(0o600);
  });
});
