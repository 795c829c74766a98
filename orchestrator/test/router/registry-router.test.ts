// End to end: a real Router assembled by buildRouterParts, real minecraft-protocol
// clients and servers, and a real HTTP server speaking the orchestrator contract.
import { afterEach, describe, expect, it } from 'vitest';
import mc from 'minecraft-protocol';
import { createLogger } from '../../src/shared/logger.js';
import { parseRouterToml, type RouterConfig } from '../../src/router/config.js';
import { RouterMetrics } from '../../src/router/metrics.js';
import { startMetricsServer } from '../../src/router/metrics.js';
import { Router } from '../../src/router/router.js';
import { connect, type Socket } from 'node:net';
import { buildRouterParts, type RouterParts } from '../../src/router/router-parts.js';
import type { RegistryBackend } from '../../src/protocol/registry-contract.js';
import { uniqueId } from '../support/docker.js';
import { closeAll, deadPort, mcLogin, startMcBackend, VERSION, waitUntil, type McBackend } from './harness.js';
import { backend, OrchestratorStub, TOKEN } from './orchestrator-stub.js';

const logger = createLogger('registry-router-test', 'silent');
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) {
    try {
      await c();
    } catch {
      // keep cleaning
    }
  }
  await closeAll();
});

interface Setup {
  stub: OrchestratorStub;
  router: Router;
  port: number;
  parts: RouterParts;
  metrics: RouterMetrics;
  routerId: string;
}

async function setup(toml: string, backends: RegistryBackend[], limits: Partial<RouterConfig['limits']> = {}): Promise<Setup> {
  const stub = new OrchestratorStub(50);
  stub.reset(backends, 1);
  await stub.start();
  cleanups.push(() => stub.stop());
  const parsed = parseRouterToml(toml);
  const routerId = uniqueId('router');
  const config: RouterConfig = {
    ...parsed,
    limits: { ...parsed.limits, loginRatelimitMs: 0, ...limits },
    configPath: 'test.toml',
    orchestratorUrl: stub.url,
    routerToken: TOKEN,
    routerId,
  };
  const metrics = new RouterMetrics();
  const parts = buildRouterParts(config, logger, metrics, {
    registryBackoff: { initialMs: 50, maxMs: 200 },
    sessionBackoff: { initialMs: 50, maxMs: 200 },
    sessionFlushMs: 20,
    holdSlackMs: 500,
  });
  cleanups.push(() => parts.close());
  const router = new Router({ config, resolver: parts.resolver, waker: parts.waker!, sessions: parts.sessions!, metrics, logger });
  const address = await router.listen(0, '127.0.0.1');
  cleanups.push(() => router.close());
  await waitUntil(() => parts.registry!.connected, 3000, 'registry sync');
  return { stub, router, port: address.port, parts, metrics, routerId };
}

const addr = (b: McBackend): string => `127.0.0.1:${b.port}`;
const reason = (text: string | undefined): string => (JSON.parse(text ?? '{}') as { text?: string }).text ?? '';

async function ping(port: number): Promise<string> {
  const res = (await mc.ping({ host: '127.0.0.1', port, version: VERSION })) as { description: { text: string } };
  return res.description.text; // mc.ping resolves only after the pong
}

describe('router with the orchestrator registry', () => {
  it('refuses a registry-only backend for an initial join and reaches it after a transfer is claimed', async () => {
    const event = await startMcBackend('event');
    const s = await setup('try = ["lobby"]\n[servers]\nlobby = "group:lobby"', [backend('event-1', { address: addr(event) })]);
    const refused = await mcLogin(s.port, 'Trav', { fakeHost: 'event-1' });
    expect(reason(refused.disconnectReason)).toBe('No server is configured for this address.');
    expect(event.logins).toEqual([]);

    s.stub.transfers.set('Trav', { transferId: 't1', instanceId: 'event-1', address: addr(event) });
    expect((await mcLogin(s.port, 'Trav', { waitForBackend: event })).ended).toBe('backend-login');
    expect(s.stub.transfers.has('Trav')).toBe(false); // consumed
    expect(reason((await mcLogin(s.port, 'Trav')).disconnectReason)).toBe('No server is configured for this address.');
  });

  it('routes a forced host to its registry instance and other addresses to the try group; maintenance filters', async () => {
    const lobby = await startMcBackend('lobby');
    const survival = await startMcBackend('survival');
    const s = await setup(
      'try = ["lobby"]\n[servers]\nlobby = "group:lobby"\nsurvival = "instance:survival-1"\n[forced-hosts]\n"survival.example.com" = ["survival", "lobby"]',
      [
        backend('lobby-1', { groupId: 'lobby', address: addr(lobby) }),
        backend('survival-1', { groupId: 'survival', address: addr(survival) }),
      ],
    );
    expect((await mcLogin(s.port, 'Forced', { fakeHost: 'survival.example.com', waitForBackend: survival })).ended).toBe('backend-login');
    expect((await mcLogin(s.port, 'Plain', { fakeHost: 'play.example.com', waitForBackend: lobby })).ended).toBe('backend-login');
    s.stub.patch('survival-1', { maintenance: true });
    await waitUntil(() => s.parts.registry!.get('survival-1')?.maintenance === true, 3000, 'maintenance upsert');
    expect((await mcLogin(s.port, 'Forced2', { fakeHost: 'survival.example.com', waitForBackend: lobby })).ended).toBe('backend-login');
    expect(survival.logins.map((l) => l.username)).toEqual(['Forced']);
    expect(lobby.logins.map((l) => l.username)).toEqual(['Plain', 'Forced2']);
  });

  it('answers status locally with a pong while Paused, Stopped and Starting, and wakes nothing', async () => {
    const s = await setup(
      'try = ["s"]\n[servers]\ns = "instance:survival-1"\n[status]\nasleep = "zzz"\nstopped = "off"\nstarting = "soon"',
      [backend('survival-1', { status: 'Paused', address: `127.0.0.1:${await deadPort()}` })],
    );
    expect(await ping(s.port)).toBe('zzz');
    s.stub.patch('survival-1', { status: 'Stopped', address: null });
    await waitUntil(() => s.parts.registry!.get('survival-1')?.status === 'Stopped', 3000, 'Stopped');
    expect(await ping(s.port)).toBe('off');
    s.stub.patch('survival-1', { status: 'Starting' });
    await waitUntil(() => s.parts.registry!.get('survival-1')?.status === 'Starting', 3000, 'Starting');
    expect(await ping(s.port)).toBe('soon');
    expect(s.stub.wakeRequests).toEqual([]);
    expect(await s.metrics.value(s.metrics.statusAnswers)).toBe(3);
  });

  it('a login to a Paused instance resumes it and completes once the registry shows it Running', async () => {
    const port = await deadPort();
    const s = await setup('try = ["s"]\n[servers]\ns = "instance:survival-1"', [
      backend('survival-1', { status: 'Paused', address: `127.0.0.1:${port}` }),
    ]);
    let woken: McBackend | undefined;
    s.stub.onWake = (id) => {
      setTimeout(() => {
        void startMcBackend('woken', port).then((b) => {
          woken = b;
          s.stub.patch(id, { status: 'Running' });
        });
      }, 300);
      return { status: 202, body: { commandId: 'cmd-resume' } };
    };
    const watch = {
      get logins() {
        return woken?.logins ?? [];
      },
    } as McBackend;
    const out = await mcLogin(s.port, 'Sleeper', { waitForBackend: watch, timeoutMs: 8000 });
    expect(out.ended).toBe('backend-login');
    expect(s.stub.wakeRequests).toEqual([{ instanceId: 'survival-1', action: 'resume' }]);
    expect(await s.metrics.value(s.metrics.wakes, { result: 'ok' })).toBe(1);
    const text = await s.metrics.registry.getSingleMetricAsString('endercloud_router_instance_wake_seconds');
    expect(text).toMatch(/endercloud_router_instance_wake_seconds_count\{action="resume"\} 1/);
  });

  it('a login to a Stopped instance requests a start and shows when to retry; a policy refusal is shown clearly', async () => {
    const s = await setup(
      'try = ["s"]\n[servers]\ns = "instance:survival-1"\ng = "instance:private-1"\n[forced-hosts]\n"private.example.com" = ["g"]',
      [
        backend('survival-1', { status: 'Stopped', address: null, expectedStartMs: 90_000 }),
        backend('private-1', { status: 'Paused', address: '127.0.0.1:1' }),
      ],
    );
    const out = await mcLogin(s.port, 'Starter');
    expect(reason(out.disconnectReason)).toBe('The world is starting. Please join again in about 90 seconds.');
    expect(s.stub.wakeRequests).toEqual([{ instanceId: 'survival-1', action: 'start' }]);

    s.stub.onWake = () => ({ status: 403, body: { error: { code: 'FORBIDDEN', message: 'guests may not wake private-1' } } });
    const refused = await mcLogin(s.port, 'Guest', { fakeHost: 'private.example.com' });
    expect(reason(refused.disconnectReason)).toBe('This world cannot be started right now. guests may not wake private-1');
    expect(s.stub.wakeRequests.at(-1)).toEqual({ instanceId: 'private-1', action: 'resume' });
    // A second login within the start's window shares the accepted request instead of asking again.
    await mcLogin(s.port, 'Starter2');
    expect(s.stub.wakeRequests.filter((w) => w.action === 'start')).toHaveLength(1);
  });

  it('reports sessions: a reset first, then login and disconnect with one id, and denied logins', async () => {
    const lobby = await startMcBackend('lobby');
    const s = await setup('try = ["lobby"]\n[servers]\nlobby = "group:lobby"', [
      backend('lobby-1', { groupId: 'lobby', address: addr(lobby) }),
    ]);
    await waitUntil(() => s.stub.sessionBatches.length > 0, 3000, 'reset batch');
    expect(s.stub.sessionBatches[0]).toMatchObject({ routerId: s.routerId, reset: true });
    expect((await mcLogin(s.port, 'Sess', { waitForBackend: lobby })).ended).toBe('backend-login');
    const events = () => s.stub.sessionBatches.flatMap((b) => b.events);
    await waitUntil(() => events().some((e) => e.type === 'disconnect' && e.player === 'Sess'), 5000, 'disconnect event');
    const login = events().find((e) => e.type === 'login')!;
    const disconnect = events().find((e) => e.type === 'disconnect')!;
    expect(login).toMatchObject({ player: 'Sess', instanceId: 'lobby-1', backend: 'lobby' });
    expect(login.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(disconnect.id).toBe(login.id);
    expect(s.stub.sessionBatches.filter((b) => b.reset)).toHaveLength(1);

    s.stub.patch('lobby-1', { full: true });
    await waitUntil(() => s.parts.registry!.get('lobby-1')?.full === true, 3000, 'full');
    expect(reason((await mcLogin(s.port, 'Late')).disconnectReason)).toBe('The server is full. Please try again later.');
    await waitUntil(() => events().some((e) => e.type === 'denied' && e.player === 'Late'), 5000, 'denied event');
  });

  it('survives an orchestrator restart: the connected player stays, new joins use the last snapshot, reports catch up', async () => {
    const lobby = await startMcBackend('lobby');
    const s = await setup('try = ["lobby"]\n[servers]\nlobby = "group:lobby"', [
      backend('lobby-1', { groupId: 'lobby', address: addr(lobby) }),
    ]);
    const stay = mc.createClient({
      host: '127.0.0.1',
      port: s.port,
      username: 'Stayer',
      version: VERSION,
      auth: 'offline',
      hideErrors: true,
    });
    cleanups.push(() => stay.end());
    let ended = false;
    stay.on('end', () => {
      ended = true;
    });
    stay.on('error', () => undefined);
    await waitUntil(() => lobby.logins.some((l) => l.username === 'Stayer'), 5000, 'Stayer on the backend');

    await s.stub.stop();
    await waitUntil(() => !s.parts.registry!.connected, 3000, 'stream loss noticed');
    expect((await mcLogin(s.port, 'During', { waitForBackend: lobby })).ended).toBe('backend-login');

    s.stub.reset(
      [backend('lobby-1', { groupId: 'lobby', address: addr(lobby) }), backend('lobby-2', { groupId: 'lobby', status: 'Paused' })],
      0,
    );
    await s.stub.start();
    await waitUntil(() => s.parts.registry!.connected && s.parts.registry!.get('lobby-2') !== undefined, 5000, 're-sync');
    await waitUntil(
      () => s.stub.sessionBatches.flatMap((b) => b.events).some((e) => e.player === 'During' && e.type === 'disconnect'),
      5000,
      'buffered reports delivered',
    );
    expect(ended).toBe(false);
    expect(s.router.activeConnections).toBeGreaterThanOrEqual(1);
  });

  it('serves every family on /metrics: connections (active, by outcome), bytes, wakes (count, latency), status answers by state, rate-limited', async () => {
    const lobby = await startMcBackend('lobby');
    const sleepyPort = await deadPort();
    const s = await setup(
      'try = ["sleepy"]\n[servers]\nsleepy = "instance:sleepy-1"\nlobby = "group:lobby"\n[forced-hosts]\n"lobby.example.com" = ["lobby"]',
      [
        backend('lobby-1', { groupId: 'lobby', address: addr(lobby) }),
        backend('sleepy-1', { status: 'Paused', address: `127.0.0.1:${sleepyPort}` }),
      ],
      { maxConnectionsPerIp: 2 },
    );
    const { server, address } = await startMetricsServer(s.metrics, '127.0.0.1', 0);
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${address.port}/metrics`)).text();
    const sample = (text: string, name: string): number =>
      Number(new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);

    // Rate limit: two idle connections fill this address's slots; a third is refused (and counted).
    const held: Socket[] = [];
    for (let k = 0; k < 2; k++) {
      const sock = connect({ host: '127.0.0.1', port: s.port });
      sock.on('error', () => undefined);
      held.push(sock);
      cleanups.push(() => void sock.destroy());
    }
    await waitUntil(() => s.router.activeConnections === 2, 3000, 'two held connections');
    expect(sample(await scrape(), 'endercloud_router_connections_active')).toBe(2);
    const third = connect({ host: '127.0.0.1', port: s.port });
    third.on('error', () => undefined);
    await new Promise<void>((r) => third.once('close', () => r()));
    held.forEach((h) => h.destroy());
    await waitUntil(() => s.router.activeConnections === 0, 3000, 'held connections closed');

    expect(await ping(s.port)).toBe('Asleep — join to wake it');
    expect(await ping(s.port)).toBe('Asleep — join to wake it');
    await waitUntil(() => s.router.activeConnections === 0, 3000, 'pings closed');
    expect((await mcLogin(s.port, 'Proxied', { fakeHost: 'lobby.example.com', waitForBackend: lobby })).ended).toBe('backend-login');
    await waitUntil(() => s.router.activeConnections === 0, 3000, 'proxied login closed');
    let woken: McBackend | undefined;
    s.stub.onWake = (id) => {
      void startMcBackend('woken', sleepyPort).then((b) => {
        woken = b;
        s.stub.patch(id, { status: 'Running' });
      });
      return { status: 202, body: { commandId: 'cmd-resume' } };
    };
    const watch = {
      get logins() {
        return woken?.logins ?? [];
      },
    } as McBackend;
    expect((await mcLogin(s.port, 'Waker', { waitForBackend: watch, timeoutMs: 8000 })).ended).toBe('backend-login');
    await waitUntil(() => s.router.activeConnections === 0, 3000, 'wake login closed');

    const text = await scrape();
    expect(sample(text, 'endercloud_router_connections_active')).toBe(0);
    expect(sample(text, 'endercloud_router_connections_total{outcome="rate_limited"}')).toBe(1);
    expect(sample(text, 'endercloud_router_connections_total{outcome="status_local"}')).toBe(2);
    expect(sample(text, 'endercloud_router_connections_total{outcome="proxied"}')).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'endercloud_router_bytes_total{direction="in"}')).toBeGreaterThan(0);
    expect(sample(text, 'endercloud_router_bytes_total{direction="out"}')).toBeGreaterThan(0);
    expect(sample(text, 'endercloud_router_status_answers_total{state="Paused"}')).toBe(2);
    expect(sample(text, 'endercloud_router_rate_limited_total{limit="connections"}')).toBe(1);
    expect(sample(text, 'endercloud_router_wakes_total{result="ok"}')).toBe(1);
    expect(sample(text, 'endercloud_router_wake_seconds_count')).toBe(1);
    expect(text).toMatch(/^endercloud_router_wake_seconds_bucket\{le="30"\} 1$/m);
    expect(sample(text, 'endercloud_router_instance_wake_seconds_count{action="resume"}')).toBe(1);
    expect(sample(text, 'endercloud_router_wake_requests_total{action="resume",result="accepted"}')).toBe(1);
  });
});
