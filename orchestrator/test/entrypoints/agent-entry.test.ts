// The agent's entry point as operators start it: `npm run agent` (Node, the
// primary runtime) and `bun run agent` (the seed's command; skipped with a
// reason when bun is not installed). A bad value stops the process with one
// line naming the variable; a good configuration serves /api/v1/health.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/registry.js';

const ROOT = join(import.meta.dirname, '..', '..');
const hasBun = spawnSync('bun', ['--version'], { stdio: 'ignore' }).status === 0;
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  return { ...env, ...extra };
}

function runToExit(runner: string, env: NodeJS.ProcessEnv): { status: number | null; stderr: string } {
  const res = spawnSync(runner, ['run', '--silent', 'agent'], { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 });
  return { status: res.status, stderr: res.stderr };
}

async function serveHealth(runner: string): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'ec-entry-'));
  dirs.push(dir);
  const port = await freePort();
  const child = spawn(runner, ['run', '--silent', 'agent'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: baseEnv({
      AGENT_ID: 'entry-test',
      AGENT_ORCHESTRATOR_URL: 'http://127.0.0.1:9', // nothing listens: heartbeats fail, the agent stays up
      AGENT_LISTEN_ADDRESS: '127.0.0.1',
      AGENT_PORT: String(port),
      AGENT_RUNTIME_DIRECTORY: join(dir, 'runtime'),
      AGENT_CACHE_DIRECTORY: join(dir, 'cache'),
      AGENT_GAME_PORT_RANGE: '46000-46009',
      AGENT_LOG_LEVEL: 'warn',
    }),
    detached: true,
  });
  try {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
        if (res.ok) return await res.json();
      } catch {
        /* not listening yet */
      }
      if (child.exitCode !== null) throw new Error(`${runner} run agent exited with ${child.exitCode}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${runner} run agent did not serve /health within 30 s`);
  } finally {
    if (child.pid) process.kill(-child.pid, 'SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
  }
}

describe.each([
  { runner: 'npm', available: true },
  { runner: 'bun', available: hasBun },
])('$runner run agent', ({ runner, available }) => {
  it.skipIf(!available)('stops with exit 2 and one line naming a bad variable', () => {
    const res = runToExit(
      runner,
      baseEnv({ AGENT_ID: 'entry-test', AGENT_ORCHESTRATOR_URL: 'http://127.0.0.1:9', AGENT_HEARTBEAT_INTERVAL: '10' }),
    );
    expect(res.status).toBe(2);
    const lines = res.stderr
      .trim()
      .split('\n')
      .filter((l) => l.includes('AGENT_'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/AGENT_HEARTBEAT_INTERVAL/);
  });

  it.skipIf(!available)('names a missing required variable', () => {
    const res = runToExit(runner, baseEnv({ AGENT_ORCHESTRATOR_URL: 'http://127.0.0.1:9' }));
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/AGENT_ID: is required/);
  });

  it.skipIf(!available)('refuses to start beyond loopback with neither AGENT_JOIN_TOKEN, a saved credential nor AGENT_TOKEN', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ec-entry-'));
    dirs.push(dir);
    const res = runToExit(
      runner,
      baseEnv({
        AGENT_ID: 'entry-test',
        AGENT_ORCHESTRATOR_URL: 'http://127.0.0.1:9',
        AGENT_LISTEN_ADDRESS: '0.0.0.0',
        AGENT_RUNTIME_DIRECTORY: join(dir, 'runtime'),
        AGENT_CACHE_DIRECTORY: join(dir, 'cache'),
      }),
    );
    expect(res.status).not.toBe(0);
    expect(res.stderr).toMatch(/beyond loopback/);
    expect(res.stderr).toMatch(/AGENT_JOIN_TOKEN/);
    expect(res.stderr).toMatch(/AGENT_TOKEN/);
  });

  it.skipIf(!available)('serves /api/v1/health while the orchestrator is unreachable', async () => {
    const body = await serveHealth(runner);
    expect(body).toMatchObject({ status: 'ok', agentId: 'entry-test', engine: 'reachable' });
  });
});
