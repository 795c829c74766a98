// End to end on the real Docker engine, with NO shared agent token anywhere:
// an in-process orchestrator, a join token made with ectl, and a real agent
// process (`tsx src/agent/index.ts`) started with AGENT_JOIN_TOKEN. It enrols,
// saves its credentials (0600), beats with its host credential, downloads a
// layer with it, accepts the orchestrator's calls with the call credential,
// and runs an instance. Restarted with the same (now used) join token in its
// environment, it comes back on its saved credentials.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { randomPortRange, removeNetwork } from '../support/agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { busyboxImage, ensureImage } from '../support/images.js';
import { freePort } from '../support/registry.js';

const run = uniqueId('enrol');
const ADMIN_TOKEN = `admin-${run}-${'a'.repeat(16)}`;
const NETWORK = `${run}-net`;
const AGENT_ID = `${run}-host`;
const AGENT_ENTRY = fileURLToPath(new URL('../../src/agent/index.ts', import.meta.url));

const base = mkdtempSync(join(tmpdir(), 'ec-enrol-e2e-'));
const configPath = join(base, 'config', 'config.json');
let orchestrator: Orchestrator | undefined;
let child: ChildProcess | undefined;
const log: string[] = [];

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; agent log:\n${log.join('')}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function ectl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = bufferOutput();
  const code = await runCli(args, { output, env: { configPath, urlOverride: undefined, tokenOverride: undefined }, version: 'e2e' });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

async function ectlJson<T>(args: string[]): Promise<T> {
  const r = await ectl([...args, '--json']);
  if (r.code !== 0) throw new Error(`ectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

function startAgent(env: NodeJS.ProcessEnv): ChildProcess {
  const c = spawn(process.execPath, ['--import', 'tsx', AGENT_ENTRY], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (b: Buffer) => {
    log.push(b.toString());
    if (log.length > 200) log.shift();
  };
  c.stdout!.on('data', keep);
  c.stderr!.on('data', keep);
  return c;
}

async function stopAgent(): Promise<void> {
  const c = child;
  if (!c || c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise<void>((r) => c.once('exit', () => r()));
  c.kill('SIGKILL');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
}

afterAll(async () => {
  await stopAgent();
  await orchestrator?.stop().catch(() => undefined);
  await removeContainersByLabel({ 'orchestrator.host': AGENT_ID });
  await removeNetwork(NETWORK);
  rmSync(base, { recursive: true, force: true });
});

describe('an agent enrolled with AGENT_JOIN_TOKEN (real Docker, no shared agent token)', () => {
  it('enrols, saves its credentials 0600, runs an instance, and restarts on its saved credentials', async () => {
    const image = await ensureImage({
      name: 'enrol-sleeper',
      dockerfile: `FROM ${await ensureImage(busyboxImage)}\nCMD ["/bin/sh", "-c", "exec /bin/sleep 3600"]`,
      files: () => [],
    });
    const port = await freePort();
    orchestrator = await startOrchestrator(
      orchestratorConfig({
        ENDERCLOUD_LISTEN: `127.0.0.1:${port}`,
        ENDERCLOUD_DATA_DIR: join(base, 'orchestrator'),
        ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
        ENDERCLOUD_COMMAND_POLL_INTERVAL: '100ms',
        ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '3',
        ENDERCLOUD_OFFLINE_SWEEP_INTERVAL: '100ms',
        ENDERCLOUD_LOG_LEVEL: 'silent',
      }),
      { logger: pino({ level: 'silent' }) },
    );
    expect((await ectl(['login', '--url', orchestrator.url, '--token', ADMIN_TOKEN])).code).toBe(0);
    const jt = await ectlJson<{ id: string; secret: string }>(['hosts', 'join-token', 'create', '--agent-id', AGENT_ID, '--ttl', '10m']);
    expect(jt.secret).toMatch(/^ecj_/);

    const agentPort = await freePort();
    const range = randomPortRange(10);
    const runtimeDir = join(base, 'agent', 'runtime');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      AGENT_ID,
      AGENT_ORCHESTRATOR_URL: orchestrator.url,
      AGENT_LISTEN_ADDRESS: '127.0.0.1',
      AGENT_PORT: String(agentPort),
      AGENT_CONTROL_URL: `http://127.0.0.1:${agentPort}`,
      AGENT_GAME_ADDRESS: '127.0.0.1',
      AGENT_GAME_BIND_ADDRESS: '127.0.0.1',
      AGENT_GAME_PORT_RANGE: `${range.first}-${range.last}`,
      AGENT_RUNTIME_DIRECTORY: runtimeDir,
      AGENT_CACHE_DIRECTORY: join(base, 'agent', 'cache'),
      AGENT_DOCKER_NETWORK: NETWORK,
      AGENT_HEARTBEAT_INTERVAL: '300ms',
      AGENT_STOP_TIMEOUT: '1s',
      AGENT_JOIN_TOKEN: jt.secret,
      AGENT_LOG_LEVEL: 'warn',
    };
    child = startAgent(env);
    await until('the enrolled host ONLINE', async () => {
      const h = await ectlJson<{ status: string; credential: { mode: string } }>(['hosts', 'get', AGENT_ID]).catch(() => undefined);
      return h?.status === 'ONLINE' && h.credential.mode === 'enrolled';
    });
    const file = join(runtimeDir, 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { hostCredential: string; callCredential: string; generation: number };
    expect(saved).toMatchObject({ hostCredential: expect.stringMatching(/^ech_/), generation: 1 });
    // The agent API refuses anyone without the call credential.
    expect((await fetch(`http://127.0.0.1:${agentPort}/api/v1/instances`)).status).toBe(401);
    expect(
      (await fetch(`http://127.0.0.1:${agentPort}/api/v1/instances`, { headers: { authorization: `Bearer ${saved.hostCredential}` } }))
        .status,
    ).toBe(401);

    // A layer (downloaded by the agent with its host credential), a template, a group, an instance.
    const layerDir = join(base, 'layer');
    mkdirSync(layerDir, { recursive: true });
    writeFileSync(join(layerDir, 'motd.txt'), `hello ${run}\n`);
    await ectlJson(['layers', 'push', `${run}-base`, layerDir]);
    const network = join(base, 'network.yml');
    writeFileSync(
      network,
      [
        'templates:',
        `  - name: ${run}-sleeper`,
        '    version: "1"',
        '    spec:',
        `      image: ${image}`,
        '      resources: { memoryMb: 64 }',
        '      stop: { timeoutMs: 1000 }',
        `      layers: [${run}-base]`,
        'groups:',
        `  - id: ${run}-world`,
        '    kind: persistent',
        '    variants:',
        `      - { id: v1, template: ${run}-sleeper@1 }`,
        '',
      ].join('\n'),
    );
    expect((await ectl(['apply', '-f', network])).code).toBe(0);
    const instance = await ectlJson<{ id: string; hostId: string }>(['instances', 'create', '--group', `${run}-world`, '--variant', 'v1']);
    expect(instance.hostId).toBe(AGENT_ID);
    await until(
      'the created container running',
      async () =>
        (await docker().listContainers({ all: true, filters: { label: [`orchestrator.instance=${instance.id}`] } })).some(
          (c) => c.State === 'running',
        ),
      120_000,
      200,
    );

    // Restart with the same (used) join token still in the environment: harmless, the saved credentials are used.
    await stopAgent();
    await until(
      'the host OFFLINE',
      async () => (await ectlJson<{ status: string }>(['hosts', 'get', AGENT_ID])).status === 'OFFLINE',
      30_000,
    );
    child = startAgent(env);
    await until('the host ONLINE again', async () => (await ectlJson<{ status: string }>(['hosts', 'get', AGENT_ID])).status === 'ONLINE');
    expect((await ectlJson<{ credential: { generation: number } }>(['hosts', 'get', AGENT_ID])).credential.generation).toBe(1);
    const tokens = await ectlJson<Array<{ id: string; state: string; usedBy: string }>>(['hosts', 'join-token', 'list']);
    expect(tokens.find((t) => t.id === jt.id)).toMatchObject({ state: 'used', usedBy: AGENT_ID });
  }, 240_000);
});
