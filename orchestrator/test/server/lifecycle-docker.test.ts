// The lifecycle engine on the real Docker engine: an in-process orchestrator
// (SQLite, real clock, worker and supervisor running) and a real in-process
// agent, driving the Minecraft-protocol test server image, checked with a real
// Server List Ping and a real minecraft-protocol login.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorConfig } from '../../src/server/config.js';
import { buildOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { createTestAgent, randomPortRange, removeNetwork, startFakeOrchestrator, type FakeOrchestrator, type TestAgent } from '../support/agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { loginBot, mcServerImageTag, pingStatus } from '../support/mc-server.js';
import { heartbeatBody, newDataDir, silentLogger, type Loose } from './support.js';

const RUN = uniqueId('lc');
const AGENT_ID = `${RUN}-host`;
const NETWORK = `${RUN}-net`;
const AGENT_TOKEN = `agent-${RUN}-0123456789abcdef`;
const ADMIN_TOKEN = `admin-${RUN}-0123456789abcdef`;

let layers: FakeOrchestrator;
let agent: TestAgent;
let agentUrl: string;
let dataDir: string;
let o: Orchestrator;
const portRange = randomPortRange(30);

async function startOrch(): Promise<Orchestrator> {
  const config = orchestratorConfig({
    ENDERCLOUD_DATA_DIR: dataDir,
    ENDERCLOUD_LISTEN: '127.0.0.1:0',
    ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
    ENDERCLOUD_AGENT_TOKEN: AGENT_TOKEN,
    ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
    ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
    ENDERCLOUD_COMMAND_RETRY_MAX: '500ms',
    ENDERCLOUD_COMMAND_LEASE: '2s',
    ENDERCLOUD_SUPERVISE_INTERVAL: '150ms',
    ENDERCLOUD_RESUME_TIMEOUT: '5s',
    ENDERCLOUD_UNKNOWN_GRACE: '10m',
  });
  return buildOrchestrator(config, { logger: silentLogger, runOfflineDetector: false });
}

async function call(method: string, url: string, body?: unknown, token: string = ADMIN_TOKEN): Promise<{ status: number; body: Loose }> {
  const res = await o.app.inject({ method: method as 'GET', url: `/api/v1${url}`, headers: { authorization: `Bearer ${token}` }, ...(body === undefined ? {} : { payload: body as object }) });
  let parsed: unknown = res.body;
  try {
    parsed = JSON.parse(res.body);
  } catch {
    /* text */
  }
  return { status: res.statusCode, body: parsed };
}

const get = async (id: string): Promise<Loose> => (await call('GET', `/instances/${id}`)).body;

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function waitState(id: string, state: string, timeoutMs = 20_000): Promise<Loose> {
  let last: Loose;
  try {
    return await waitFor(`instance ${id} ${state}`, async () => {
      last = await get(id);
      return last.state === state ? last : undefined;
    }, timeoutMs);
  } catch (err) {
    const commands = (await call('GET', `/commands?instanceId=${id}`)).body.commands.map((c: Loose) => `${c.kind}:${String(c.result?.skipped ?? '')}:${c.status}:${c.lastError ?? ''}`);
    throw new Error(`${(err as Error).message}; last ${last.state} (${last.stateReason}); commands ${commands.join(' | ')}`);
  }
}

async function recordGone(id: string): Promise<void> {
  try {
    await waitFor('record gone', async () => ((await call('GET', `/instances/${id}`)).status === 404 ? true : undefined));
  } catch (err) {
    const commands = (await call('GET', `/commands?instanceId=${id}`)).body.commands.map((c: Loose) => `${c.kind}:${c.status}:${c.lastError ?? ''}`);
    throw new Error(`${(err as Error).message}: ${(await get(id)).state}; ${commands.join(' | ')}`);
  }
}

async function history(id: string): Promise<Loose[]> {
  return (await call('GET', `/instances/${id}/history?limit=200`)).body.history;
}

async function containerOf(id: string) {
  const list = await docker().listContainers({ all: true, filters: { label: [`orchestrator.instance=${id}`, `orchestrator.host=${AGENT_ID}`] } });
  return list[0];
}

async function create(variant: string, name: string): Promise<string> {
  const res = await call('POST', '/instances', { groupId: 'mc', variantId: variant, name });
  expect(res.status).toBe(202);
  return res.body.id as string;
}

const template = (extra: Record<string, unknown> = {}) => ({
  image: mcServerImageTag(), resources: { memoryMb: 256 }, containerPort: 25565, restartPolicy: 'on-failure', user: { mode: 'image' },
  variables: [
    { name: 'RCON_PASSWORD', type: 'string', secret: true },
    { name: 'MOTD', type: 'string', default: 'EnderCloud lifecycle', apply: 'restart_required' },
    { name: 'MAX_PLAYERS', type: 'integer', default: 20, apply: 'restart_required' },
  ],
  readiness: { kind: 'minecraft', startupTimeoutMs: 20_000, intervalMs: 150, probeTimeoutMs: 1000 },
  stop: { signal: 'SIGTERM', timeoutMs: 2000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
  dataPaths: ['level.json', 'playerdata'], technicalPaths: ['stats'],
  crashLoop: { maxExits: 5, windowMs: 60_000, backoffInitialMs: 100, backoffMaxMs: 200 },
  ...extra,
});

beforeAll(async () => {
  await docker().createNetwork({ Name: NETWORK, Labels: { 'orchestrator.host': AGENT_ID } });
  layers = await startFakeOrchestrator();
  agent = await createTestAgent({ agentId: AGENT_ID, orchestratorUrl: layers.url, portRange, network: NETWORK, token: AGENT_TOKEN });
  await agent.app.listen({ host: '127.0.0.1', port: 0 });
  const address = agent.app.server.address();
  agentUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  dataDir = await newDataDir();
  o = await startOrch();
  const hb = await o.app.inject({
    method: 'POST', url: `/api/v1/agents/${AGENT_ID}/heartbeat`, headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    payload: heartbeatBody(agentUrl, { portRange, resources: { cpuCount: 2, memoryTotalBytes: 8192 * 1024 * 1024, memoryAvailableBytes: 4096 * 1024 * 1024, diskFreeBytes: 10 * 1024 ** 3 } }),
  });
  expect(hb.statusCode).toBe(200);
  await o.ctx.hosts.whenIdle();
  expect((await call('PUT', '/templates/mc/versions/1', template())).status).toBe(201);
  expect((await call('PUT', '/templates/mc-short/versions/1', template({ readiness: { kind: 'minecraft', startupTimeoutMs: 2500, intervalMs: 150, probeTimeoutMs: 500 } }))).status).toBe(201);
  expect((await call('PUT', '/templates/mc-signal/versions/1', template({ stop: { signal: 'SIGTERM', timeoutMs: 1000 } }))).status).toBe(201);
  const v = (id: string, env: Record<string, string> = {}, tpl = 'mc') => ({ id, template: { name: tpl, version: '1' }, env });
  expect((await call('PUT', '/groups/mc', {
    kind: 'persistent',
    variants: [
      v('plain'), v('slow', { STARTUP_DELAY_SECONDS: '3' }), v('never', { NEVER_READY: 'status' }, 'mc-short'),
      v('crashy', { CRASH_AFTER_SECONDS: '1' }), v('stubborn', { IGNORE_SIGTERM: '1' }, 'mc-signal'),
    ],
  })).status).toBe(201);
});

afterAll(async () => {
  await o?.stop().catch(() => undefined);
  await removeContainersByLabel({ 'orchestrator.host': AGENT_ID });
  await agent?.close();
  await layers?.close();
  await removeNetwork(NETWORK);
  if (dataDir) await import('node:fs/promises').then((fs) => fs.rm(dataDir, { recursive: true, force: true }));
});

describe('lifecycle on the real engine', () => {
  it('create → installing → stopped → starting → online with a real ping and login; conflicting stop/start → 409; RCON stop recorded', async () => {
    const id = await create('plain', 'lc-plain');
    const online = await waitState(id, 'online');
    expect(online).toMatchObject({ desiredState: 'running', observedState: 'running', crashLoop: { count: 0, tripped: false } });
    expect((await history(id)).map((h) => h.to).reverse()).toEqual(['installing', 'stopped', 'starting', 'online']);
    const { host, port } = online.endpoint;
    const status = await pingStatus(host, port);
    expect(status.max).toBeGreaterThan(0);
    const bot = await loginBot(host, port, 'Steve');
    await waitFor('players recorded', async () => ((await get(id)).players?.online === 1 ? true : undefined), 5000);
    await bot.end();

    const stop = await call('POST', `/instances/${id}/stop`);
    expect(stop.status).toBe(202);
    const busy = await call('POST', `/instances/${id}/start`);
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: 'INSTANCE_BUSY', details: { inProgress: 'stop' } });
    await waitState(id, 'stopped');
    expect((await history(id))[0]).toMatchObject({ from: 'stopping', to: 'stopped', details: { path: 'rcon', killed: false } });
    expect((await containerOf(id))?.State).toBe('exited');
    const logs = await call('GET', `/instances/${id}/logs?tail=50`);
    expect(logs.body).toContain('Done (');

    // pause / resume on the same instance.
    await call('POST', `/instances/${id}/start`);
    await waitState(id, 'online');
    expect((await call('POST', `/instances/${id}/pause`)).status).toBe(202);
    await waitState(id, 'paused');
    expect((await containerOf(id))?.State).toBe('paused');
    expect((await call('POST', `/instances/${id}/resume`)).status).toBe(202);
    await waitState(id, 'online', 10_000);
    expect((await containerOf(id))?.State).toBe('running');
  });

  it('a container killed from outside is restarted by the orchestrator (Docker restart policy stays no)', async () => {
    const id = await create('plain', 'lc-killed');
    await waitState(id, 'online');
    const c = await containerOf(id);
    expect((await docker().getContainer(c!.Id).inspect()).HostConfig.RestartPolicy?.Name ?? 'no').toMatch(/^(no|)$/);
    await docker().getContainer(c!.Id).kill();
    await waitFor('crash recorded', async () => (await history(id)).find((h) => h.to === 'stopped' && /exited unexpectedly/.test(h.reason)));
    const back = await waitState(id, 'online');
    expect(back.crashLoop.count).toBe(1);
  });

  it('a server that never becomes ready → degraded after the startup timeout, never online', async () => {
    const id = await create('never', 'lc-never');
    const degraded = await waitState(id, 'degraded', 15_000);
    expect(degraded.stateReason).toContain('not ready after 2500 ms');
    expect((await history(id)).some((h) => h.to === 'online')).toBe(false);
  });

  it('five crashes inside the window → error with auto-restart disabled; reset-crash-loop → stopped, start allowed', async () => {
    const id = await create('crashy', 'lc-crashy');
    const error = await waitState(id, 'error', 40_000);
    expect(error).toMatchObject({ crashLoop: { tripped: true, count: 5 }, desiredState: 'stopped' });
    await new Promise((r) => setTimeout(r, 600));
    expect((await get(id)).state).toBe('error');
    const reset = await call('POST', `/instances/${id}/reset-crash-loop`);
    expect(reset.body).toMatchObject({ state: 'stopped', crashLoop: { count: 0, tripped: false } });
  });

  it('a server that ignores SIGTERM is killed at the stop timeout and the history says so', async () => {
    const id = await create('stubborn', 'lc-stubborn');
    await waitState(id, 'online');
    await call('POST', `/instances/${id}/stop`);
    await waitState(id, 'stopped', 15_000);
    expect((await history(id))[0]).toMatchObject({ to: 'stopped', details: { path: 'killed', killed: true } });
  });
});

describe('replacement, deletion and reconciliation on the real engine', () => {
  const ALT_TAG = `${RUN}-alt:1`;
  const runtimeDir = (id: string) => join(agent.runtimeDirectory, 'instances', id);
  afterAll(async () => {
    await docker().getImage(ALT_TAG).remove().catch(() => undefined);
  });

  it('pending restart_required changes are applied together by one replacement; the world survives', async () => {
    const id = await create('plain', 'lc-settings');
    await waitState(id, 'online');
    const seed = (): string => (JSON.parse(readFileSync(join(runtimeDir(id), 'level.json'), 'utf8')) as { seed: string }).seed;
    const level = seed();
    const before = (await containerOf(id))!.Id;
    const patch = await call('PATCH', `/instances/${id}/settings`, { settings: { MOTD: 'Replaced together', MAX_PLAYERS: 42 } });
    expect(patch.body.pendingChanges.map((c: Loose) => c.key).sort()).toEqual(['settings.MAX_PLAYERS', 'settings.MOTD']);
    expect((await get(id)).state).toBe('online');
    expect((await call('POST', `/instances/${id}/restart`)).status).toBe(202);
    const online = await waitState(id, 'online');
    expect(online).toMatchObject({ pendingChanges: [], revision: 2, settings: { MOTD: 'Replaced together', MAX_PLAYERS: 42 } });
    const status = await pingStatus(online.endpoint.host, online.endpoint.port);
    expect(status).toMatchObject({ motd: 'Replaced together', max: 42 });
    expect((await containerOf(id))!.Id).not.toBe(before);
    expect(seed()).toBe(level);
    const replaced = (await history(id)).filter((h) => /container replaced/.test(h.reason));
    expect(replaced).toHaveLength(1);
  });

  it('a next_start image change waits until the next explicit start, which replaces the container with the new image', async () => {
    await docker().getImage(mcServerImageTag()).tag({ repo: `${RUN}-alt`, tag: '1' });
    const id = await create('plain', 'lc-image');
    await waitState(id, 'online');
    const patch = await call('PATCH', `/instances/${id}/settings`, { image: ALT_TAG, mode: 'next_start' });
    expect(patch.body).toMatchObject({ containerConfigPending: true, commandId: null });
    expect((await containerOf(id))!.Image).toBe(mcServerImageTag());
    await call('POST', `/instances/${id}/stop`);
    await waitState(id, 'stopped');
    expect((await containerOf(id))!.Image).toBe(mcServerImageTag());
    await call('POST', `/instances/${id}/start`);
    const online = await waitState(id, 'online');
    expect(online).toMatchObject({ image: ALT_TAG, containerConfigPending: false });
    expect((await containerOf(id))!.Image).toBe(ALT_TAG);
  });

  it('deletion scopes: player data needs the typed name; the default keeps it; all scopes remove the instance root', async () => {
    const id = await create('plain', 'lc-delete');
    await waitState(id, 'online');
    expect((await call('DELETE', `/instances/${id}`, { scopes: ['player_data'] })).body.error.code).toBe('CONFIRMATION_REQUIRED');
    expect((await call('DELETE', `/instances/${id}`)).status).toBe(202);
    await recordGone(id);
    expect(await containerOf(id)).toBeUndefined();
    expect(existsSync(join(runtimeDir(id), 'level.json'))).toBe(true);
    expect(existsSync(join(runtimeDir(id), 'stats'))).toBe(false);

    const other = await create('plain', 'lc-delete-all');
    await waitState(other, 'online');
    expect((await call('DELETE', `/instances/${other}`, { scopes: ['container', 'technical', 'player_data', 'backups'], confirm: 'lc-delete-all' })).status).toBe(202);
    await recordGone(other);
    expect(existsSync(runtimeDir(other))).toBe(false);
    const audit = (await call('GET', `/audit?targetId=${other}`)).body.entries.find((e: Loose) => e.action === 'instance.delete');
    expect(audit).toMatchObject({ actor: expect.any(String), result: 'ok', params: { confirmed: true, scopes: ['container', 'technical', 'player_data', 'backups'] } });
  });

  it('the orchestrator stopped during starting and restarted: reconciliation finishes the start', async () => {
    const id = await create('slow', 'lc-restart');
    await waitFor('starting with the container running', async () => {
      const i = await get(id);
      return i.state === 'starting' && i.activeAction === null && i.observedState === 'running' ? true : undefined;
    });
    await o.stop();
    o = await startOrch();
    const online = await waitState(id, 'online');
    expect(online.crashLoop.count).toBe(0);
    expect((await history(id)).map((h) => h.to).slice(0, 2)).toEqual(['online', 'starting']);
  });

  it('a managed container deleted behind the orchestrator\'s back → unknown, and it is never recreated', async () => {
    const id = await create('plain', 'lc-vanished');
    await waitState(id, 'online');
    await docker().getContainer((await containerOf(id))!.Id).remove({ force: true });
    const unknown = await waitState(id, 'unknown');
    expect(unknown.stateReason).toContain('not recreated');
    await new Promise((r) => setTimeout(r, 800));
    expect(await containerOf(id)).toBeUndefined();
    expect((await get(id)).state).toBe('unknown');
  });
});

