// `npm start`: the newcomer's one command — a whole network on one box. Starts
// the orchestrator (embedded SQLite in ./data unless configured otherwise), one
// local agent as a child process against the local Docker socket (game ports
// published on 127.0.0.1 only, so players come through the router), and the
// router on 25565 following the orchestrator, with a config that routes every
// group (dev-router-config.ts); builds the example network's server image and
// ectl (dev-prepare.ts); prints how to join each group, where the admin token
// is and the next commands, with the values actually in force.
// Ctrl-C stops all three (game containers keep running).

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOrExit } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { loadOrchestratorConfig, processEnv } from './config.js';
import { startOrchestrator, type Orchestrator } from './orchestrator.js';
import { followGroups, groupHost, inspectRouterConfig } from './dev-router-config.js';
import { prepareEctl, prepareExampleImage } from './dev-prepare.js';

const AGENT_ENTRY = fileURLToPath(new URL('../agent/index.ts', import.meta.url));
const ROUTER_ENTRY = fileURLToPath(new URL('../router/index.ts', import.meta.url));
const DEFAULT_ROUTER_BIND = '0.0.0.0:25565';
const EXAMPLE_FILE = fileURLToPath(new URL('../../../examples/network.yml', import.meta.url));
/** What the idle tiers do when nobody configured them (the lead's system default; docs/provisioning.md). */
const SLEEP_LINE = 'on by default: empty worlds pause after 10 min and stop after 6 h (docs/provisioning.md)';
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
    // Players reach games through the router; a game port is not a way around it.
    AGENT_GAME_BIND_ADDRESS: '127.0.0.1',
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
  const say = (line: string) => process.stdout.write(`npm start: ${line}\n`);
  const ectlProblem = prepareEctl(say);
  const image = await prepareExampleImage(env.AGENT_DOCKER_SOCKET ?? '/var/run/docker.sock', say);

  const orchestrator: Orchestrator = await startOrchestrator({ ...config, dataDir }, { logger });
  const localAgentEnv = agentEnv(env as NodeJS.ProcessEnv, dataDir, orchestrator.url, agentToken);
  const agent = spawn(process.execPath, ['--import', 'tsx', AGENT_ENTRY], { env: localAgentEnv, stdio: ['ignore', 'inherit', 'inherit'] });
  const routerFile = await inspectRouterConfig(dataDir, env.ENDERCLOUD_ROUTER_BIND?.trim() || DEFAULT_ROUTER_BIND);
  const following = await followGroups(
    { groupIds: async () => (await orchestrator.store.groups.list()).map((g) => g.id), changes: orchestrator.ctx.changes },
    routerFile,
    (err) => logger.warn({ err: err.message }, 'could not rewrite the router config'),
  );
  const { file: routerConfig, bind: routerBind } = routerFile;
  const routerToken = await ensureRouterToken(orchestrator, dataDir);
  const router = spawn(process.execPath, ['--import', 'tsx', ROUTER_ENTRY], {
    env: {
      ...(env as NodeJS.ProcessEnv),
      ENDERCLOUD_ROUTER_CONFIG: routerConfig,
      ENDERCLOUD_ORCHESTRATOR_URL: orchestrator.url,
      ENDERCLOUD_ROUTER_TOKEN: routerToken,
      ENDERCLOUD_ROUTER_ID: 'dev-router',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });

  let stopping = false;
  const shutdown = async (reason: string, code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, 'dev stack stopping');
    following.stop();
    // Managed containers keep running: stopping the stack never stops a game.
    for (const child of [router, agent]) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.all([waitForExit(router, AGENT_STOP_BOUND_MS), waitForExit(agent, AGENT_STOP_BOUND_MS)]);
    await orchestrator.stop();
    process.stdout.write('EnderCloud dev stack stopped.\n');
    process.exit(code);
  };
  agent.once('exit', (exitCode, signal) => {
    if (stopping) return;
    process.stderr.write(`local agent exited (${signal ?? `code ${exitCode}`}); stopping the dev stack\n`);
    void shutdown('agent exited', 1);
  });
  router.once('exit', (exitCode, signal) => {
    if (stopping) return;
    process.stderr.write(
      `router exited (${signal ?? `code ${exitCode}`}); is ${routerBind} free? (ENDERCLOUD_ROUTER_BIND chooses another); stopping the dev stack\n`,
    );
    void shutdown('router exited', 1);
  });
  process.once('SIGINT', () => void shutdown('SIGINT', 0));
  process.once('SIGTERM', () => void shutdown('SIGTERM', 0));

  const tokenFile = orchestrator.adminToken.file ? path.resolve(orchestrator.adminToken.file) : undefined;
  const tokenArg = tokenFile ? `"$(cat ${tokenFile})"` : '"$ENDERCLOUD_ADMIN_TOKEN"';
  const ectl = ectlProblem ? 'npx --no-install ectl' : './bin/ectl.js';
  const port = routerBind.slice(routerBind.lastIndexOf(':') + 1);
  const groups = await bannerGroups(orchestrator);
  const width = Math.max(0, ...groups.map((g) => groupHost(g).length + port.length + 1));
  process.stdout.write(
    [
      '',
      'EnderCloud dev stack',
      `  API           ${orchestrator.url}/api/v1   (OpenAPI: ${orchestrator.url}/api/v1/openapi.json)`,
      `  database      ${orchestrator.store.dialect}${config.databaseUrl ? '' : ` (${path.join(dataDir, 'endercloud.db')})`}`,
      `  admin token   ${tokenFile ?? 'ENDERCLOUD_ADMIN_TOKEN (preset)'}`,
      `  SFTP          ${orchestrator.sftp ? `sftp -P ${orchestrator.sftp.port} <token name>.<instance id>@${orchestrator.sftp.host}   (password: the token; needs files:read or files:write)` : 'off (ENDERCLOUD_SFTP_PORT=0)'}`,
      `  local agent   AGENT_ID=${localAgentEnv.AGENT_ID}, game ports ${localAgentEnv.AGENT_GAME_PORT_RANGE ?? '30000-30099'} on ${localAgentEnv.AGENT_GAME_BIND_ADDRESS}, Docker ${env.AGENT_DOCKER_SOCKET ?? '/var/run/docker.sock'}, runtime ${localAgentEnv.AGENT_RUNTIME_DIRECTORY}`,
      `  router        ${routerBind} (config ${routerConfig}${routerFile.generated ? ', follows the groups' : ', yours: new groups need an entry'})`,
      `  server image  ${'tag' in image ? `${image.tag} (built here, no internet needed)` : image.problem}`,
      `  sleep         ${SLEEP_LINE}`,
      ...(ectlProblem ? [`  ectl          ${ectlProblem}`] : []),
      '',
      'Next (from this directory):',
      `  ${ectl} login --url ${orchestrator.url} --token ${tokenArg}`,
      `  ${ectl} apply -f ../examples/network.yml        # real Minecraft, with internet: network-itzg.yml`,
      `  ${ectl} instances create --group survival --variant vanilla --name survival-1 --wait`,
      `  ${ectl} fleet lobby`,
      '',
      routerFile.generated
        ? 'Join (Minecraft: Multiplayer → Direct Connection), one address per group:'
        : `Join (Minecraft: Multiplayer → Direct Connection): localhost:${port}, routed as ${routerConfig} says`,
      ...(routerFile.generated
        ? groups.map(
            (g) => `  ${`${groupHost(g)}:${port}`.padEnd(width)}   group ${g}${g === 'lobby' ? ` (also plain localhost:${port})` : ''}`,
          )
        : []),
      ...(routerFile.generated && groups.length > 0
        ? [`  (a name that does not resolve: add "127.0.0.1 ${groups.map(groupHost).join(' ')}" to /etc/hosts)`]
        : []),
      '',
      'Ctrl-C stops the orchestrator, the agent and the router (game containers keep running).',
      '',
    ].join('\n'),
  );
}

/** The example network's groups and the registry's, lobby first (the join lines of the banner). */
async function bannerGroups(orchestrator: Orchestrator): Promise<string[]> {
  const ids = new Set((await orchestrator.store.groups.list()).map((g) => g.id));
  try {
    const doc = parseYaml(await readFile(EXAMPLE_FILE, 'utf8')) as { groups?: { id?: unknown }[] };
    for (const g of doc.groups ?? []) if (typeof g.id === 'string') ids.add(g.id);
  } catch {
    // no example file next to this checkout: the registry's groups only
  }
  return [...ids].sort((a, b) => (a === 'lobby' ? -1 : b === 'lobby' ? 1 : a.localeCompare(b)));
}

/** The router's own narrow token (`router` scope), kept in the data dir and reused while it is valid. */
async function ensureRouterToken(orchestrator: Orchestrator, dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'router-token');
  try {
    const secret = (await readFile(file, 'utf8')).trim();
    if (secret && (await orchestrator.ctx.tokens.authenticate(secret))) return secret;
  } catch {
    // none yet
  }
  const { secret } = await orchestrator.ctx.tokens.create('dev-router', ['router']);
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

main().catch((err: unknown) => {
  process.stderr.write(`npm start: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
