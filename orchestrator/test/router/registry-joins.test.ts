// Group joins, the cold-start fallback with the transfer back, instance names,
// Draining, and stream-loss logging: a real Router from buildRouterParts, real
// minecraft-protocol clients and servers, and the HTTP orchestrator stub.
import { afterEach, describe, expect, it } from 'vitest';
import { parseRouterToml, type RouterConfig } from '../../src/router/config.js';
import { RouterMetrics } from '../../src/router/metrics.js';
import { Router } from '../../src/router/router.js';
import { buildRouterParts, type RouterParts } from '../../src/router/router-parts.js';
import { writeHandshake, writePing, writeStatusRequest } from '../../src/protocol/packets.js';
import { PacketReader } from '../../src/protocol/codec.js';
import type { RegistryBackend } from '../../src/protocol/registry-contract.js';
import {
  closeAll,
  deadPort,
  mcLogin,
  PROTOCOL,
  rawExchange,
  recordingLogger,
  startMcBackend,
  waitUntil,
  type McBackend,
} from './harness.js';
import { backend, OrchestratorStub, TOKEN } from './orchestrator-stub.js';

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
  logger: ReturnType<typeof recordingLogger>;
}

async function setup(toml: string, backends: RegistryBackend[], limits: Partial<RouterConfig['limits']> = {}): Promise<Setup> {
  const stub = new OrchestratorStub(50);
  stub.reset(backends, 1);
  await stub.start();
  cleanups.push(() => stub.stop());
  const parsed = parseRouterToml(toml);
  const config: RouterConfig = {
    ...parsed,
    limits: { ...parsed.limits, loginRatelimitMs: 0, ...limits },
    configPath: 'test.toml',
    orchestratorUrl: stub.url,
    routerToken: TOKEN,
    routerId: 'joins-test',
  };
  const logger = recordingLogger('info');
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
  return { stub, router, port: address.port, parts, logger };
}

const addr = (b: McBackend): string => `127.0.0.1:${b.port}`;
const reason = (text: string | undefined): string => (JSON.parse(text ?? '{}') as { text?: string }).text ?? '';
const lazy = (get: () => McBackend | undefined): McBackend =>
  ({
    get logins() {
      return get()?.logins ?? [];
    },
  }) as McBackend;

describe('group targets', () => {
  it('a group with only sleeping members is joined through the orchestrator, held, then routed', async () => {
    const port = await deadPort();
    const s = await setup('try = ["events"]\n[servers]\nevents = "group:events"', [
      backend('ev-1', { groupId: 'events', status: 'Paused', address: `127.0.0.1:${port}` }),
    ]);
    let woken: McBackend | undefined;
    s.stub.onGroupJoin = (groupId) => {
      setTimeout(() => void startMcBackend('ev', port).then((b) => ((woken = b), s.stub.patch('ev-1', { status: 'Running' }))), 200);
      return { status: 200, body: { instanceId: 'ev-1', action: 'wake', commandId: `join-${groupId}` } };
    };
    expect((await mcLogin(s.port, 'Joiner', { waitForBackend: lazy(() => woken), timeoutMs: 8000 })).ended).toBe('backend-login');
    expect(s.stub.groupJoins).toEqual([{ groupId: 'events', player: 'Joiner', uuid: expect.any(String) }]);
    expect(s.logger.lines.find((l) => l.msg === 'login woke')).toMatchObject({ player: 'Joiner', target: 'events', outcome: 'woke' });
  });

  it('a join the orchestrator cannot serve (CAPACITY_EXHAUSTED) disconnects with the capacity message', async () => {
    const s = await setup('try = ["events"]\n[servers]\nevents = "group:events"\n[messages]\ncapacity = "All arenas busy"', [
      backend('ev-1', { groupId: 'events', status: 'Stopped' }),
    ]);
    s.stub.onGroupJoin = () => ({ status: 409, body: { error: { code: 'CAPACITY_EXHAUSTED', message: 'events is at its cap' } } });
    expect(reason((await mcLogin(s.port, 'Late')).disconnectReason)).toBe('All arenas busy');
    expect(s.logger.lines.find((l) => l.msg === 'login refused')).toMatchObject({ player: 'Late', reason: 'capacity' });
  });

  it('an empty group (a fleet scaled to zero) is joined: the login is held while the spawned world comes up, then routed', async () => {
    const s = await setup('try = ["events"]\n[servers]\nevents = "group:events"', []);
    let spawned: McBackend | undefined;
    s.stub.onGroupJoin = () => {
      // As the orchestrator: the new instance enters the registry Starting, then Running once its server answers.
      s.stub.upsert(backend('ev-new', { groupId: 'events', status: 'Starting', address: null }));
      void startMcBackend('ev-new').then((b) => ((spawned = b), s.stub.patch('ev-new', { status: 'Running', address: addr(b) })));
      return { status: 200, body: { instanceId: 'ev-new', action: 'spawn', commandId: 'cmd-spawn' } };
    };
    expect((await mcLogin(s.port, 'First', { waitForBackend: lazy(() => spawned), timeoutMs: 8000 })).ended).toBe('backend-login');
    expect(s.stub.groupJoins).toEqual([{ groupId: 'events', player: 'First', uuid: expect.any(String) }]);
    expect(spawned!.logins.map((l) => l.username)).toEqual(['First']);
    expect(s.logger.lines.find((l) => l.msg === 'login woke')).toMatchObject({ player: 'First', target: 'events', outcome: 'woke' });
  });

  it('an empty group whose spawn a cap refuses: the player is told which limit, never "no server"', async () => {
    const s = await setup('try = ["events"]\n[servers]\nevents = "group:events"', []);
    s.stub.onGroupJoin = () => ({
      status: 409,
      body: {
        error: {
          code: 'CAPACITY_EXHAUSTED',
          message: 'group events has no instance with room and cannot spawn one',
          details: { cause: 'CAP_REACHED', playerMessage: 'events is full (4 of 4 worlds).' },
        },
      },
    });
    expect(reason((await mcLogin(s.port, 'Capped')).disconnectReason)).toBe(
      'events is full (4 of 4 worlds). Please try again in a minute.',
    );
    expect(s.logger.lines.find((l) => l.msg === 'login refused')).toMatchObject({ player: 'Capped', reason: 'capacity' });
  });

  it('a group the orchestrator does not have (GROUP_NOT_FOUND) is "no server configured"', async () => {
    const s = await setup('try = ["typo"]\n[servers]\ntypo = "group:evnets"', []);
    expect(reason((await mcLogin(s.port, 'Lost')).disconnectReason)).toBe('No server is configured for this address.');
    expect(s.stub.groupJoins).toEqual([{ groupId: 'evnets', player: 'Lost', uuid: expect.any(String) }]);
    expect(s.logger.lines.find((l) => l.msg === 'login refused')).toMatchObject({ player: 'Lost', reason: 'no_backend' });
  });

  it('Draining members get no new joins; their current players stay', async () => {
    const ev = await startMcBackend('ev');
    const lobby = await startMcBackend('lobby');
    const s = await setup('try = ["events", "lobby"]\n[servers]\nevents = "group:events"\nlobby = "group:lobby"', [
      backend('ev-1', { groupId: 'events', address: addr(ev) }),
      backend('lobby-1', { groupId: 'lobby', address: addr(lobby) }),
    ]);
    expect((await mcLogin(s.port, 'Before', { waitForBackend: ev })).ended).toBe('backend-login');
    s.stub.patch('ev-1', { status: 'Draining' });
    await waitUntil(() => s.parts.registry!.get('ev-1')?.status === 'Draining', 3000, 'Draining');
    expect((await mcLogin(s.port, 'After', { waitForBackend: lobby })).ended).toBe('backend-login');
    expect(ev.logins.map((l) => l.username)).toEqual(['Before']);
  });
});

describe('instance names and the cold-start fallback', () => {
  it('instance:<name> routes to the instance with that name', async () => {
    const s1 = await startMcBackend('s1');
    const s = await setup('try = ["s1"]\n[servers]\ns1 = "instance:survival"', [
      backend('inst-7f3a', { name: 'survival', address: addr(s1) }),
    ]);
    expect((await mcLogin(s.port, 'ByName', { waitForBackend: s1 })).ended).toBe('backend-login');
  });

  it('warns once the registry is in about entries it does not know, naming the entry', async () => {
    const s = await setup('try = ["lobby"]\n[servers]\nlobby = "group:lobby"\ns1 = "instance:s1"', [
      backend('lobby-1', { groupId: 'lobby', address: '127.0.0.1:1' }),
    ]);
    await waitUntil(() => s.logger.lines.some((l) => l.msg.startsWith('servers.s1:')), 3000, 'unknown-target warning');
    expect(s.logger.lines.filter((l) => l.level === 40 && l.msg.startsWith('servers.')).map((l) => l.msg)).toEqual([
      'servers.s1: "instance:s1" matches no instance id or name in the registry',
    ]);
  });

  it('a cold start longer than the hold parks the player on the fallback and asks for the transfer back once online', async () => {
    const lobby = await startMcBackend('lobby');
    const s = await setup(
      'try = ["survival"]\n[servers]\nsurvival = "instance:survival-1"\nlobby = "group:lobby"\n[wake]\nfallback = "lobby"',
      [
        backend('survival-1', { status: 'Stopped', address: null, expectedStartMs: 120_000 }),
        backend('lobby-1', { groupId: 'lobby', address: addr(lobby) }),
      ],
    );
    expect((await mcLogin(s.port, 'Parked', { waitForBackend: lobby })).ended).toBe('backend-login');
    expect(s.stub.wakeRequests).toEqual([{ instanceId: 'survival-1', action: 'start' }]);
    expect(s.logger.lines.find((l) => l.msg === 'login fallback')).toMatchObject({
      player: 'Parked',
      target: 'lobby',
      outcome: 'fallback',
    });
  });

  it('a hold that ends before Running moves the still-connected player to the fallback, then back when the world is online', async () => {
    const lobby = await startMcBackend('lobby');
    const s = await setup(
      'try = ["survival"]\n[servers]\nsurvival = "instance:survival-1"\nlobby = "127.0.0.1:' + lobby.port + '"\n[wake]\nfallback = "lobby"',
      [backend('survival-1', { status: 'Paused', address: `127.0.0.1:${await deadPort()}` })],
      { wakeHoldTimeoutMs: 1000 },
    );
    const { default: mc } = await import('minecraft-protocol');
    const client = mc.createClient({
      host: '127.0.0.1',
      port: s.port,
      username: 'Returner',
      version: '1.20.4',
      auth: 'offline',
      hideErrors: true,
    });
    client.on('error', () => undefined);
    cleanups.push(() => client.end());
    await waitUntil(() => lobby.logins.some((l) => l.username === 'Returner'), 6000, 'player on the fallback');
    expect(s.stub.routerTransfers).toEqual([]);
    s.stub.patch('survival-1', { status: 'Running', address: '127.0.0.1:25999' });
    await waitUntil(() => s.stub.routerTransfers.length > 0, 3000, 'transfer back requested');
    expect(s.stub.routerTransfers).toEqual([{ player: 'Returner', uuid: expect.any(String), instanceId: 'survival-1' }]);
  });

  it('without a fallback, a hold that ends says when to rejoin', async () => {
    const s = await setup(
      'try = ["survival"]\n[servers]\nsurvival = "instance:survival-1"',
      [backend('survival-1', { status: 'Starting', address: null, expectedStartMs: null })],
      { wakeHoldTimeoutMs: 1000 },
    );
    expect(reason((await mcLogin(s.port, 'Waiter')).disconnectReason)).toBe(
      'The world is still waking up. Please join again in about 10 seconds.',
    );
  });
});

describe('status pings and the registry stream', () => {
  it('answers a sleeping world at once with the asleep MOTD and a pong, even with handshake + request + ping in one segment', async () => {
    const s = await setup('try = ["s"]\n[servers]\ns = "instance:survival-1"', [
      backend('survival-1', { status: 'Paused', address: `127.0.0.1:${await deadPort()}` }),
    ]);
    const payload = Buffer.from('87654321');
    const segment = Buffer.concat([
      writeHandshake({ protocolVersion: PROTOCOL, serverAddress: 'x', serverPort: 25565, nextState: 1 }),
      writeStatusRequest(),
      writePing(payload),
    ]);
    const started = Date.now();
    const res = await rawExchange(s.port, [segment], { untilFrames: 2 });
    expect(Date.now() - started).toBeLessThan(1000);
    const json = JSON.parse(new PacketReader(res.frames[0]!.body).string()) as {
      description: { text: string };
      version: { protocol: number };
    };
    expect(json.description.text).toBe('Asleep — join to wake it');
    expect(json.version.protocol).toBe(PROTOCOL);
    expect(res.frames[1]!.body.equals(payload)).toBe(true);
    expect(s.stub.wakeRequests).toEqual([]);
  });

  it('losing the registry stream is a warning at once', async () => {
    const s = await setup('try = []', []);
    s.stub.dropStreams();
    await waitUntil(() => s.logger.lines.some((l) => l.level === 40 && l.msg.startsWith('registry stream lost')), 1000, 'warn on loss');
  });
});
