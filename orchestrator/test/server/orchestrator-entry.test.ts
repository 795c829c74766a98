// `npm run orchestrator` as operators start it: ENDERCLOUD_LISTEN=host:0 takes
// an ephemeral port and the printed URL is the real one; the first start writes
// the admin token to <data>/admin-token (0600) and says where; a bad value stops
// the process with exit 2 and one line naming the variable. `npm start` (the
// dev stack) brings up the orchestrator and one local agent that goes ONLINE.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { randomPortRange } from '../support/agent-harness.js';
import { stopGroup } from '../support/process-group.js';
import { uniqueId } from '../support/docker.js';
import { freePort } from '../support/registry.js';
import mc from 'minecraft-protocol';

const ROOT = join(import.meta.dirname, '..', '..');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, ENDERCLOUD_SFTP_PORT: '0', HOME: process.env.HOME, ENDERCLOUD_LOG_LEVEL: 'warn', ...extra };
}

describe('npm run orchestrator', () => {
  it('stops with exit 2 and one line naming a bad variable', () => {
    const res = spawnSync('npm', ['run', '--silent', 'orchestrator'], {
      cwd: ROOT,
      env: env({ ENDERCLOUD_LISTEN: '127.0.0.1:99999' }),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(res.status).toBe(2);
    const lines = res.stderr
      .trim()
      .split('\n')
      .filter((l) => l.includes('ENDERCLOUD_'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/ENDERCLOUD_LISTEN/);
  });

  it('listens on an ephemeral port with ENDERCLOUD_LISTEN=127.0.0.1:0 and prints the actual URL and the admin-token file', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ec-orch-entry-'));
    dirs.push(dataDir);
    const child = spawn('npm', ['run', '--silent', 'orchestrator'], {
      cwd: ROOT,
      env: env({ ENDERCLOUD_LISTEN: '127.0.0.1:0', ENDERCLOUD_DATA_DIR: dataDir }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    try {
      const deadline = Date.now() + 30_000;
      let match: RegExpExecArray | null = null;
      while (!(match = /API (http:\/\/127\.0\.0\.1:(\d+))\/api\/v1 — admin token: (\S+)/.exec(stdout))) {
        if (child.exitCode !== null) throw new Error(`orchestrator exited ${child.exitCode}: ${stderr}`);
        if (Date.now() > deadline) throw new Error(`no URL printed within 30 s: ${stdout} ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(Number(match[2])).toBeGreaterThan(0);
      const health = await fetch(`${match[1]}/api/v1/health`);
      expect(await health.json()).toMatchObject({ status: 'ok', database: 'sqlite' });
      const tokenFile = join(dataDir, 'admin-token');
      expect(match[3]).toBe(tokenFile);
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      const hosts = await fetch(`${match[1]}/api/v1/hosts`, {
        headers: { authorization: `Bearer ${readFileSync(tokenFile, 'utf8').trim()}` },
      });
      expect(hosts.status).toBe(200);
    } finally {
      await stopGroup(child);
    }
  }, 60_000);
});

describe('npm start (dev stack)', () => {
  it('starts the orchestrator, one local agent and the router, prints the values in force and how to join; the host goes ONLINE and the router answers a real client', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ec-dev-stack-'));
    dirs.push(dataDir);
    const agentId = uniqueId('devstack');
    const range = randomPortRange(10);
    const routerPort = await freePort();
    const child = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: env({
        ENDERCLOUD_LISTEN: '127.0.0.1:0',
        ENDERCLOUD_DATA_DIR: dataDir,
        AGENT_ID: agentId,
        AGENT_PORT: String(await freePort()),
        AGENT_GAME_PORT_RANGE: `${range.first}-${range.last}`,
        AGENT_LOG_LEVEL: 'warn',
        ENDERCLOUD_ROUTER_BIND: `127.0.0.1:${routerPort}`,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    try {
      const deadline = Date.now() + 40_000;
      let api: RegExpExecArray | null = null;
      let token: RegExpExecArray | null = null;
      while (!(api = /API\s+(http:\/\/127\.0\.0\.1:\d+)\/api\/v1/.exec(stdout)) || !(token = /admin token\s+(\S+)/.exec(stdout))) {
        if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}: ${stderr}`);
        if (Date.now() > deadline) throw new Error(`nothing printed within 40 s: ${stdout} ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(token[1]).toBe(join(dataDir, 'admin-token'));
      expect(stdout).toContain(`AGENT_ID=${agentId}`);
      expect(stdout).toContain(`game ports ${range.first}-${range.last} on 127.0.0.1`);
      // Each group of the example network on its own forced host; the fast ectl entry; sleep is on.
      for (const g of ['lobby', 'survival', 'minigame'])
        expect(stdout).toMatch(new RegExp(`^  ${g}\\.localhost:${routerPort} +group ${g}`, 'm'));
      expect(stdout).toContain(`(also plain localhost:${routerPort})`);
      expect(stdout).toContain('  ./bin/ectl.js apply -f ../examples/network.yml');
      expect(stdout).not.toContain('npx');
      expect(stdout).toContain('sleep         on by default: empty worlds pause after 10 min and stop after 6 h (docs/provisioning.md)');
      expect(stdout).toContain('server image  endercloud/mc-server:local (built here, no internet needed)');
      expect(readFileSync(join(dataDir, 'router.toml'), 'utf8')).toMatch(/^# Written by `npm start`, which rewrites it/);
      expect(stdout).toContain(`database      sqlite (${join(dataDir, 'endercloud.db')})`);
      const auth = { authorization: `Bearer ${readFileSync(token[1]!, 'utf8').trim()}` };
      let status: string | undefined;
      while (status !== 'ONLINE') {
        if (Date.now() > deadline) throw new Error(`host ${agentId} not ONLINE within 40 s (last ${status}): ${stderr}`);
        const res = await fetch(`${api[1]}/api/v1/hosts/${agentId}`, { headers: auth });
        status = res.ok ? ((await res.json()) as { status: string }).status : undefined;
        if (status !== 'ONLINE') await new Promise((r) => setTimeout(r, 200));
      }
      // The dev stack's router answers a real Minecraft client's status ping (no world is configured yet).
      let pinged: { version?: { protocol?: number } } | undefined;
      while (!pinged) {
        if (Date.now() > deadline) throw new Error(`the router on ${routerPort} did not answer a status ping: ${stderr}`);
        pinged = await mc.ping({ host: '127.0.0.1', port: routerPort, version: '1.20.4' }).then(
          (r) => r as { version?: { protocol?: number } },
          () => undefined,
        );
        if (!pinged) await new Promise((r) => setTimeout(r, 200));
      }
      expect(pinged.version?.protocol).toBeGreaterThan(0);
    } finally {
      await stopGroup(child);
    }
  }, 90_000);
});
