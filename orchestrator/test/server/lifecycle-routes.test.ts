// Lifecycle through the HTTP layer (inject) over a real store and an in-test
// agent, with a manual clock: actions persisted before dispatch and 409
// INSTANCE_BUSY, maintenance refusals, the crash-loop breaker and its reset,
// reconciliation of a vanished container, settings/pending changes, scoped
// deletion with confirmation, the bridge event, audit and redaction.

import { afterEach, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/server/services/instance-config.js';
import {
  AGENT_TOKEN,
  heartbeatBody,
  startFakeAgent,
  testOrchestrator,
  type FakeAgent,
  type Loose,
  type TestOrchestrator,
} from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const SECRET = 'rcon-secret-value-0123456789';

interface Setup {
  t: TestOrchestrator;
  a: FakeAgent;
  id: string;
  /** Runs due commands to completion. */
  work(): Promise<void>;
  get(): Promise<Loose>;
}

async function setup(template: Record<string, unknown> = {}, env: Record<string, string> = {}): Promise<Setup> {
  const t = await testOrchestrator({ env: { ENDERCLOUD_COMMAND_MAX_ATTEMPTS: '3', ...env }, deps: { generateSecret: () => SECRET } });
  cleanups.push(() => t.close());
  const a = await startFakeAgent();
  cleanups.push(() => a.close());
  expect((await t.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN })).status).toBe(200);
  await t.o.ctx.hosts.whenIdle();
  const tpl = await t.call('PUT', '/api/v1/templates/mc/versions/1', {
    body: {
      image: 'mc:1',
      resources: { memoryMb: 256 },
      restartPolicy: 'on-failure',
      variables: [
        { name: 'RCON_PASSWORD', type: 'string', secret: true },
        { name: 'MOTD', type: 'string', default: 'hi', apply: 'restart_required' },
        { name: 'MAX_PLAYERS', type: 'integer', default: 10, apply: 'restart_required' },
        { name: 'WELCOME', type: 'string', default: 'x', apply: 'immediate' },
      ],
      readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 5000, intervalMs: 100 },
      stop: { signal: 'SIGTERM', timeoutMs: 3000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
      dataPaths: ['world'],
      technicalPaths: ['logs'],
      crashLoop: { maxExits: 3, windowMs: 60_000, backoffInitialMs: 100, backoffMaxMs: 400 },
      ...template,
    },
  });
  expect(tpl.body).toMatchObject({ name: 'mc' });
  expect(
    (
      await t.call('PUT', '/api/v1/groups/g', {
        body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] },
      })
    ).status,
  ).toBe(201);
  const created = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', name: 'survival' } });
  expect(created.status).toBe(202);
  const id = created.body.id as string;
  const work = async () => {
    for (let i = 0; i < 20; i++) {
      const claimed = await t.o.worker.tick();
      await t.o.worker.whenIdle();
      if (claimed.length === 0) return;
    }
  };
  await work();
  return { t, a, id, work, get: async () => (await t.call('GET', `/api/v1/instances/${id}`)).body };
}

async function online(s: Setup): Promise<void> {
  expect((await s.get()).state).toBe('starting');
  await s.t.o.supervisor.probeOnce(s.id);
  expect((await s.get()).state).toBe('online');
}

async function userToken(t: TestOrchestrator, name: string, scopes: string[]): Promise<string> {
  const res = await t.call('POST', '/api/v1/tokens', { body: { name, scopes } });
  expect(res.status).toBe(201);
  return res.body.secret as string;
}

describe('actions', () => {
  it('persist the action before dispatch, refuse a conflicting one with INSTANCE_BUSY naming it, and record the stop path', async () => {
    const s = await setup();
    await online(s);
    const stop = await s.t.call('POST', `/api/v1/instances/${s.id}/stop`);
    expect(stop.status).toBe(202);
    expect(stop.body).toMatchObject({ commandId: expect.stringMatching(/^cmd-/), state: 'stopping' });
    const view = await s.get();
    expect(view).toMatchObject({
      state: 'stopping',
      desiredState: 'stopped',
      activeAction: { kind: 'stop', commandId: stop.body.commandId },
    });
    expect((await s.t.o.store.commands.get(stop.body.commandId))?.status).toBe('pending');

    const busy = await s.t.call('POST', `/api/v1/instances/${s.id}/restart`);
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: 'INSTANCE_BUSY', details: { inProgress: 'stop', requested: 'restart' } });
    expect(busy.body.error.message).toContain('stop is in progress');
    // The same idempotent action again is not a conflict.
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/stop`)).body).toMatchObject({
      commandId: stop.body.commandId,
      noop: 'stop already in progress',
    });

    await s.work();
    const stopCall = s.a.calls.find((c) => c.method === 'POST' && c.path.endsWith('/stop'))!;
    expect(stopCall.body).toEqual({ timeoutSeconds: 3, signal: 'SIGTERM', rcon: { port: 25575, password: SECRET, command: 'stop' } });
    expect(await s.get()).toMatchObject({ state: 'stopped', activeAction: null, observedState: 'exited' });
    const history = (await s.t.call('GET', `/api/v1/instances/${s.id}/history`)).body.history;
    expect(history[0]).toMatchObject({ from: 'stopping', to: 'stopped', details: { path: 'rcon', killed: false } });
    expect(history.map((h: Loose) => h.to).reverse()).toEqual(['installing', 'stopped', 'starting', 'online', 'stopping', 'stopped']);
    // The RCON password is in no command payload, history entry or API answer.
    const commands = await s.t.o.store.commands.list({ instanceId: s.id });
    expect(JSON.stringify([commands, history, await s.get()])).not.toContain(SECRET);
  });

  it('start is idempotent; pause → paused and resume → online after a quick readiness check', async () => {
    const s = await setup({}, { ENDERCLOUD_RESUME_TIMEOUT: '1s' });
    await online(s);
    const again = await s.t.call('POST', `/api/v1/instances/${s.id}/start`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ commandId: null, noop: 'already online' });
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/pause`)).body.state).toBe('pausing');
    await s.work();
    expect(await s.get()).toMatchObject({ state: 'paused', desiredState: 'paused', observedState: 'paused' });
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/resume`)).status).toBe(202);
    await s.work();
    expect(await s.get()).toMatchObject({ state: 'online', desiredState: 'running' });
  });

  it("a resume whose unpause the agent refuses fails with the agent's error; the probe sent with it does not make the instance online", async () => {
    const s = await setup({}, { ENDERCLOUD_RESUME_TIMEOUT: '1s' });
    await online(s);
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/pause`)).body.state).toBe('pausing');
    await s.work();
    s.a.failNext('POST /instances/unpause', 1, 409, 'INVALID_TRANSITION');
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/resume`)).status).toBe(202);
    await s.work();
    expect(await s.get()).toMatchObject({ state: 'paused' });
    const [resume] = (await s.t.o.store.commands.list({ instanceId: s.id })).filter((c) => c.kind === 'resume');
    expect(resume).toMatchObject({ status: 'failed' });
    expect(String(resume?.lastError)).toContain('injected failure');
  });

  it('the instance view lists the power actions the caller may run now (actions): by state, scope and maintenance; kill where it applies', async () => {
    const s = await setup({}, { ENDERCLOUD_RESUME_TIMEOUT: '1s' });
    const reader = await userToken(s.t, 'viewer', ['read']);
    const user = await userToken(s.t, 'player-ops', ['instances:write']);
    const actionsOf = async (token?: string) =>
      (await s.t.call('GET', `/api/v1/instances/${s.id}`, token ? { token } : {})).body.actions as string[];
    await online(s);
    expect(await actionsOf()).toEqual(['stop', 'restart', 'pause', 'kill']);
    expect(await actionsOf(reader)).toEqual([]);
    const listed = (await s.t.call('GET', '/api/v1/instances', { token: user })).body.instances as Loose[];
    expect(listed.find((i) => i.id === s.id)?.actions).toEqual(['stop', 'restart', 'pause', 'kill']);
    await s.t.call('POST', `/api/v1/instances/${s.id}/pause`);
    expect(await actionsOf()).toEqual([]); // the pause is in flight
    await s.work();
    expect(await actionsOf(user)).toEqual(['stop', 'resume', 'kill']);
    await s.t.call('POST', '/api/v1/maintenance', { body: { enabled: true, message: 'upgrade' } });
    expect(await actionsOf(user)).toEqual(['stop', 'kill']);
    expect(await actionsOf()).toEqual(['stop', 'resume', 'kill']);
    await s.t.call('POST', '/api/v1/maintenance', { body: { enabled: false } });
    await s.t.call('POST', `/api/v1/instances/${s.id}/stop`);
    // A stop in flight: only the kill that would end it.
    expect(await actionsOf(user)).toEqual(['kill']);
    expect(await actionsOf(reader)).toEqual([]);
    await s.work();
    expect(await actionsOf(user)).toEqual(['start', 'restart']);
  });

  it('validate the target: unknown instance 404, start while stopping 409 naming the action, wrong scope 403', async () => {
    const s = await setup();
    expect((await s.t.call('POST', '/api/v1/instances/nope/start')).body.error.code).toBe('INSTANCE_NOT_FOUND');
    const reader = await userToken(s.t, 'reader', ['read']);
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/stop`, { token: reader })).status).toBe(403);
    expect(
      (await s.t.call('POST', `/api/v1/instances/${s.id}/reset-crash-loop`, { token: await userToken(s.t, 'op', ['operator']) })).status,
    ).toBe(403);
  });
});

describe('maintenance', () => {
  it('refuses ordinary starts with the administrator message, per instance and globally; manager/admin keep access', async () => {
    const s = await setup();
    await online(s);
    await s.t.call('POST', `/api/v1/instances/${s.id}/stop`);
    await s.work();
    const user = await userToken(s.t, 'player-ops', ['instances:write']);
    const manager = await userToken(s.t, 'boss', ['manager']);
    expect(
      (
        await s.t.call('POST', `/api/v1/instances/${s.id}/maintenance`, {
          body: { enabled: true, message: 'map reset until 18:00' },
          token: user,
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await s.t.call('POST', `/api/v1/instances/${s.id}/maintenance`, {
          body: { enabled: true, message: 'map reset until 18:00' },
          token: manager,
        })
      ).status,
    ).toBe(200);
    const refused = await s.t.call('POST', `/api/v1/instances/${s.id}/start`, { token: user });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({
      code: 'MAINTENANCE',
      message: 'instance survival is in maintenance: map reset until 18:00',
    });
    await s.t.call('POST', `/api/v1/instances/${s.id}/maintenance`, { body: { enabled: false } });

    expect(
      (await s.t.call('POST', '/api/v1/maintenance', { body: { enabled: true, message: 'upgrading EnderCloud' } })).body,
    ).toMatchObject({ enabled: true, message: 'upgrading EnderCloud' });
    const global = await s.t.call('POST', `/api/v1/instances/${s.id}/start`, { token: user });
    expect(global.body.error).toMatchObject({ code: 'MAINTENANCE', message: 'EnderCloud is in maintenance: upgrading EnderCloud' });
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/start`, { token: manager })).status).toBe(202);
    const audit = (await s.t.call('GET', '/api/v1/audit?targetId=' + s.id)).body.entries;
    expect(audit.find((e: Loose) => e.action === 'instance.start' && e.result === 'error')).toMatchObject({
      actor: 'player-ops',
      errorCode: 'MAINTENANCE',
    });
    expect(audit.find((e: Loose) => e.action === 'instance.start' && e.result === 'ok')).toMatchObject({ actor: 'boss' });
  });
});

describe('audit', () => {
  it('records every mutating call with the token name, target, redacted params and result, refusals included', async () => {
    const s = await setup();
    await userToken(s.t, 'ci', ['operator']);
    await s.t.call('POST', '/api/v1/hosts/host-a/maintenance', { body: { enabled: true, message: 'disk swap' } });
    await s.t.call('PUT', '/api/v1/groups/g', { body: { kind: 'nope' } });
    const entries = (await s.t.call('GET', '/api/v1/audit?limit=50')).body.entries as Loose[];
    const byAction = (a: string) => entries.filter((e) => e.action === a);
    expect(byAction('template.put')[0]).toMatchObject({
      actor: 'admin',
      targetKind: 'template',
      targetId: 'mc@1',
      result: 'ok',
      params: { created: true },
    });
    expect(byAction('instance.create')[0]).toMatchObject({ targetId: s.id, result: 'ok', params: { name: 'survival', groupId: 'g' } });
    expect(byAction('token.create')[0]).toMatchObject({ params: { name: 'ci', scopes: ['operator'] }, result: 'ok' });
    expect(byAction('host.maintenance')[0]).toMatchObject({ targetId: 'host-a', params: { enabled: true, message: 'disk swap' } });
    expect(byAction('group.put')[0]).toMatchObject({ result: 'error', errorCode: 'VALIDATION_FAILED' });
    expect(JSON.stringify(entries)).not.toContain(SECRET);
    const user = await userToken(s.t, 'viewer', ['read']);
    expect((await s.t.call('GET', '/api/v1/audit', { token: user })).status).toBe(403);
  });

  it('a router token may wake (start/resume) but is refused in maintenance like any automatic actor, and may not stop', async () => {
    const s = await setup();
    await online(s);
    await s.t.call('POST', `/api/v1/instances/${s.id}/stop`);
    await s.work();
    const router = await userToken(s.t, 'edge', ['router']);
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/stop`, { token: router })).status).toBe(403);
    await s.t.call('POST', '/api/v1/maintenance', { body: { enabled: true, message: 'later' } });
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/start`, { token: router })).body.error.code).toBe('MAINTENANCE');
    await s.t.call('POST', '/api/v1/maintenance', { body: { enabled: false } });
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/start`, { token: router })).status).toBe(202);
  });
});

describe('crash loop', () => {
  it('restarts unexpected exits after the backoff, trips after maxExits in the window (error, no restart), and an admin reset re-enables starts', async () => {
    const s = await setup();
    await online(s);
    const item = s.a.inventory.find((i) => i.instanceId === s.id)!;
    for (let n = 1; n <= 2; n++) {
      item.state = 'exited';
      item.exitCode = 137;
      await s.t.o.supervisor.tick();
      const crashed = await s.get();
      expect(crashed).toMatchObject({
        state: 'stopped',
        desiredState: 'running',
        crashLoop: { count: n, tripped: false, maxExits: 3, windowMs: 60_000 },
      });
      expect(crashed.stateReason).toContain('exited unexpectedly (code 137)');
      await s.work();
      expect((await s.get()).state).toBe('stopped'); // backoff not elapsed: the restart waits
      s.t.clock.advance(100 * 2 ** (n - 1));
      await s.work();
      expect(await s.get()).toMatchObject({ state: 'starting', observedState: 'running' });
      await s.t.o.supervisor.probeOnce(s.id);
    }
    item.state = 'exited';
    item.exitCode = 1;
    await s.t.o.supervisor.tick();
    const tripped = await s.get();
    expect(tripped).toMatchObject({ state: 'error', desiredState: 'stopped', crashLoop: { count: 3, tripped: true } });
    expect(tripped.stateReason).toContain('automatic restart disabled');
    s.t.clock.advance(10_000);
    await s.t.o.supervisor.tick();
    await s.work();
    expect((await s.get()).state).toBe('error'); // nothing fights the error state
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/start`)).body.error.message).toContain('reset-crash-loop');
    const reset = await s.t.call('POST', `/api/v1/instances/${s.id}/reset-crash-loop`);
    expect(reset.body).toMatchObject({ state: 'stopped', crashLoop: { count: 0, tripped: false } });
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/start`)).status).toBe(202);
  });

  it('a crash outside the window does not count: only exits within windowMs trip the breaker', async () => {
    const s = await setup();
    await online(s);
    const item = s.a.inventory.find((i) => i.instanceId === s.id)!;
    for (let n = 1; n <= 4; n++) {
      item.state = 'exited';
      item.exitCode = 1;
      await s.t.o.supervisor.tick();
      expect((await s.get()).crashLoop.tripped).toBe(false);
      s.t.clock.advance(30_001);
      await s.work();
      expect((await s.get()).state).toBe('starting');
    }
  });
});

describe('reconciliation', () => {
  it('a managed container deleted behind our back → unknown, then intervention_required after the grace; never recreated', async () => {
    const s = await setup({}, { ENDERCLOUD_UNKNOWN_GRACE: '1m' });
    await online(s);
    s.a.inventory.splice(0, s.a.inventory.length);
    const before = s.a.calls.length;
    await s.t.o.supervisor.tick();
    expect(await s.get()).toMatchObject({ state: 'unknown', observedState: 'absent' });
    s.t.clock.advance(60_000);
    await s.t.o.supervisor.tick();
    await s.work();
    expect((await s.get()).state).toBe('intervention_required');
    expect(s.a.calls.slice(before).filter((c) => c.method !== 'GET')).toEqual([]);
  });

  it('a container with altered labels or another image is not adopted: intervention_required', async () => {
    const s = await setup({ labels: { team: 'blue' } });
    await online(s);
    s.a.inventory[0]!.image = 'mc:1';
    s.a.inventory[0]!.labels = { team: 'blue' };
    await s.t.o.supervisor.tick();
    expect((await s.get()).state).toBe('online');
    s.a.inventory[0]!.labels = { team: 'red' };
    await s.t.o.supervisor.tick();
    expect(await s.get()).toMatchObject({ state: 'intervention_required', stateReason: expect.stringContaining('labels altered (team)') });
  });

  it('a container running another image than the applied one is not adopted', async () => {
    const s = await setup();
    await online(s);
    s.a.inventory[0]!.image = 'evil:latest';
    await s.t.o.supervisor.tick();
    expect(await s.get()).toMatchObject({
      state: 'intervention_required',
      stateReason: expect.stringContaining('runs image evil:latest, not mc:1'),
    });
  });
});

describe('settings', () => {
  it('validates: unknown setting 400, bad type 400, user 409 IMMUTABLE, reserved label 400', async () => {
    const s = await setup();
    const patch = (body: unknown) => s.t.call('PATCH', `/api/v1/instances/${s.id}/settings`, { body });
    expect((await patch({ settings: { NOPE: 1 } })).body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: expect.stringContaining('NOPE'),
    });
    expect((await patch({ settings: { MAX_PLAYERS: 'many' } })).body.error.message).toContain('must be a integer');
    expect((await patch({ user: { mode: 'custom', uid: 0, gid: 0 } })).body.error.code).toBe('IMMUTABLE');
    expect((await patch({ labels: { 'orchestrator.managed': 'false' } })).body.error.code).toBe('VALIDATION_FAILED');
  });

  it('collects restart_required changes and applies them together in one replacement at restart; secrets redacted everywhere', async () => {
    const s = await setup();
    await online(s);
    const res = await s.t.call('PATCH', `/api/v1/instances/${s.id}/settings`, {
      body: { settings: { MOTD: 'new motd', MAX_PLAYERS: 50, WELCOME: 'now', RCON_PASSWORD: 'rotated-secret-987654321' } },
    });
    expect(res.status).toBe(200);
    expect(res.body.applied).toEqual(['WELCOME']);
    expect(res.body.pendingChanges.map((c: Loose) => c.key).sort()).toEqual([
      'settings.MAX_PLAYERS',
      'settings.MOTD',
      'settings.RCON_PASSWORD',
    ]);
    expect(res.body.pendingChanges.find((c: Loose) => c.key === 'settings.RCON_PASSWORD').value).toBe('[redacted]');
    expect((await s.get()).state).toBe('online');
    await s.t.call('POST', `/api/v1/instances/${s.id}/restart`);
    await s.work();
    const replaces = s.a.calls.filter((c) => c.path.endsWith('/replace'));
    expect(replaces).toHaveLength(1);
    expect(replaces[0]!.body).toMatchObject({
      start: true,
      env: { MOTD: 'new motd', MAX_PLAYERS: '50', WELCOME: 'now', RCON_PASSWORD: 'rotated-secret-987654321' },
    });
    const view = await s.get();
    expect(view).toMatchObject({ state: 'starting', pendingChanges: [], revision: 2, settings: { MOTD: 'new motd', MAX_PLAYERS: 50 } });
    const revisions = (await s.t.call('GET', `/api/v1/instances/${s.id}/revisions`)).body.revisions;
    expect(revisions.map((r: Loose) => r.revision)).toEqual([2, 1]);
    const audit = (await s.t.call('GET', '/api/v1/audit')).body;
    for (const text of [
      JSON.stringify(view),
      JSON.stringify(revisions),
      JSON.stringify(audit),
      JSON.stringify(await s.t.call('GET', `/api/v1/instances/${s.id}/history`)),
    ]) {
      expect(text).not.toContain('rotated-secret-987654321');
      expect(text).not.toContain(SECRET);
    }
    expect(audit.entries.find((e: Loose) => e.action === 'instance.settings').params.settings.RCON_PASSWORD).toBe('[redacted]');
  });

  it('next_start image change waits (containerConfigPending) until the next explicit start pulls and replaces; immediate keeps a stopped instance stopped', async () => {
    const s = await setup();
    await online(s);
    await s.t.call('POST', `/api/v1/instances/${s.id}/stop`);
    await s.work();
    const res = await s.t.call('PATCH', `/api/v1/instances/${s.id}/settings`, { body: { image: 'mc:2', mode: 'next_start' } });
    expect(res.body).toMatchObject({ containerConfigPending: true, commandId: null });
    expect(s.a.calls.filter((c) => c.path.endsWith('/replace'))).toHaveLength(0);
    await s.t.call('POST', `/api/v1/instances/${s.id}/start`);
    await s.work();
    expect(s.a.calls.filter((c) => c.path.endsWith('/replace')).map((c) => [c.body.image, c.body.start, c.body.pull])).toEqual([
      ['mc:2', true, 'missing'],
    ]);
    expect(await s.get()).toMatchObject({ image: 'mc:2', containerConfigPending: false, state: 'starting' });

    await s.t.call('POST', `/api/v1/instances/${s.id}/stop`);
    await s.work();
    const now = await s.t.call('PATCH', `/api/v1/instances/${s.id}/settings`, { body: { labels: { team: 'blue' }, mode: 'immediate' } });
    expect(now.status).toBe(202);
    await s.work();
    const last = s.a.calls.filter((c) => c.path.endsWith('/replace')).at(-1)!;
    expect(last.body).toMatchObject({ start: false, labels: { team: 'blue' } });
    expect(await s.get()).toMatchObject({ state: 'stopped', desiredState: 'stopped', labels: { team: 'blue' } });
  });
});

describe('deletion', () => {
  it('player_data needs the typed name; the default scopes keep player data; the deletion is audited', async () => {
    const s = await setup();
    await online(s);
    const refused = await s.t.call('DELETE', `/api/v1/instances/${s.id}`, { body: { scopes: ['player_data'] } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'CONFIRMATION_REQUIRED', message: expect.stringContaining('"survival"') });
    expect((await s.t.call('DELETE', `/api/v1/instances/${s.id}`, { body: { scopes: ['player_data'], confirm: 'wrong' } })).status).toBe(
      400,
    );
    expect((await s.get()).state).toBe('online');
    const ok = await s.t.call('DELETE', `/api/v1/instances/${s.id}`, {
      body: { scopes: ['container', 'player_data'], confirm: 'survival' },
    });
    expect(ok.status).toBe(202);
    expect(ok.body).toMatchObject({ scopes: ['container', 'player_data'], retained: ['technical', 'backups'] });
    expect(await s.get()).toMatchObject({ state: 'deleting', deletion: { scopes: ['container', 'player_data'] } });
    await s.work();
    expect(s.a.calls.find((c) => c.method === 'DELETE')!.body).toEqual({ paths: ['world'] });
    expect((await s.t.call('GET', `/api/v1/instances/${s.id}`)).status).toBe(404);
    const audit = (await s.t.call('GET', '/api/v1/audit')).body.entries.filter((e: Loose) => e.action === 'instance.delete');
    expect(audit.map((e: Loose) => [e.result, e.errorCode])).toEqual([
      ['ok', null],
      ['error', 'CONFIRMATION_REQUIRED'],
      ['error', 'CONFIRMATION_REQUIRED'],
    ]);
    expect(audit[0].params).toMatchObject({ scopes: ['container', 'player_data'], confirmed: true });
    expect((await s.t.call('GET', '/api/v1/hosts/host-a')).body.memoryReservedMb).toBe(0);
  });

  it('container + technical (the default) removes only technical paths; all four scopes remove the whole instance root', async () => {
    const s = await setup();
    await online(s);
    const refused = await s.t.call('DELETE', `/api/v1/instances/${s.id}`, { body: { scopes: ['bogus'] } });
    expect(refused.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: expect.stringContaining('unknown deletion scope "bogus"'),
    });
    expect((await s.t.call('DELETE', `/api/v1/instances/${s.id}`)).body).toMatchObject({
      scopes: ['container', 'technical'],
      retained: ['player_data', 'backups'],
    });
    await s.work();
    expect(s.a.calls.filter((c) => c.method === 'DELETE').map((c) => c.body)).toEqual([{ paths: ['logs'] }]);
    expect(s.a.calls.some((c) => c.path.endsWith('/stop'))).toBe(true); // stopped gracefully first
  });

  it('all four scopes with the typed name remove the whole instance root', async () => {
    const s = await setup();
    await online(s);
    await s.t.call('DELETE', `/api/v1/instances/${s.id}`, {
      body: { scopes: ['container', 'technical', 'player_data', 'backups'], confirm: 'survival' },
    });
    await s.work();
    expect(s.a.calls.filter((c) => c.method === 'DELETE' && !c.path.endsWith('/backups')).map((c) => c.body)).toEqual([
      { keepData: false },
    ]);
    expect(s.a.calls.some((c) => c.method === 'DELETE' && c.path.endsWith('/backups'))).toBe(true);
  });
});

describe('bridge readiness', () => {
  it('SERVER_READY with the per-instance token moves starting → online; a wrong token is 401', async () => {
    const s = await setup({ readiness: { kind: 'bridge', startupTimeoutMs: 5000 } });
    const put = s.a.calls.find((c) => c.method === 'PUT')!;
    const token = put.body.env.ENDERCLOUD_INSTANCE_TOKEN as string;
    expect(token).toBe(SECRET);
    expect((await s.t.o.store.instances.get(s.id))!.bridgeTokenHash).toBe(hashToken(token));
    expect((await s.t.call('POST', `/api/v1/instances/${s.id}/events`, { body: { type: 'SERVER_READY' }, token: 'nope' })).status).toBe(
      401,
    );
    const published = (await s.get()).endpoint as { host: string; port: number };
    expect(published).toMatchObject({ host: expect.any(String), port: expect.any(Number) });
    // A container cannot aim players or probes anywhere else: a metadata address, the orchestrator, another port.
    for (const foreign of ['169.254.169.254:80', 'orchestrator:8080', `${published.host}:${published.port + 1}`]) {
      const refused = await s.t.call('POST', `/api/v1/instances/${s.id}/events`, {
        body: { type: 'SERVER_READY', endpoint: foreign },
        token,
      });
      expect(refused.status, foreign).toBe(400);
      expect(refused.body.error.message).toContain("is not this instance's published endpoint");
    }
    expect((await s.get()).state).toBe('starting');
    const ok = await s.t.call('POST', `/api/v1/instances/${s.id}/events`, {
      body: { type: 'SERVER_READY', endpoint: `${published.host}:${published.port}` },
      token,
    });
    expect(ok.status).toBe(202);
    expect(await s.get()).toMatchObject({ state: 'online', endpoint: published });
  });

  it('a server that never reports ready is degraded after the startup timeout, never online', async () => {
    const s = await setup({ readiness: { kind: 'bridge', startupTimeoutMs: 1000 } });
    await s.t.o.supervisor.probeOnce(s.id);
    expect((await s.get()).state).toBe('starting');
    s.t.clock.advance(1000);
    await s.t.o.supervisor.probeOnce(s.id);
    expect(await s.get()).toMatchObject({ state: 'degraded', stateReason: expect.stringContaining('not ready after 1000 ms') });
  });
});
