// ectl's streamed commands against a real orchestrator (socket, worker,
// supervisor; SQLite in a temp dir) and a real agent on Docker with the
// Minecraft-protocol test server: `logs --follow` streams until Ctrl-C or the
// container stops, `exec` runs one command over RCON or stdin, `console`
// follows the log and sends typed lines (piped input ending, Ctrl-C), and
// `templates import-egg --version V` imports the stdin egg.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput, type BufferedOutput } from '../../src/cli/output.js';
import { runCli, type Interrupt } from '../../src/cli/program.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator } from '../../src/server/orchestrator.js';
import { createTestAgent, randomPortRange, removeNetwork, type TestAgent } from '../support/agent-harness.js';
import { removeContainersByLabel, uniqueId } from '../support/docker.js';
import { eggFixtureText } from '../support/eggs.js';
import { ensureImage } from '../support/images.js';
import { mcServerImage } from '../support/mc-server.js';
import { freePort } from '../support/registry.js';
import { heartbeatBody } from '../server/support.js';

const RUN = uniqueId('ectl-streams');
const AGENT_ID = `${RUN}-host`;
const NETWORK = `${RUN}-net`;
const ADMIN = `admin-${RUN}-0123456789abcdef`;
const AGENT_TOKEN = `agent-${RUN}-0123456789abcdef`;
const RCON_PASSWORD = `rcon-${RUN}`;
const portRange = randomPortRange(6);

let base: string;
let orchestrator: { url: string; stop(): Promise<void> };
let agent: TestAgent;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

interface Live {
  output: BufferedOutput;
  done: Promise<number>;
  /** Ctrl-C */
  interrupt(): void;
}

/** Starts ectl in-process with its own Ctrl-C and stdin; `done` is its exit code. */
function start(args: string[], input?: NodeJS.ReadableStream): Live {
  const output = bufferOutput();
  const controller = new AbortController();
  let disposed = false;
  const interrupt = (): Interrupt => ({ signal: controller.signal, dispose: () => void (disposed = true) });
  const done = runCli(args, {
    output,
    version: 'test',
    interrupt,
    ...(input ? { input: () => input } : {}),
    env: { configPath: join(base, 'config.json'), urlOverride: orchestrator.url, tokenOverride: ADMIN },
  }).then((code) => {
    expect(disposed || !args.some((a) => a === '--follow' || a === 'console')).toBe(true);
    return code;
  });
  return { output, done, interrupt: () => controller.abort() };
}

async function ectl(args: string[], input?: NodeJS.ReadableStream): Promise<Run> {
  const live = start(args, input);
  const code = await live.done;
  return { code, stdout: live.output.stdout, stderr: live.output.stderr };
}

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${orchestrator.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));
const ENTRY = fileURLToPath(new URL('../../src/cli/index.ts', import.meta.url));

/** ectl as a real process (its own stdin, SIGINT): resolves with its exit code and output; killed after 60 s. */
function ectlProcess(
  args: string[],
  o: { stdin?: string; onStdout?: (text: string, child: ReturnType<typeof spawn>) => void } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX, ENTRY, ...args], {
      cwd: base,
      env: {
        PATH: process.env.PATH,
        ENDERCLOUD_SFTP_PORT: '0',
        HOME: base,
        XDG_CONFIG_HOME: join(base, 'xdg'),
        ENDERCLOUD_URL: orchestrator.url,
        ENDERCLOUD_TOKEN: ADMIN,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      o.onStdout?.(stdout, child);
    });
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    if (o.stdin !== undefined) child.stdin.end(o.stdin);
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

const logTail = async (name: string): Promise<string> => (await ectl(['instances', 'logs', name, '--tail', '50'])).stdout;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ectl-streams-'));
  const image = await ensureImage(mcServerImage);
  orchestrator = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN,
      ENDERCLOUD_AGENT_TOKEN: AGENT_TOKEN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
      ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
      ENDERCLOUD_SUPERVISE_INTERVAL: '150ms',
      ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
      ENDERCLOUD_COMMAND_RETRY_MAX: '500ms',
    }),
  );
  agent = await createTestAgent({ agentId: AGENT_ID, orchestratorUrl: orchestrator.url, portRange, network: NETWORK, token: AGENT_TOKEN });
  const agentUrl = await agent.app.listen({ host: '127.0.0.1', port: 0 });
  const beat = await fetch(`${orchestrator.url}/api/v1/agents/${AGENT_ID}/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${AGENT_TOKEN}` },
    body: JSON.stringify(heartbeatBody(agentUrl, { portRange, heartbeatIntervalMs: 600_000 })),
  });
  expect(beat.status).toBe(200);

  // The stdin egg, imported with --version (ectl's own --version is read only before the command).
  const eggFile = join(base, 'test-server.v2.json');
  writeFileSync(eggFile, eggFixtureText('test-server.v2.json'));
  const imported = await ectl(['templates', 'import-egg', eggFile, '--name', 'egg-srv', '--version', '1', '--memory', '256']);
  expect(imported.stderr).toBe('');
  expect(imported.stdout).toMatch(/^template egg-srv@1 created \(spec [0-9a-f]{12}\)$/m);
  expect(
    (
      await api('PUT', '/templates/mc-rcon/versions/1', {
        image,
        resources: { memoryMb: 256 },
        variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true }],
        readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 30_000, intervalMs: 100 },
        stop: { signal: 'SIGTERM', timeoutMs: 5000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await api('PUT', '/groups/g', {
        kind: 'persistent',
        variants: [
          { id: 'egg', template: { name: 'egg-srv', version: '1' } },
          { id: 'rcon', template: { name: 'mc-rcon', version: '1' } },
        ],
      })
    ).status,
  ).toBe(201);
  for (const [name, variantId, extra] of [
    ['egg-srv', 'egg', { settings: { EULA: true } }],
    ['rcon-srv', 'rcon', { secrets: { RCON_PASSWORD } }],
  ] as const) {
    expect((await api('POST', '/instances', { groupId: 'g', variantId, name, ...extra })).status).toBe(202);
  }
  for (const name of ['egg-srv', 'rcon-srv'])
    await waitFor(async () => (await api('GET', `/instances/${name}`)).body.state === 'online', `${name} online`, 60_000);
});

afterAll(async () => {
  await orchestrator?.stop();
  await removeContainersByLabel({ 'orchestrator.host': AGENT_ID });
  await agent?.close();
  await removeNetwork(NETWORK);
  if (base) rmSync(base, { recursive: true, force: true });
});

describe('ectl streamed commands on Docker', () => {
  it('logs --follow streams the lines written after it started, until Ctrl-C (exit 0), and closes the stream at the host', async () => {
    const live = start(['instances', 'logs', 'egg-srv', '--follow', '--tail', '5']);
    await waitFor(() => live.output.stdout.includes('Done ('), 'the tail');
    expect((await api('POST', '/instances/egg-srv/console', { command: 'after-start' })).status).toBe(200);
    await waitFor(() => live.output.stdout.includes('console: after-start\n'), 'the new line');
    expect(agent.runtime.openLogFollows).toBe(1);
    live.interrupt();
    expect(await live.done).toBe(0);
    await waitFor(() => agent.runtime.openLogFollows === 0, 'the engine stream to close');
  });

  it('the orchestrator endpoint as the web panel reads it: fetch + a reader, chunked text/plain, aborting ends it at the host; scope as the logs route', async () => {
    const abort = new AbortController();
    const res = await fetch(`${orchestrator.url}/api/v1/instances/egg-srv/logs?follow=true&tail=2`, {
      headers: { authorization: `Bearer ${ADMIN}` },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    // The container it reads (the panel's console tells a replacement from a reconnect by it).
    expect(res.headers.get('x-endercloud-container')).toMatch(/^[0-9a-f]{64}$/);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (needle: string) => {
      for (let i = 0; i < 1000 && !text.includes(needle); i++) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      expect(text).toContain(needle);
    };
    await api('POST', '/instances/egg-srv/console', { command: 'for-the-panel' });
    await readUntil('console: for-the-panel\n');
    abort.abort();
    await waitFor(() => agent.runtime.openLogFollows === 0, 'the engine stream to close');
    const other = await api('POST', '/tokens', { name: `${RUN}-hosts`, scopes: ['hosts:read'] });
    const refused = await fetch(`${orchestrator.url}/api/v1/instances/egg-srv/logs?follow=true`, {
      headers: { authorization: `Bearer ${other.body.secret as string}` },
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
  });

  it('exec runs one command over RCON and prints the reply', async () => {
    const r = await ectl(['instances', 'exec', 'rcon-srv', '--', 'list']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^There are 0 of a max of 20 players online: \n$/);
    expect(JSON.parse((await ectl(['instances', 'exec', 'rcon-srv', '--json', '--', 'save-all'])).stdout)).toEqual({
      via: 'rcon',
      response: 'Saved the game',
    });
  });

  it('exec writes to stdin when the template has no RCON (the answer is in the log)', async () => {
    const r = await ectl(['instances', 'exec', 'egg-srv', '--', 'say', 'hello', 'there']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^written to the server's stdin \(no reply there; its output is in: ectl instances logs egg-srv\)\n$/);
    await waitFor(async () => (await logTail('egg-srv')).includes('console: say hello there'), 'the line in the log');
  });

  it('console over stdin: piped lines are sent in order; the end of the input ends it cleanly', async () => {
    const r = await ectl(
      ['instances', 'console', 'egg-srv', '--tail', '1', '--linger', '2000'],
      Readable.from(['first line\n', '\n', 'second\n']),
    );
    expect(r.stderr).toMatch(/^console of egg-srv \(online\): each line is sent as a command; Ctrl-D or Ctrl-C ends it\n$/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/console: first line\n(.*\n)*console: second\n/);
  });

  it("console over RCON: each typed line's reply is printed; Ctrl-C ends it and closes the stream", async () => {
    const typing = new PassThrough();
    const live = start(['instances', 'console', 'rcon-srv'], typing);
    await waitFor(() => live.output.stdout.includes('Done ('), 'the tail');
    typing.write('list\n');
    await waitFor(() => live.output.stdout.includes('There are 0 of a max of 20 players online'), 'the RCON reply');
    typing.write('say from the console\n');
    await waitFor(() => live.output.stdout.includes('[Server] from the console'), 'the say line in the log');
    live.interrupt();
    expect(await live.done).toBe(0);
    await waitFor(() => agent.runtime.openLogFollows === 0, 'the engine stream to close');
  });

  it('as a real process: console with piped stdin exits 0 at the end of the input; logs --follow exits 0 on SIGINT', async () => {
    const piped = await ectlProcess(['instances', 'console', 'egg-srv', '--tail', '1'], { stdin: 'say from a pipe\n' });
    expect(piped.stderr).toMatch(/^console of egg-srv \(online\)/);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain('console: say from a pipe');
    let signalled = false;
    const followed = await ectlProcess(['instances', 'logs', 'egg-srv', '--follow', '--tail', '3'], {
      onStdout: (text, child) => {
        if (!signalled && text.includes('console: say from a pipe')) {
          signalled = true;
          child.kill('SIGINT');
        }
      },
    });
    expect(signalled).toBe(true);
    expect(followed).toMatchObject({ code: 0, stderr: '' });
    await waitFor(() => agent.runtime.openLogFollows === 0, 'the engine stream to close');
  });

  it("logs --follow ends by itself when the container stops; then exec fails with the server's error", async () => {
    const live = start(['instances', 'logs', 'egg-srv', '--follow', '--tail', '1']);
    await waitFor(() => agent.runtime.openLogFollows === 1, 'the stream to open');
    expect((await ectl(['instances', 'stop', 'egg-srv', '--wait', '--timeout', '30'])).code).toBe(0);
    expect(await live.done).toBe(0);
    expect(live.output.stdout).toContain('console: stop');
    expect(live.output.stderr).toBe('the log of egg-srv ended (the container stopped)\n');
    const r = await ectl(['instances', 'exec', 'egg-srv', '--', 'list']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: INSTANCE_NOT_RUNNING: .*stdin needs a running server/);
  });
});
