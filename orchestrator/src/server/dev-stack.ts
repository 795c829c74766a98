// `npm start`: the newcomer's one command. Starts the orchestrator (embedded
// SQLite in ./data unless configured otherwise) and one local agent as a child
// process against the local Docker socket, sharing a generated agent token;
// prints where the API and the admin token are; Ctrl-C stops both.

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrExit } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { loadOrchestratorConfig, processEnv } from './config.js';
import { startOrchestrator, type Orchestrator } from './orchestrator.js';

const AGENT_ENTRY = fileURLToPath(new URL('../agent/index.ts', import.meta.url));
const AGENT_STOP_BOUND_MS = 15_000;

/** The local agent's environment: dev defaults, the operator's AGENT_* values win, token and URL are the stack's. */
function agentEnv(env: NodeJS.ProcessEnv, dataDir: string, orchestratorUrl: string, token: string): NodeJS.ProcessEnv {
  const port = env.AGENT_PORT ?? '8081';
  const defaults: Record<string, string> = {
    AGENT_ID: 'local',
    AGENT_LISTEN_ADDRESS: '127.0.0.1',
    AGENT_PORT: port,
    AGENT_CONTROL_URL: `http://127.0.0.1:${port}`,
    AGENT_GAME_ADDRESS: '127.0.0.1',
    AGENT_RUNTIME_DIRECTORY: path.join(dataDir, 'agent', 'runtime'),
    AGENT_CACHE_DIRECTORY: path.join(dataDir, 'agent', 'cache'),
  };
  const out: NodeJS.ProcessEnv = { ...env };
  for (const [k, v] of Object.entries(defaults)) if (!out[k]) out[k] = v;
  out.AGENT_ORCHESTRATOR_URL = orchestratorUrl;
  out.AGENT_TOKEN = token;
  return out;
}

function waitForExit(child: ChildProcess, boundMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve();
    }, boundMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function main(): Promise<void> {
  const env = processEnv();
  // One shared secret per run unless the operator set one: agents need it to download layers.
  const agentToken = env.ENDERCLOUD_AGENT_TOKEN?.trim() || randomBytes(24).toString('base64url');
  const config = loadOrExit(() => loadOrchestratorConfig({ ...env, ENDERCLOUD_AGENT_TOKEN: agentToken }), 'npm start');
  const dataDir = path.resolve(config.dataDir);
  const logger = createLogger('orchestrator', config.logLevel);
  await mkdir(path.join(dataDir, 'agent'), { recursive: true });

  const orchestrator: Orchestrator = await startOrchestrator({ ...config, dataDir }, { logger });
  const agent = spawn(process.execPath, ['--import', 'tsx', AGENT_ENTRY], {
    env: agentEnv(env as NodeJS.ProcessEnv, dataDir, orchestrator.url, agentToken),
    stdio: ['ignore', 'inherit', 'inherit'],
  });

  let stopping = false;
  const shutdown = async (reason: string, code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, 'dev stack stopping');
    // Managed containers keep running: stopping the stack never stops a game.
    if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGTERM');
    await waitForExit(agent, AGENT_STOP_BOUND_MS);
    await orchestrator.stop();
    process.stdout.write('EnderCloud dev stack stopped.\n');
    process.exit(code);
  };
  agent.once('exit', (exitCode, signal) => {
    if (stopping) return;
    process.stderr.write(`local agent exited (${signal ?? `code ${exitCode}`}); stopping the dev stack\n`);
    void shutdown('agent exited', 1);
  });
  process.once('SIGINT', () => void shutdown('SIGINT', 0));
  process.once('SIGTERM', () => void shutdown('SIGTERM', 0));

  const tokenFile = orchestrator.adminToken.file ? path.resolve(orchestrator.adminToken.file) : undefined;
  const tokenArg = tokenFile ? `"$(cat ${tokenFile})"` : '"$ENDERCLOUD_ADMIN_TOKEN"';
  process.stdout.write(
    [
      '',
      'EnderCloud dev stack',
      `  API           ${orchestrator.url}/api/v1   (OpenAPI: ${orchestrator.url}/api/v1/openapi.json)`,
      `  database      ${orchestrator.ctx.store.dialect}${config.databaseUrl ? '' : ` (${path.join(dataDir, 'endercloud.db')})`}`,
      `  admin token   ${tokenFile ?? 'ENDERCLOUD_ADMIN_TOKEN (preset)'}`,
      `  local agent   AGENT_ID=local, Docker ${env.AGENT_DOCKER_SOCKET ?? '/var/run/docker.sock'}, runtime ${path.join(dataDir, 'agent')}`,
      '',
      `  npx ectl login --url ${orchestrator.url} --token ${tokenArg}`,
      '  npx ectl hosts ls',
      '',
      'Ctrl-C stops the orchestrator and the agent (game containers keep running).',
      '',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`npm start: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
