// The installed command: bin/ectl.js runs the built bundle (built here the way
// `npm ci` does, through bin/build-ectl.mjs), resolves relative paths from the
// caller's directory (also under `npm run ectl`), says in one line when it is
// not built or pointed at something that is not an orchestrator, and its bash
// completion completes. Real processes, a real orchestrator, a simulated agent.

import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulatedAgents, type SimulatedAgents } from '../../bench/simulated-agents.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator } from '../../src/server/orchestrator.js';
import { freePort } from '../support/registry.js';

const PKG = fileURLToPath(new URL('../..', import.meta.url));
const REPO = join(PKG, '..');
const BIN = join(PKG, 'bin', 'ectl.js');
const ADMIN = `admin-${'b'.repeat(24)}`;
let base: string;
let orchestrator: { url: string; stop(): Promise<void> };
let agents: SimulatedAgents;
let web: Server;
let webUrl: string;

interface Done {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], opts: { cwd: string; env?: Record<string, string | undefined> }): Promise<Done> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string | undefined> = {
      PATH: process.env.PATH,
      ENDERCLOUD_SFTP_PORT: '0',
      HOME: base,
      XDG_CONFIG_HOME: join(base, 'xdg'),
      NPM_CONFIG_OFFLINE: 'true',
      ...opts.env,
    };
    const child = spawn(cmd, args, { cwd: opts.cwd, env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const target = (url = orchestrator.url) => ({ ENDERCLOUD_URL: url, ENDERCLOUD_TOKEN: ADMIN });
const ectl = (args: string[], cwd: string, url?: string) => run(process.execPath, [BIN, ...args], { cwd, env: target(url) });

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ectl-bin-'));
  const built = await run(process.execPath, [join(PKG, 'bin', 'build-ectl.mjs')], { cwd: PKG });
  expect(built.stderr).toBe('');
  expect(built.code).toBe(0);
  agents = await startSimulatedAgents();
  web = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>'),
  );
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  orchestrator = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
    }),
  );
});

afterAll(async () => {
  await orchestrator?.stop();
  await agents?.close();
  await new Promise((r) => (web ? web.close(r) : r(undefined)));
  rmSync(base, { recursive: true, force: true });
});

describe('the ectl command', () => {
  it('--version prints the package version from the bundle', async () => {
    const r = await ectl(['--version'], base);
    expect(r).toEqual({ code: 0, stdout: '0.1.0\n', stderr: '' });
  });

  it("layers push and apply -f resolve relative paths from the current directory (the docs' example, from the repository root)", async () => {
    const lobby = await ectl(['layers', 'push', 'lobby-config', 'examples/layers/lobby', '--json'], REPO);
    expect(lobby.stderr).toMatch(/^uploading lobby-config: /);
    expect(lobby.code).toBe(0);
    expect((await ectl(['layers', 'push', 'survival-config', join('layers', 'survival')], join(REPO, 'examples'))).code).toBe(0);
    const plan = await ectl(['apply', '-f', 'network.yml', '--dry-run'], join(REPO, 'examples'));
    expect(plan.stderr).toBe('');
    expect(plan.stdout).toMatch(/dry run: nothing written/);
  });

  it("npm run ectl works from another directory: relative paths are the caller's, not the package root's", async () => {
    const caller = join(base, 'caller');
    mkdirSync(join(caller, 'my-layer'), { recursive: true });
    writeFileSync(join(caller, 'my-layer', 'server.properties'), 'motd=npm run\n');
    const r = await run(
      'npm',
      ['--prefix', PKG, 'run', '--silent', 'ectl', '--', 'layers', 'push', 'npm-run-layer', 'my-layer', '--json'],
      { cwd: caller, env: target() },
    );
    expect(r.stderr).toMatch(/^uploading npm-run-layer: /);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: 'npm-run-layer' });
  });

  it("npx --no-install ectl runs the package's own bin inside it, and never fetches an unrelated one outside it", async () => {
    expect(await run('npx', ['--no-install', 'ectl', '--version'], { cwd: PKG })).toMatchObject({ code: 0, stdout: '0.1.0\n' });
    const outside = await run('npx', ['--no-install', 'ectl', '--version'], { cwd: base });
    expect(outside.code).not.toBe(0);
    expect(outside.stdout).toBe('');
  });

  it('says in one line that it is not built', async () => {
    const pkg = join(base, 'unbuilt');
    mkdirSync(join(pkg, 'bin'), { recursive: true });
    cpSync(BIN, join(pkg, 'bin', 'ectl.js'));
    writeFileSync(join(pkg, 'package.json'), '{"type":"module"}');
    const r = await run(process.execPath, [join(pkg, 'bin', 'ectl.js'), '--version'], { cwd: base });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^error: ectl is not built \([^\n]*dist\/ectl\.mjs is missing\): run npm run build:ectl \(or npm ci\) in the orchestrator directory\n$/,
    );
  });

  it('pointed at an agent or another web server it says so in one line, never printing the page', async () => {
    const agentUrl = agents.controlUrl('host-z');
    const atAgent = await ectl(['hosts', 'ls'], base, agentUrl);
    expect(atAgent.code).toBe(1);
    expect(atAgent.stderr).toBe(
      `error: ${agentUrl} is an EnderCloud agent (host host-z), not the orchestrator: point ectl at the orchestrator's URL (ectl login --url URL, or ENDERCLOUD_URL)\n`,
    );
    for (const args of [
      ['hosts', 'ls'],
      ['instances', 'logs', 'x'],
      ['login', '--url', webUrl, '--token', 't'],
    ]) {
      const r = await ectl(args, base, webUrl);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(
        `error: ${webUrl} is not an EnderCloud orchestrator (GET /api/v1/health answered HTTP 200 with an HTML page): check the URL (ectl context ls, or ENDERCLOUD_URL)\n`,
      );
    }
  });

  it('bash completion completes commands, sub-commands and options', async () => {
    const script = join(base, 'ectl.bash');
    const r = await ectl(['completion', 'bash'], base);
    expect(r.code).toBe(0);
    writeFileSync(script, r.stdout);
    const complete = (line: string) =>
      run(
        'bash',
        ['-c', `source ${script}; COMP_WORDS=(${line}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _ectl; printf '%s\\n' "\${COMPREPLY[@]}"`],
        { cwd: base },
      );
    expect((await complete('ectl ins')).stdout).toBe('instances\n');
    expect((await complete(`ectl instances re`)).stdout.split('\n').filter(Boolean).sort()).toEqual([
      'reinstall',
      'reset-crash-loop',
      'restart',
      'restore',
      'resume',
      'revisions',
    ]);
    expect((await complete(`ectl i delete --c`)).stdout.split('\n').filter(Boolean)).toEqual(['--confirm']);
    expect((await ectl(['completion', 'fish'], base)).stdout).toMatch(
      /^complete -c ectl -n '__ectl_path_is \\'instances\\'' -f -a 'start' /m,
    );
    expect((await ectl(['completion', 'tcsh'], base)).code).toBe(2);
  });

  it('bash completion completes group and template names from the API, fixed option values, and stays quiet (and quick) without an API', async () => {
    const api = (path: string, body: unknown) =>
      fetch(`${orchestrator.url}/api/v1${path}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await api('/templates/paper/versions/1', { image: 'mc:1', resources: { memoryMb: 256 } })).status).toBe(201);
    for (const g of ['lobby', 'survival'])
      expect(
        (await api(`/groups/${g}`, { kind: 'persistent', variants: [{ id: 'v', template: { name: 'paper', version: '1' } }] })).status,
      ).toBe(201);
    const script = join(base, 'ectl-names.bash');
    writeFileSync(script, (await ectl(['completion', 'bash'], base)).stdout);
    // `ectl` on the PATH, as after npm install -g: the script calls `ectl __complete KIND`.
    const binDir = join(base, 'path-bin');
    mkdirSync(binDir, { recursive: true });
    writeFileSync(join(binDir, 'ectl'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`, {
      mode: 0o755,
    });
    const complete = (line: string, url = orchestrator.url) =>
      run(
        'bash',
        ['-c', `source ${script}; COMP_WORDS=(${line}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _ectl; printf '%s\\n' "\${COMPREPLY[@]}"`],
        {
          cwd: base,
          env: { ...target(url), PATH: `${binDir}:${process.env.PATH ?? ''}` },
        },
      );
    const words = async (line: string, url?: string) => (await complete(line, url)).stdout.split('\n').filter(Boolean);
    expect(await words(`ectl groups get ''`)).toEqual(expect.arrayContaining(['lobby', 'survival']));
    expect(await words('ectl spawn s')).toEqual(['survival']);
    expect(await words('ectl templates get p')).toEqual(['paper']);
    expect(await words('ectl instances ls --group l')).toEqual(['lobby']);
    expect((await words('ectl i ls --state pa')).sort()).toEqual(['paused', 'pausing']);
    expect(await words('ectl instances stop x --on-backup-failure s')).toEqual(['stop_without_backup']);
    // A second positional is not a name; an option still completes.
    expect(await words('ectl spawn lobby --w')).toEqual(['--wait']);
    expect(await words('ectl templates get paper ""')).not.toContain('paper');
    const t0 = Date.now();
    const quiet = await complete('ectl spawn s', `http://127.0.0.1:${await freePort()}`);
    expect(quiet).toMatchObject({ code: 0, stdout: '\n', stderr: '' }); // printf of an empty reply
    expect(Date.now() - t0).toBeLessThan(5000);
    expect((await ectl(['__complete', 'groups'], base)).stdout).toBe('lobby\nsurvival\n');
    expect(await ectl(['__complete', 'nonsense'], base)).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect((await ectl(['--help'], base)).stdout).not.toMatch(/__complete/);
    const fish = (await ectl(['completion', 'fish'], base)).stdout;
    expect(fish).toMatch(/^complete -c ectl -n '__ectl_path_is \\'spawn\\'' -f -a '\(ectl __complete groups 2>\/dev\/null\)'$/m);
    expect(fish).toMatch(/^complete -c ectl -n '__ectl_path_is \\'instances ls\\'' -l state -x -a 'draft [^']*online[^']*' -d /m);
  });
});
