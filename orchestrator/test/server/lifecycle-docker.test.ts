// The lifecycle engine on the real Docker engine: an in-process orchestrator
// (SQLite, real clock, worker and supervisor running) and a real in-process
// agent, driving the Minecraft-protocol test server image, checked with a real
// Server List Ping and a real minecraft-protocol login.

import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orchestrator } from '../../src/server/orchestrator.js';
import { randomPortRange, type TestAgent } from '../support/agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { loginBot, mcServerImageTag, pingStatus } from '../support/mc-server.js';
import { startRealAgentStack, waitFor, type RealAgentStack } from '../support/real-agent-stack.js';
import { startRegistry, type LocalRegistry } from '../support/registry.js';
import type { Loose } from './support.js';

const RUN = uniqueId('lc');
const AGENT_ID = `${RUN}-host`;

let stack: RealAgentStack;
let agent: TestAgent;
let o: Orchestrator;
let call: RealAgentStack['call'];
/** Every line the orchestrator logged (debug and up), for the secret-redaction check. */
const orchestratorLog: string[] = [];
const orchestratorLogger = pino({ level: 'debug' }, { write: (line: string) => void orchestratorLog.push(line) });
/** The orchestrator reaches the agent through this gate; closed = the agent looks unreachable. */
const gate = { open: true };
let gateServer: Server;

async function startGate(target: string): Promise<string> {
  gateServer = createServer((req, res) => {
    if (!gate.open) {
      req.socket.destroy();
      return;
    }
    const upstream = request(`${target}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => gateServer.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(gateServer.address() as AddressInfo).port}`;
}

const runtimeDir = (id: string) => join(agent.runtimeDirectory, 'instances', id);

/** level.json and the player files exist and belong to uid:gid: the container user wrote them into /data. */
function expectWorldOwnedBy(id: string, uid: number, gid: number): void {
  const dir = runtimeDir(id);
  expect(statSync(dir)).toMatchObject({ uid, gid });
  expect(statSync(join(dir, 'level.json'))).toMatchObject({ uid, gid });
  const players = readdirSync(join(dir, 'playerdata'));
  expect(players.length).toBeGreaterThan(0);
  for (const file of players) expect(statSync(join(dir, 'playerdata', file))).toMatchObject({ uid, gid });
}

const seedOf = (id: string): string => (JSON.parse(readFileSync(join(runtimeDir(id), 'level.json'), 'utf8')) as { seed: string }).seed;

const get = async (id: string): Promise<Loose> => (await call('GET', `/instances/${id}`)).body;

async function waitState(id: string, state: string, timeoutMs = 20_000): Promise<Loose> {
  let last: Loose;
  try {
    return await waitFor(
      `instance ${id} ${state}`,
      async () => {
        last = await get(id);
        return last.state === state ? last : undefined;
      },
      timeoutMs,
    );
  } catch (err) {
    const commands = (await call('GET', `/commands?instanceId=${id}`)).body.commands.map(
      (c: Loose) => `${c.kind}:${String(c.result?.skipped ?? '')}:${c.status}:${c.lastError ?? ''}`,
    );
    throw new Error(`${(err as Error).message}; last ${last.state} (${last.stateReason}); commands ${commands.join(' | ')}`);
  }
}

async function recordGone(id: string): Promise<void> {
  try {
    await waitFor('record gone', async () => ((await call('GET', `/instances/${id}`)).status === 404 ? true : undefined));
  } catch (err) {
    const commands = (await call('GET', `/commands?instanceId=${id}`)).body.commands.map(
      (c: Loose) => `${c.kind}:${c.status}:${c.lastError ?? ''}`,
    );
    throw new Error(`${(err as Error).message}: ${(await get(id)).state}; ${commands.join(' | ')}`);
  }
}

async function history(id: string): Promise<Loose[]> {
  return (await call('GET', `/instances/${id}/history?limit=200`)).body.history;
}

async function containerOf(id: string) {
  const list = await docker().listContainers({
    all: true,
    filters: { label: [`orchestrator.instance=${id}`, `orchestrator.host=${AGENT_ID}`] },
  });
  return list[0];
}

async function create(variant: string, name: string): Promise<string> {
  const res = await call('POST', '/instances', { groupId: 'mc', variantId: variant, name });
  expect(res.status).toBe(202);
  return res.body.id as string;
}

const template = (extra: Record<string, unknown> = {}) => ({
  // No `user`: the default unprivileged `endercloud` user (1000:1000) runs every instance here.
  image: mcServerImageTag(),
  resources: { memoryMb: 256 },
  containerPort: 25565,
  restartPolicy: 'on-failure',
  variables: [
    { name: 'RCON_PASSWORD', type: 'string', secret: true },
    { name: 'MOTD', type: 'string', default: 'EnderCloud lifecycle', apply: 'restart_required' },
    { name: 'MAX_PLAYERS', type: 'integer', default: 20, apply: 'restart_required' },
  ],
  readiness: { kind: 'minecraft', startupTimeoutMs: 20_000, intervalMs: 150, probeTimeoutMs: 1000 },
  stop: { signal: 'SIGTERM', timeoutMs: 2000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
  dataPaths: ['level.json', 'playerdata'],
  technicalPaths: ['stats'],
  crashLoop: { maxExits: 5, windowMs: 60_000, backoffInitialMs: 100, backoffMaxMs: 200 },
  ...extra,
});

beforeAll(async () => {
  stack = await startRealAgentStack({
    agentId: AGENT_ID,
    portRange: randomPortRange(30),
    controlUrl: startGate,
    env: {
      ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
      ENDERCLOUD_COMMAND_RETRY_MAX: '500ms',
      ENDERCLOUD_COMMAND_LEASE: '2s',
      ENDERCLOUD_RESUME_TIMEOUT: '5s',
      ENDERCLOUD_UNKNOWN_GRACE: '10m',
    },
    deps: { logger: orchestratorLogger },
  });
  ({ agent, o, call } = stack);
  expect((await call('PUT', '/templates/mc/versions/1', template())).status).toBe(201);
  expect(
    (
      await call(
        'PUT',
        '/templates/mc-short/versions/1',
        template({ readiness: { kind: 'minecraft', startupTimeoutMs: 2500, intervalMs: 150, probeTimeoutMs: 500 } }),
      )
    ).status,
  ).toBe(201);
  expect((await call('PUT', '/templates/mc-signal/versions/1', template({ stop: { signal: 'SIGTERM', timeoutMs: 1000 } }))).status).toBe(
    201,
  );
  const v = (id: string, env: Record<string, string> = {}, tpl = 'mc') => ({ id, template: { name: tpl, version: '1' }, env });
  expect(
    (
      await call('PUT', '/groups/mc', {
        kind: 'persistent',
        variants: [
          v('plain'),
          v('slow', { STARTUP_DELAY_SECONDS: '3' }),
          v('never', { NEVER_READY: 'status' }, 'mc-short'),
          v('crashy', { CRASH_AFTER_SECONDS: '1' }),
          v('stubborn', { IGNORE_SIGTERM: '1' }, 'mc-signal'),
        ],
      })
    ).status,
  ).toBe(201);
});

afterAll(async () => {
  try {
    await stack?.close();
  } finally {
    gateServer?.closeAllConnections();
    await new Promise((r) => (gateServer ? gateServer.close(r) : r(undefined)));
  }
});

describe('lifecycle on the real engine', () => {
  it('create → installing → stopped → starting → online with a real ping and login; conflicting stop/start → 409; RCON stop recorded', async () => {
    const id = await create('plain', 'lc-plain');
    const online = await waitState(id, 'online');
    expect(online).toMatchObject({ desiredState: 'running', observedState: 'running', crashLoop: { count: 0, tripped: false } });
    expect((await history(id)).map((h) => h.to).reverse()).toEqual(['installing', 'stopped', 'starting', 'online']);
    const { host, port } = online.endpoint;
    // A generous bound: the readiness probe just passed, but two Docker-heavy files share the cores.
    const status = await pingStatus(host, port, 10_000);
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
    // The default `endercloud` user (1000:1000) wrote its world and player file into /data.
    expect(
      (
        await docker()
          .getContainer((await containerOf(id))!.Id)
          .inspect()
      ).Config.User,
    ).toBe('1000:1000');
    expectWorldOwnedBy(id, 1000, 1000);
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

  it('a custom uid:gid user writes its world under /data and is immutable; maintenance refuses an ordinary user start with the message, admin starts it', async () => {
    const res = await call('POST', '/instances', {
      groupId: 'mc',
      variantId: 'plain',
      name: 'lc-custom',
      user: { mode: 'custom', uid: 2345, gid: 3456 },
    });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    const online = await waitState(id, 'online');
    const bot = await loginBot(online.endpoint.host, online.endpoint.port, 'Alex');
    await waitFor('players recorded', async () => ((await get(id)).players?.online === 1 ? true : undefined), 5000);
    await bot.end();
    await call('POST', `/instances/${id}/stop`);
    await waitState(id, 'stopped');
    expect(
      (
        await docker()
          .getContainer((await containerOf(id))!.Id)
          .inspect()
      ).Config.User,
    ).toBe('2345:3456');
    expectWorldOwnedBy(id, 2345, 3456);
    const immutable = await call('PATCH', `/instances/${id}/settings`, { user: { mode: 'endercloud' } });
    expect(immutable.status).toBe(409);
    expect(immutable.body.error.code).toBe('IMMUTABLE');

    const created = await call('POST', '/tokens', { name: `${RUN}-player`, scopes: ['instances:write'] });
    expect(created.status).toBe(201);
    const userToken = created.body.secret as string;
    expect((await call('POST', `/instances/${id}/maintenance`, { enabled: true, message: 'map reset until 18:00' })).status).toBe(200);
    const refused = await call('POST', `/instances/${id}/start`, undefined, { token: userToken });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({
      code: 'MAINTENANCE',
      message: 'instance lc-custom is in maintenance: map reset until 18:00',
    });
    expect((await get(id)).state).toBe('stopped');
    expect((await containerOf(id))?.State).toBe('exited');
    expect((await call('POST', `/instances/${id}/start`)).status).toBe(202);
    await waitState(id, 'online');
    expect((await containerOf(id))?.State).toBe('running');
    expect((await call('POST', `/instances/${id}/maintenance`, { enabled: false })).status).toBe(200);
  });

  it('a container killed from outside is restarted by the orchestrator (Docker restart policy stays no)', async () => {
    const id = await create('plain', 'lc-killed');
    await waitState(id, 'online');
    const c = await containerOf(id);
    expect((await docker().getContainer(c!.Id).inspect()).HostConfig.RestartPolicy?.Name ?? 'no').toMatch(/^(no|)$/);
    await docker().getContainer(c!.Id).kill();
    await waitFor('crash recorded', async () =>
      (await history(id)).find((h) => h.to === 'stopped' && /exited unexpectedly/.test(h.reason)),
    );
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
  let registry: LocalRegistry | undefined;
  let altTag = '';
  afterAll(async () => {
    await removeContainersByLabel({ 'orchestrator.host': AGENT_ID }); // before the image they use
    if (altTag)
      await docker()
        .getImage(altTag)
        .remove()
        .catch(() => undefined);
    await registry?.stop();
  });

  it('pending restart_required changes are applied together by one replacement; the world survives', async () => {
    const id = await create('plain', 'lc-settings');
    await waitState(id, 'online');
    const seed = () => seedOf(id);
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

  it('a next_start image change waits until the next explicit start, which pulls the image and replaces the container; the world survives', async () => {
    registry = await startRegistry();
    altTag = `${registry.address}/endercloud/${RUN}-alt:1`;
    await docker()
      .getImage(mcServerImageTag())
      .tag({ repo: altTag.slice(0, altTag.lastIndexOf(':')), tag: '1' });
    const push = await docker()
      .getImage(altTag)
      .push({ authconfig: { serveraddress: registry.address } });
    await new Promise((resolve, reject) =>
      docker().modem.followProgress(push, (err: Error | null, out: unknown) => (err ? reject(err) : resolve(out))),
    );
    await docker().getImage(altTag).remove(); // only in the registry now: the start must pull it
    const id = await create('plain', 'lc-image');
    await waitState(id, 'online');
    const level = seedOf(id);
    const patch = await call('PATCH', `/instances/${id}/settings`, { image: altTag, mode: 'next_start' });
    expect(patch.body).toMatchObject({ containerConfigPending: true, commandId: null });
    expect((await containerOf(id))!.Image).toBe(mcServerImageTag());
    await call('POST', `/instances/${id}/stop`);
    await waitState(id, 'stopped');
    expect((await containerOf(id))!.Image).toBe(mcServerImageTag());
    expect((await get(id)).containerConfigPending).toBe(true);
    const pulls = () => agent.logLines.filter((l) => l.msg === 'image pulled' && l.image === altTag).length;
    expect(pulls()).toBe(0);
    await call('POST', `/instances/${id}/start`);
    const online = await waitState(id, 'online');
    expect(online).toMatchObject({ image: altTag, containerConfigPending: false });
    expect((await containerOf(id))!.Image).toBe(altTag);
    expect(pulls()).toBe(1);
    expect(seedOf(id)).toBe(level);
  });

  it('an immediate label change on a stopped instance replaces the container, keeps it stopped and keeps the world', async () => {
    const id = await create('plain', 'lc-labels');
    await waitState(id, 'online');
    const level = seedOf(id);
    await call('POST', `/instances/${id}/stop`);
    await waitState(id, 'stopped');
    const before = (await containerOf(id))!.Id;
    const patch = await call('PATCH', `/instances/${id}/settings`, { labels: { team: 'red' }, mode: 'immediate' });
    expect(patch.status).toBe(202);
    await waitFor('replaced', async () => {
      const c = await containerOf(id);
      return c && c.Id !== before && (await get(id)).activeAction === null ? c : undefined;
    });
    const after = (await containerOf(id))!;
    expect(after.Labels).toMatchObject({ team: 'red' });
    expect(after.State).toMatch(/^(created|exited)$/);
    expect(await get(id)).toMatchObject({ state: 'stopped', desiredState: 'stopped' });
    expect((await history(id)).filter((h) => /container replaced/.test(h.reason))).toHaveLength(1);
    expect(seedOf(id)).toBe(level);
  });

  it('a start whose host port was taken while the world was stopped moves it to another port: online there, the world kept, the history says why', async () => {
    const id = await create('plain', 'lc-squat');
    const first = await waitState(id, 'online');
    const level = seedOf(id);
    const oldPort = (first.endpoint as { port: number }).port;
    await call('POST', `/instances/${id}/stop`);
    await waitState(id, 'stopped');
    // Something outside the agent listens on the world's port while it sleeps.
    const squatter = createNetServer();
    await new Promise<void>((resolve, reject) => squatter.once('error', reject).listen(oldPort, '127.0.0.1', resolve));
    try {
      expect((await call('POST', `/instances/${id}/start`)).status).toBe(202);
      const online = await waitState(id, 'online', 40_000);
      const port = (online.endpoint as { port: number }).port;
      expect(port).not.toBe(oldPort);
      expect((await o.store.instances.get(id))?.hostPort).toBe(port);
      expect((await pingStatus('127.0.0.1', port, 2000)).max).toBeGreaterThan(0);
      expect(seedOf(id)).toBe(level);
      const moved = (await history(id)).filter((h) => /was taken outside the container runtime/.test(h.reason));
      expect(moved).toHaveLength(1);
      expect(moved[0]!.details).toMatchObject({ previousHostPort: oldPort, hostPort: port });
    } finally {
      await new Promise((r) => squatter.close(r));
    }
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
    expect(
      (
        await call('DELETE', `/instances/${other}`, {
          scopes: ['container', 'technical', 'player_data', 'backups'],
          confirm: 'lc-delete-all',
        })
      ).status,
    ).toBe(202);
    await recordGone(other);
    expect(existsSync(runtimeDir(other))).toBe(false);
    const audit = (await call('GET', `/audit?targetId=${other}`)).body.entries.find((e: Loose) => e.action === 'instance.delete');
    expect(audit).toMatchObject({
      actor: expect.any(String),
      result: 'ok',
      params: { confirmed: true, scopes: ['container', 'technical', 'player_data', 'backups'] },
    });
  });

  it('the orchestrator stopped during starting and restarted: reconciliation finishes the start', async () => {
    const id = await create('slow', 'lc-restart');
    await waitFor('starting with the container running', async () => {
      const i = await get(id);
      return i.state === 'starting' && i.activeAction === null && i.observedState === 'running' ? true : undefined;
    });
    o = await stack.restart();
    const online = await waitState(id, 'online');
    expect(online.crashLoop.count).toBe(0);
    expect((await history(id)).map((h) => h.to).slice(0, 2)).toEqual(['online', 'starting']);
  });

  it('a deletion the agent cannot complete stays visible (deleting, with its scopes) until the retried command reconciles it', async () => {
    const id = await create('plain', 'lc-partial');
    await waitState(id, 'online');
    gate.open = false;
    try {
      expect((await call('DELETE', `/instances/${id}`, { scopes: ['container', 'technical'] })).status).toBe(202);
      await waitFor('a failed delete attempt', async () =>
        (await call('GET', `/commands?instanceId=${id}`)).body.commands.find((c: Loose) => c.kind === 'delete' && c.lastError),
      );
      const visible = await call('GET', `/instances/${id}`);
      expect(visible.status).toBe(200);
      expect(visible.body).toMatchObject({ state: 'deleting', desiredState: 'deleted', deletion: { scopes: ['container', 'technical'] } });
      expect((await call('GET', '/instances')).body.instances.some((i: Loose) => i.id === id)).toBe(true);
      expect((await containerOf(id))?.State).toBe('running');
    } finally {
      gate.open = true;
    }
    await recordGone(id);
    expect(await containerOf(id)).toBeUndefined();
    expect(existsSync(join(runtimeDir(id), 'level.json'))).toBe(true);
    expect(existsSync(join(runtimeDir(id), 'stats'))).toBe(false);
  });

  it('secrets (RCON password, instance token) never appear in the orchestrator or agent logs, nor in any API answer', async () => {
    const id = await create('plain', 'lc-secrets');
    await waitState(id, 'online');
    const chosen = `chosen-${RUN}-pw`;
    const patch = await call('PATCH', `/instances/${id}/settings`, { settings: { RCON_PASSWORD: chosen } });
    expect(patch.status).toBe(200);
    await call('POST', `/instances/${id}/restart`);
    await waitState(id, 'online');
    await call('POST', `/instances/${id}/stop`);
    await waitState(id, 'stopped');
    expect((await history(id))[0]).toMatchObject({ to: 'stopped', details: { path: 'rcon' } }); // the new password works

    const secrets = new Set<string>([chosen]);
    for (const c of await docker().listContainers({ all: true, filters: { label: [`orchestrator.host=${AGENT_ID}`] } })) {
      for (const entry of (await docker().getContainer(c.Id).inspect()).Config.Env ?? []) {
        const [key, value] = [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)];
        if ((key === 'RCON_PASSWORD' || key === 'ENDERCLOUD_INSTANCE_TOKEN') && value.length >= 8) secrets.add(value);
      }
    }
    expect(secrets.size).toBeGreaterThan(4);
    const answers: string[] = [];
    const ids = ((await call('GET', '/instances')).body.instances as Loose[]).map((i) => i.id as string);
    answers.push(JSON.stringify((await call('GET', '/instances')).body));
    for (const i of ids) {
      for (const path of ['', '/history?limit=200', '/revisions', '/logs?tail=500'])
        answers.push(JSON.stringify((await call('GET', `/instances/${i}${path}`)).body));
    }
    answers.push(
      JSON.stringify((await call('GET', '/audit?limit=500')).body),
      JSON.stringify((await call('GET', '/commands')).body),
      patch.body && JSON.stringify(patch.body),
    );
    const haystacks = {
      'orchestrator log': orchestratorLog.join(''),
      'agent log': JSON.stringify(agent.logLines),
      'API answers': answers.join('\n'),
    };
    expect(orchestratorLog.length).toBeGreaterThan(50);
    for (const [where, text] of Object.entries(haystacks)) {
      for (const secret of secrets) expect(text.includes(secret), `${where} holds a secret`).toBe(false);
    }
  });

  it("a managed container deleted behind the orchestrator's back → unknown, then intervention_required after the grace; never recreated", async () => {
    const id = await create('plain', 'lc-vanished');
    await waitState(id, 'online');
    await docker()
      .getContainer((await containerOf(id))!.Id)
      .remove({ force: true });
    const unknown = await waitState(id, 'unknown');
    expect(unknown.stateReason).toContain('not recreated');
    await new Promise((r) => setTimeout(r, 800));
    expect(await containerOf(id)).toBeUndefined();
    expect((await get(id)).state).toBe('unknown');
    // Past the grace an operator is asked to decide; over many reconcile ticks nothing is recreated.
    o = await stack.restart({ ENDERCLOUD_UNKNOWN_GRACE: '1s' });
    const stuck = await waitState(id, 'intervention_required', 10_000);
    expect(stuck.stateReason).toContain('never recreated');
    for (let tick = 0; tick < 8; tick++) {
      await new Promise((r) => setTimeout(r, 150));
      expect(await containerOf(id)).toBeUndefined();
    }
    expect((await get(id)).state).toBe('intervention_required');
    expect((await history(id)).map((h) => h.to).slice(0, 2)).toEqual(['intervention_required', 'unknown']);
  });
});
