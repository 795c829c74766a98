// Deployment artefacts on the real engine: the repository's Dockerfile built
// on a locally made base (test/support/app-image.ts explains the base), the
// image running the agent and loading better-sqlite3, and the root Compose
// stack (compose.yml) started with Debian's docker-compose: the agent
// heartbeats to the orchestrator over the Compose network with the shared
// token, and its host becomes ONLINE; the stack's router, given a router token
// and a config on a free port, answers a server-list ping and follows the
// orchestrator with its token. Compose v2 (`docker compose`) is not installable
// here (Debian ships 1.29 only), so only 1.29 runs these.
// Not verified here: the default node:20-bookworm-slim base (no Docker registry
// is reachable). When the npm registry cannot be reached at all, the image
// tests report themselves skipped (NOT RUN).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAppImage, canBuildAppImage, REPO, type AppImageBuild } from '../support/app-image.js';
import { randomPortRange } from '../support/agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { freePort } from '../support/registry.js';
import { loadRouterConfig } from '../../src/router/config.js';
import { pingServer } from '../../src/protocol/status-client.js';

const RUN = uniqueId('deploy');
const LABEL = { 'endercloud.test-run': RUN };
const hasCompose = spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0;
let build: AppImageBuild | undefined;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  if (canBuildAppImage) build = await buildAppImage();
}, 600_000);

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await removeContainersByLabel(LABEL);
});

/** Skips (NOT RUN) when the registry was unreachable; fails on any other build error. */
function imageOrSkip(t: { skip: (note: string) => void }): string {
  if (!build) throw new Error('the image was not built');
  if (build.networkFailure) t.skip('NOT RUN: npm ci in the build could not reach the npm registry');
  expect(build.error, build.log.slice(-3000)).toBeUndefined();
  return build.tag;
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

const IMAGE_AGENT_TOKEN = 'image-test-shared-token-0123456789';

describe.skipIf(!canBuildAppImage)("Dockerfile (built on a locally made base with the host's npm)", () => {
  it('builds, loads better-sqlite3, runs the agent command, and refuses a bad variable with exit status 2', async (t) => {
    const tag = imageOrSkip(t);
    const port = await freePort();
    const agent = await docker().createContainer({
      Image: tag,
      Cmd: ['node', 'dist/src/agent/index.js'],
      Labels: LABEL,
      Env: [
        'AGENT_ID=image-test',
        // It listens on 0.0.0.0 in its container: without a token or an enrolment it refuses to start.
        `AGENT_TOKEN=${IMAGE_AGENT_TOKEN}`,
        'AGENT_ORCHESTRATOR_URL=http://127.0.0.1:9',
        'AGENT_RUNTIME_DIRECTORY=/tmp/runtime',
        'AGENT_CACHE_DIRECTORY=/tmp/cache',
        'AGENT_LOG_LEVEL=warn',
      ],
      ExposedPorts: { '8081/tcp': {} },
      HostConfig: { PortBindings: { '8081/tcp': [{ HostIp: '127.0.0.1', HostPort: String(port) }] } },
    });
    await agent.start();
    const health = await waitFor(
      'the agent in the image to answer /health',
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`, {
          headers: { authorization: `Bearer ${IMAGE_AGENT_TOKEN}` },
          signal: AbortSignal.timeout(2000),
        });
        return (await res.json()) as Record<string, unknown>;
      },
      20_000,
    );
    expect(health).toMatchObject({ status: 'ok', agentId: 'image-test', version: '0.1.0' });

    // The native module the orchestrator's store needs loads in the image.
    const sqlite = await docker().createContainer({
      Image: tag,
      Cmd: [
        'node',
        '-e',
        "const D = require('better-sqlite3'); process.exit(new D(':memory:').prepare('select 41 + 1 as x').get().x === 42 ? 0 : 1)",
      ],
      Labels: LABEL,
    });
    await sqlite.start();
    expect(((await sqlite.wait()) as { StatusCode: number }).StatusCode).toBe(0);

    const bad = await docker().createContainer({
      Image: tag,
      Cmd: ['node', 'dist/src/agent/index.js'],
      Labels: LABEL,
      Env: ['AGENT_ID=x', 'AGENT_ORCHESTRATOR_URL=http://o', 'AGENT_HEARTBEAT_INTERVAL=10'],
    });
    await bad.start();
    const { StatusCode } = (await bad.wait()) as { StatusCode: number };
    expect(StatusCode).toBe(2);
    const logs = (await bad.logs({ stdout: true, stderr: true })).toString('utf8');
    expect(logs).toContain('AGENT_HEARTBEAT_INTERVAL');
  }, 120_000);

  it.skipIf(!hasCompose)(
    'the root Compose stack starts the orchestrator and the agent, whose host becomes ONLINE',
    async (t) => {
      const tag = imageOrSkip(t);
      const project = RUN.replace(/[^a-z0-9]/g, '');
      const runtime = mkdtempSync(join(tmpdir(), 'ec-compose-'));
      const orchestratorPort = await freePort();
      const adminToken = randomBytes(24).toString('hex');
      const agentId = `compose-${project.slice(-6)}`;
      const game = randomPortRange(10);
      const controlOctet = 1 + (randomBytes(1)[0]! % 250);
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        ENDERCLOUD_SFTP_PORT: '0',
        HOME: process.env.HOME,
        ENDERCLOUD_IMAGE: tag,
        AGENT_TOKEN: randomBytes(24).toString('hex'),
        ENDERCLOUD_ADMIN_TOKEN: adminToken,
        ORCHESTRATOR_PORT: String(orchestratorPort),
        AGENT_PUBLISH_PORT: String(await freePort()),
        AGENT_DOCKER_NETWORK: `ec-${project}-games`,
        // The control network of its own (a subnet unlikely to be taken) with the agent's fixed address there.
        ENDERCLOUD_CONTROL_NETWORK: `ec-${project}`,
        ENDERCLOUD_CONTROL_SUBNET: `10.213.${controlOctet}.0/24`,
        AGENT_CONTROL_ADDRESS: `10.213.${controlOctet}.10`,
        AGENT_ID: agentId,
        AGENT_GAME_BIND_ADDRESS: '127.0.0.1',
        AGENT_GAME_PORT_RANGE: `${game.first}-${game.last}`,
        AGENT_RUNTIME_LOCAL_DIRECTORY: runtime,
        // docker-compose 1.29 does not expand the nested default; say it outright.
        AGENT_RUNTIME_HOST_DIRECTORY: runtime,
        AGENT_HEARTBEAT_INTERVAL: '1s',
      };
      const compose = (...args: string[]) =>
        spawnSync('docker-compose', ['-p', project, '-f', join(REPO, 'compose.yml'), ...args], {
          cwd: REPO,
          env,
          encoding: 'utf8',
          timeout: 120_000,
        });
      cleanups.push(() => {
        compose('down', '-v', '--remove-orphans', '-t', '2');
        rmSync(runtime, { recursive: true, force: true });
      });

      // The router is started below on a free port: its default bind is the host's 25565.
      const up = compose('up', '-d', '--no-build', 'orchestrator', 'agent');
      expect(up.status, up.stderr).toBe(0);
      const host = await waitFor(
        `host ${agentId} to become ONLINE through the Compose stack`,
        async () => {
          const res = await fetch(`http://127.0.0.1:${orchestratorPort}/api/v1/hosts/${agentId}`, {
            headers: { authorization: `Bearer ${adminToken}` },
            signal: AbortSignal.timeout(2000),
          });
          const body = (await res.json()) as { status?: string; controlUrl?: string };
          return body.status === 'ONLINE' ? body : undefined;
        },
        60_000,
      );
      expect(host.controlUrl).toBe('http://agent:8081');

      // The image carries the web panel: the orchestrator serves it at / (not the 503 "panel not built").
      const panel = await fetch(`http://127.0.0.1:${orchestratorPort}/`, { signal: AbortSignal.timeout(5000) });
      expect(panel.status).toBe(200);
      expect(panel.headers.get('content-type')).toContain('text/html');
      expect(await panel.text()).toContain('<div id="root">');

      // The router service: its own `router`-scoped token and a config bound to a free loopback port.
      const api = (path: string, init: RequestInit = {}) =>
        fetch(`http://127.0.0.1:${orchestratorPort}/api/v1${path}`, {
          ...init,
          headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
          signal: AbortSignal.timeout(5000),
        });
      const created = (await (
        await api('/tokens', { method: 'POST', body: JSON.stringify({ name: 'compose-router', scopes: ['router'] }) })
      ).json()) as { id: string; secret: string };
      const routerPort = await freePort();
      const routerDir = mkdtempSync(join(tmpdir(), 'ec-compose-router-'));
      cleanups.push(() => rmSync(routerDir, { recursive: true, force: true }));
      writeFileSync(
        join(routerDir, 'router.toml'),
        `bind = "127.0.0.1:${routerPort}"\ntry = ["lobby"]\n\n[servers]\nlobby = "group:lobby"\n`,
        { mode: 0o644 },
      );
      Object.assign(env, {
        ROUTER_TOKEN: created.secret,
        ROUTER_CONFIG: join(routerDir, 'router.toml'),
        ROUTER_ID: `router-${project.slice(-6)}`,
      });
      const router = compose('up', '-d', '--no-build', 'router');
      expect(router.status, router.stderr).toBe(0);
      const ping = await waitFor(
        'the Compose router to answer a status ping',
        () => pingServer('127.0.0.1', routerPort, { timeoutMs: 2000 }),
        30_000,
      );
      expect(ping.status.version?.name).toBe('EnderCloud');
      await waitFor(
        'the router to call the orchestrator with its token',
        async () => {
          const tokens = (await (await api('/tokens')).json()) as { tokens: { id: string; lastUsedAt: string | null }[] };
          return tokens.tokens.find((tk) => tk.id === created.id && tk.lastUsedAt !== null);
        },
        30_000,
      );
    },
    180_000,
  );
});

describe('Compose files', () => {
  it('run the agent from the same image with the Docker socket mounted: the local one on the shared token, a remote one enrolled', () => {
    const root = parse(readFileSync(join(REPO, 'compose.yml'), 'utf8'));
    expect(root.services.agent.image).toBe(root.services.orchestrator.image);
    expect(root.services.agent.command).toEqual(['node', 'dist/src/agent/index.js']);
    expect(root.services.agent.volumes).toContain('/var/run/docker.sock:/var/run/docker.sock');
    expect(root.services.agent.environment.AGENT_TOKEN).toMatch(/^\$\{AGENT_TOKEN:\?/);
    expect(root.services.orchestrator.environment.ENDERCLOUD_AGENT_TOKEN).toMatch(/^\$\{AGENT_TOKEN:\?/);
    const remote = parse(readFileSync(join(REPO, 'compose.agent.yml'), 'utf8'));
    expect(remote.services.agent.volumes).toContain('/var/run/docker.sock:/var/run/docker.sock');
    // A remote agent enrols with a one-time join token (the legacy shared token stays possible; the agent refuses
    // to start beyond loopback with neither).
    expect(remote.services.agent.environment.AGENT_JOIN_TOKEN).toBe('${AGENT_JOIN_TOKEN:-}');
    expect(remote.services.agent.environment.AGENT_TOKEN).toBe('${AGENT_TOKEN:-}');
    // The fence (docs/agent.md, "Network layout"): game containers on their own network, which the
    // orchestrator is not on; the agent on both, listening only on its fixed control address.
    for (const stack of [root, remote]) {
      expect(stack.services.agent.environment.AGENT_DOCKER_NETWORK).toBe('${AGENT_DOCKER_NETWORK:-endercloud-games}');
      expect(stack.networks.games.name).toBe('${AGENT_DOCKER_NETWORK:-endercloud-games}');
      expect(Object.keys(stack.services.agent.networks).sort()).toEqual(['endercloud', 'games']);
      expect(stack.services.agent.networks.endercloud.ipv4_address).toBe('${AGENT_CONTROL_ADDRESS:-172.31.250.10}');
      expect(stack.services.agent.environment.AGENT_LISTEN_ADDRESS).toBe('${AGENT_CONTROL_ADDRESS:-172.31.250.10}');
    }
    expect(root.services.orchestrator.networks).toEqual(['endercloud']);
    const example = readFileSync(join(REPO, '.env.agent.example'), 'utf8');
    for (const name of [
      'AGENT_ID',
      'AGENT_ORCHESTRATOR_URL',
      'AGENT_PUBLISH_ADDRESS',
      'AGENT_JOIN_TOKEN',
      'AGENT_TOKEN',
      'AGENT_RUNTIME_LOCAL_DIRECTORY',
    ])
      expect(example).toContain(`${name}=`);
    // No guessable default secret ships in the example.
    expect(example).toMatch(/^AGENT_JOIN_TOKEN=$/m);
    expect(example).toMatch(/^#AGENT_TOKEN=$/m);
  });

  it('add a router service from the same image, configured by a mounted examples/router.toml and a router-scoped token', () => {
    const root = parse(readFileSync(join(REPO, 'compose.yml'), 'utf8'));
    const router = root.services.router;
    expect(router.image).toBe(root.services.orchestrator.image);
    expect(router.command).toEqual(['node', 'dist/src/router/index.js']);
    expect(router.network_mode).toBe('host');
    expect(router.volumes).toEqual(['${ROUTER_CONFIG:-./examples/router.toml}:/etc/endercloud/router.toml:ro']);
    expect(router.environment).toMatchObject({
      ENDERCLOUD_ROUTER_CONFIG: '/etc/endercloud/router.toml',
      ENDERCLOUD_ROUTER_TOKEN: '${ROUTER_TOKEN:-}',
    });
    expect(JSON.stringify(router)).not.toContain('docker.sock');
    // The shipped router config is one the router itself accepts.
    const config = loadRouterConfig({ ENDERCLOUD_ROUTER_CONFIG: join(REPO, 'examples', 'router.toml') });
    expect(config.bind).toEqual({ host: '0.0.0.0', port: 25565 });
    expect(config.routing.servers.lobby).toEqual({ kind: 'group', id: 'lobby' });
  });

  it.skipIf(!hasCompose)('are accepted by docker-compose 1.29 (`config`), router service included', () => {
    const env = { PATH: process.env.PATH, ENDERCLOUD_SFTP_PORT: '0', HOME: process.env.HOME, AGENT_TOKEN: 'x'.repeat(32) };
    const out = spawnSync('docker-compose', ['-f', join(REPO, 'compose.yml'), 'config', '--services'], {
      cwd: REPO,
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout.trim().split('\n').sort()).toEqual(['agent', 'orchestrator', 'router']);
    const remote = spawnSync(
      'docker-compose',
      ['--env-file', join(REPO, '.env.agent.example'), '-f', join(REPO, 'compose.agent.yml'), 'config', '--quiet'],
      {
        cwd: REPO,
        env: {
          ...env,
          AGENT_ID: 'a',
          AGENT_ORCHESTRATOR_URL: 'http://o:8080',
          AGENT_CONTROL_URL: 'http://a:8081',
          AGENT_GAME_ADDRESS: 'a',
          AGENT_PUBLISH_ADDRESS: '10.0.0.2',
        },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(remote.status, remote.stderr).toBe(0);
  });
});
