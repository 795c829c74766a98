// Transfers: recorded with an expiry and claimed once by the router (atomically,
// resolved to an instance first), group targets resolved at claim time, the
// RCON `transfer` sent through the agent for a connected player, and evacuate.

import { afterEach, describe, expect, it } from 'vitest';
import { seed, sessionEvent, startRconAgent, tokenWith, type RconAgent } from './registry-support.js';
import { testOrchestrator, type Loose, type TestOrchestrator } from './support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(
  env: Record<string, string> = { ENDERCLOUD_ROUTER_PUBLIC_ADDRESS: 'play.example.com:25565' },
): Promise<{ t: TestOrchestrator; agent: RconAgent; router: string }> {
  const agent = await startRconAgent();
  cleanups.push(() => agent.close());
  const t = await testOrchestrator({ env });
  cleanups.push(() => t.close());
  return { t, agent, router: await tokenWith(t, 'edge', ['router']) };
}

const claim = (t: TestOrchestrator, token: string, body: Record<string, unknown>) =>
  t.call('POST', '/api/v1/transfers/claim', { token, body });
const connect = (t: TestOrchestrator, token: string, events: unknown[]) =>
  t.call('POST', '/api/v1/router/sessions', { token, body: { routerId: 'edge-1', events } });

describe('pending transfers', () => {
  it('records a transfer, the router claims it once (address included), and the list shows it consumed', async () => {
    const { t, agent, router } = await setup();
    const s = await seed(t, agent.url);
    const target = await s.add('event-1', 'online');
    const created = await t.call('POST', '/api/v1/transfers', { body: { player: 'Alice', target: { instance: 'event-1' } } });
    expect(created.status).toBe(201);
    expect(created.body.transfer).toMatchObject({ player: 'Alice', status: 'pending', target: { instance: 'event-1' } });
    expect(created.body.move).toMatchObject({ moved: false, reason: 'the player is not connected through a router' });
    expect(Date.parse(created.body.transfer.expiresAt) - Date.parse(created.body.transfer.createdAt)).toBe(60_000);

    const first = await claim(t, router, { player: 'alice' }); // names compare case-insensitively
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      transferId: created.body.transfer.id,
      instanceId: 'event-1',
      address: `127.0.0.1:${target.endpoint!.port}`,
    });
    const second = await claim(t, router, { player: 'Alice' });
    expect(second.status).toBe(404);
    expect(second.body.error.code).toBe('NOT_FOUND');
    const list = (await t.call('GET', '/api/v1/transfers?player=Alice')).body.transfers;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ status: 'consumed', resolvedInstanceId: 'event-1' });
  });

  it('two concurrent claims: exactly one gets the transfer', async () => {
    const { t, router } = await setup();
    const s = await seed(t);
    await s.add('event-1', 'online');
    await t.call('POST', '/api/v1/transfers', { body: { player: 'Racer', target: { instance: 'event-1' } } });
    const results = await Promise.all([claim(t, router, { player: 'Racer' }), claim(t, router, { player: 'Racer' })]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 404]);
  });

  it('an expired transfer is not claimable; a uuid mismatch is refused and leaves the transfer pending', async () => {
    const { t, router } = await setup();
    const s = await seed(t);
    await s.add('event-1', 'online');
    await t.call('POST', '/api/v1/transfers', { body: { player: 'Late', target: { instance: 'event-1' }, ttlSeconds: 5 } });
    t.clock.advance(5_001);
    expect((await claim(t, router, { player: 'Late' })).status).toBe(404);
    expect((await t.call('GET', '/api/v1/transfers?player=Late')).body.transfers[0].status).toBe('expired');

    const uuid = '0f0e0d0c-0b0a-0908-0706-050403020100';
    await t.call('POST', '/api/v1/transfers', { body: { player: 'Named', uuid, target: { instance: 'event-1' } } });
    expect((await claim(t, router, { player: 'Named', uuid: '11111111-2222-3333-4444-555555555555' })).status).toBe(404);
    expect((await claim(t, router, { player: 'Named', uuid })).status).toBe(200);
  });

  it('a group target resolves at claim time to its best member: Running before Stopped, never maintenance or Stale', async () => {
    const { t, router } = await setup();
    const s = await seed(t);
    await s.add('g-stopped', 'stopped');
    await s.add('g-maint', 'online', { maintenance: { enabled: true, message: 'm', since: 0 } });
    await s.add('g-sick', 'degraded');
    await t.call('POST', '/api/v1/transfers', { body: { player: 'Grouper', target: { group: 'g1' } } });
    await s.add('g-run', 'online'); // created after the transfer: the claim still finds it
    expect((await claim(t, router, { player: 'Grouper' })).body.instanceId).toBe('g-run');
  });

  it('a session target resolves to the session’s instance; a released session is refused with 404', async () => {
    const { t, router } = await setup();
    const s = await seed(t);
    await s.add('match-1', 'online');
    const store = t.o.store;
    await store.sessions.create({
      id: 'sess-1',
      groupId: 'g1',
      instanceId: 'match-1',
      status: 'allocated',
      metadata: {},
      createdAt: t.clock.now(),
      releasedAt: null,
    });
    const created = await t.call('POST', '/api/v1/transfers', { body: { player: 'Matcher', target: { session: 'sess-1' } } });
    expect(created.status).toBe(201);
    expect((await claim(t, router, { player: 'Matcher' })).body).toMatchObject({ instanceId: 'match-1' });
    await store.instances.releaseSession('sess-1', t.clock.now());
    const gone = await t.call('POST', '/api/v1/transfers', { body: { player: 'Matcher', target: { session: 'sess-1' } } });
    expect(gone.status).toBe(404);
    expect(gone.body.error.message).toMatch(/session sess-1/);
  });

  it('refuses bad input with a 4xx naming the problem and records nothing', async () => {
    const { t } = await setup();
    await seed(t);
    const two = await t.call('POST', '/api/v1/transfers', { body: { player: 'Alice', target: { instance: 'a', group: 'g1' } } });
    expect(two.status).toBe(400);
    expect(two.body.error.message).toMatch(/target/);
    const missing = await t.call('POST', '/api/v1/transfers', { body: { player: 'Alice', target: { instance: 'nope' } } });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('INSTANCE_NOT_FOUND');
    const badName = await t.call('POST', '/api/v1/transfers', { body: { player: 'has space', target: { group: 'g1' } } });
    expect(badName.status).toBe(400);
    expect((await t.call('GET', '/api/v1/transfers')).body.transfers).toEqual([]);
    const router = await tokenWith(t, 'edge2', ['router']);
    expect((await t.call('POST', '/api/v1/transfers', { token: router, body: { player: 'Alice', target: { group: 'g1' } } })).status).toBe(
      403,
    );
  });
});

describe('RCON transfer and evacuate', () => {
  it('moves a connected player with `transfer <router host> <port> <player>` through the agent, with the template RCON port and password', async () => {
    const { t, agent, router } = await setup();
    const s = await seed(t, agent.url);
    await s.add('lobby-1', 'online');
    await s.add('event-1', 'online');
    expect((await connect(t, router, [sessionEvent('login', 's1', 'Alice', 'lobby-1')])).status).toBe(204);
    const res = await t.call('POST', '/api/v1/transfers', { body: { player: 'Alice', target: { instance: 'event-1' } } });
    expect(res.status).toBe(201);
    expect(res.body.move).toEqual({ moved: true, fromInstanceId: 'lobby-1' });
    expect(agent.calls).toEqual([
      { instanceId: 'lobby-1', body: { port: 25575, password: 's3cr3t', command: 'transfer play.example.com 25565 Alice' } },
    ]);
  });

  it('does not send RCON when the backend lacks accepts-transfers, the router address is unset, or the server refuses', async () => {
    const { t, agent, router } = await setup();
    const s = await seed(t, agent.url);
    await s.add('old-1', 'online', {
      containerConfig: { image: 'x', labels: {}, env: {}, resources: { memoryMb: 512 }, containerPort: 25565, layers: [] },
    });
    await s.add('lobby-1', 'online');
    await s.add('event-1', 'online');
    await connect(t, router, [sessionEvent('login', 's1', 'Old', 'old-1'), sessionEvent('login', 's2', 'Ghost', 'lobby-1')]);
    const old = await t.call('POST', '/api/v1/transfers', { body: { player: 'Old', target: { instance: 'event-1' } } });
    expect(old.body.move).toMatchObject({ moved: false, reason: 'instance old-1 does not declare RCON and accepts-transfers' });
    expect(old.body.transfer.status).toBe('pending'); // still honoured at the next login
    agent.answer = () => ({ status: 200, body: { response: 'No player was found' } });
    const ghost = await t.call('POST', '/api/v1/transfers', { body: { player: 'Ghost', target: { instance: 'event-1' } } });
    expect(ghost.body.move).toMatchObject({ moved: false, reason: 'server answered: No player was found' });

    const bare = await setup({});
    const s2 = await seed(bare.t, bare.agent.url);
    await s2.add('lobby-1', 'online');
    await s2.add('event-1', 'online');
    await connect(bare.t, bare.router, [sessionEvent('login', 's1', 'Alice', 'lobby-1')]);
    const res = await bare.t.call('POST', '/api/v1/transfers', { body: { player: 'Alice', target: { instance: 'event-1' } } });
    expect(res.body.move).toMatchObject({ moved: false, reason: 'ENDERCLOUD_ROUTER_PUBLIC_ADDRESS is not set' });
    expect(bare.agent.calls).toEqual([]);
  });

  it('evacuate moves every connected player off an instance and drains it in the registry; with a target each gets a pending transfer', async () => {
    const { t, agent, router } = await setup();
    const s = await seed(t, agent.url);
    await s.add('lobby-1', 'online');
    await s.add('lobby-2', 'online');
    await connect(t, router, [
      sessionEvent('login', 's1', 'Alice', 'lobby-1'),
      sessionEvent('login', 's2', 'Bob', 'lobby-1'),
      sessionEvent('login', 's3', 'Carol', 'lobby-2'),
    ]);
    const res = await t.call('POST', '/api/v1/instances/lobby-1/evacuate', { body: {} });
    expect(res.status).toBe(200);
    expect(res.body.players.map((p: Loose) => [p.player, p.moved, p.transferId])).toEqual([
      ['Alice', true, null],
      ['Bob', true, null],
    ]);
    expect(agent.calls.map((c) => c.body.command)).toEqual([
      'transfer play.example.com 25565 Alice',
      'transfer play.example.com 25565 Bob',
    ]);
    const registry = (await t.call('GET', '/api/v1/registry')).body.backends as Loose[];
    expect(registry.find((b) => b.instanceId === 'lobby-1').maintenance).toBe(true); // no initial join lands back on it
    expect(registry.find((b) => b.instanceId === 'lobby-2').maintenance).toBe(false);

    const targeted = await t.call('POST', '/api/v1/instances/lobby-2/evacuate', { body: { target: { instance: 'lobby-1' } } });
    expect(targeted.body.players).toHaveLength(1);
    expect(targeted.body.players[0]).toMatchObject({ player: 'Carol', moved: true });
    expect((await claim(t, router, { player: 'Carol' })).body.instanceId).toBe('lobby-1');
    expect((await t.call('POST', '/api/v1/instances/lobby-2/evacuate', { body: { target: { instance: 'lobby-2' } } })).status).toBe(400);
  });
});
