// The router's entry point as operators start it (`npm run router`) with
// ENDERCLOUD_ROUTER_CONFIG. A bad configuration stops it with one line naming
// the problem; a static file (no orchestrator) makes a working router that
// proxies a ping to its backend, serves /metrics, and exits cleanly on SIGTERM.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mc from 'minecraft-protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/registry.js';
import { closeAll, startMcBackend, VERSION } from './harness.js';

const ROOT = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'ec-router-entry-'));
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
  await closeAll();
  rmSync(dir, { recursive: true, force: true });
});

const env = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  ENDERCLOUD_SFTP_PORT: '0',
  HOME: process.env.HOME,
  ...extra,
});

async function poll<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('npm run router', () => {
  it('stops with one line naming the problem when the configuration is bad', () => {
    const file = join(dir, 'bad.toml');
    writeFileSync(file, 'bind = "127.0.0.1:1"\n[limits]\nwake_hold_timeout = "45s"\n');
    const missing = spawnSync('npm', ['run', '--silent', 'router'], { cwd: ROOT, env: env({}), encoding: 'utf8', timeout: 30_000 });
    expect(missing.status).toBe(2);
    expect(missing.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^router: invalid configuration: ENDERCLOUD_ROUTER_CONFIG: is required/),
    ]);
    const bad = spawnSync('npm', ['run', '--silent', 'router'], {
      cwd: ROOT,
      env: env({ ENDERCLOUD_ROUTER_CONFIG: file }),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^router: invalid configuration: limits\.wake_hold_timeout: must be between 1000 and 29000 ms/),
    ]);
  });

  it('without an orchestrator is a static router: proxies a ping to its backend, serves /metrics, exits 0 on SIGTERM', async () => {
    const backend = await startMcBackend('static backend');
    const [port, metricsPort] = [await freePort(), await freePort()];
    const file = join(dir, 'router.toml');
    writeFileSync(
      file,
      `bind = "127.0.0.1:${port}"\ntry = ["b"]\n[servers]\nb = "127.0.0.1:${backend.port}"\n[metrics]\nbind = "127.0.0.1:${metricsPort}"\n`,
    );
    // What the npm script runs (tsx src/router/index.ts), without npm in between so the exit code is the router's.
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/router/index.ts'], {
      cwd: ROOT,
      env: env({ ENDERCLOUD_ROUTER_CONFIG: file }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));

    const status = await poll(
      'a ping through the router',
      async () =>
        (await mc.ping({ host: '127.0.0.1', port, version: VERSION, closeTimeout: 2000, noPongTimeout: 2000 })) as {
          description: { text: string };
        },
    );
    expect(status.description.text).toBe('static backend');
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/^endercloud_router_connections_total\{outcome="proxied"\} [1-9]/m);

    child.kill('SIGTERM');
    expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 10_000))])).toBe(0);
    expect(stderr).toBe('');
  });

  it('reloads on a config file change and on SIGHUP; a bad file is refused with one line and the old config keeps routing', async () => {
    const a = await startMcBackend('backend A');
    const b = await startMcBackend('backend B');
    const port = await freePort();
    const file = join(dir, 'reload.toml');
    const toml = (backendPort: number): string => `bind = "127.0.0.1:${port}"\ntry = ["b"]\n[servers]\nb = "127.0.0.1:${backendPort}"\n`;
    writeFileSync(file, toml(a.port));
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/router/index.ts'], {
      cwd: ROOT,
      env: env({ ENDERCLOUD_ROUTER_CONFIG: file }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stdout = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    const motd = async (): Promise<string> =>
      (
        (await mc.ping({ host: '127.0.0.1', port, version: VERSION, closeTimeout: 2000, noPongTimeout: 2000 })) as {
          description: { text: string };
        }
      ).description.text;
    expect(await poll('a ping through the router', async () => ((await motd()) === 'backend A' ? true : undefined))).toBe(true);

    writeFileSync(file, toml(b.port)); // the file watcher reloads
    expect(await poll('the edited file in force', async () => ((await motd()) === 'backend B' ? true : undefined), 10_000)).toBe(true);

    writeFileSync(file, 'bind = "127.0.0.1:1"\n[limits]\nwake_hold_timeout = "45s"\n');
    child.kill('SIGHUP');
    await poll('the refusal line', async () => (/config reload refused/.test(stdout) ? true : undefined), 10_000);
    expect(await motd()).toBe('backend B');
    const refusals = stdout.split('\n').filter((l) => l.includes('config reload refused'));
    expect(refusals.length).toBeGreaterThanOrEqual(1);
    expect(refusals[0]).toMatch(/limits\.wake_hold_timeout: must be between 1000 and 29000 ms/);
    child.kill('SIGTERM');
  });
});
