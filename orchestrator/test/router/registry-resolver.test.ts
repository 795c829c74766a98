// Routing decisions with a registry: a table over snapshot objects (pure), and
// the resolver's I/O edges (transfer claims, wake refusals) with in-memory parts.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { AppError } from '../../src/shared/errors.js';
import { DEFAULT_MESSAGES, parseRouterToml } from '../../src/router/config.js';
import { instanceIdOf, planRoute, RegistryResolver, unknownTargets } from '../../src/router/registry-resolver.js';
import { RegistryState } from '../../src/router/registry-state.js';
import type { RegistryBackend } from '../../src/protocol/registry-contract.js';
import { WakeFailed, type RoutePlan, type RouteRequest } from '../../src/router/resolver.js';
import { OrchestratorWakeCoordinator } from '../../src/router/wake-coordinator.js';
import { backend } from './orchestrator-stub.js';

const ROUTING = parseRouterToml(`
try = ["lobby", "static"]
[servers]
lobby = "group:lobby"
survival = "instance:survival-1"
static = "10.0.0.9:25565"
[forced-hosts]
"survival.example.com" = ["survival", "lobby"]
`).routing;

const OPTS = { holdTimeoutMs: 20_000, holdSlackMs: 2000, messages: DEFAULT_MESSAGES };
const lobby = (id: string, patch: Partial<RegistryBackend> = {}): RegistryBackend =>
  backend(id, { groupId: 'lobby', address: `10.0.1.${id.slice(-1)}:25565`, ...patch });
const survival = (patch: Partial<RegistryBackend>): RegistryBackend =>
  backend('survival-1', { groupId: 'survival', address: '10.0.2.1:25565', ...patch });

/** Plans reduced to comparable facts (targets read their addresses from the registry). */
const targets = (list: readonly { name: string; host: string; port: number }[]): string =>
  list.map((c) => `${c.name}@${c.host}:${c.port}`).join(',');

function summary(plan: RoutePlan): string {
  switch (plan.kind) {
    case 'route':
      return `connect ${targets(plan.candidates)}`;
    case 'status':
      return `status ${plan.state}`;
    case 'wake':
      return `wake ${plan.instanceId} ${plan.action}${plan.fallback ? ` else ${targets(plan.fallback)}` : ''}`;
    case 'hold':
      return `wake ${plan.instanceId} wait${plan.fallback ? ` else ${targets(plan.fallback)}` : ''}`;
    case 'join-group':
      return `join ${plan.groupId} as ${plan.name}${plan.fallback ? ` else ${targets(plan.fallback)}` : ''}`;
    case 'fallback':
      return `fallback ${plan.instanceId} ${plan.action ?? 'none'}: ${targets(plan.candidates)}`;
    case 'refuse':
      return plan.start ? `start ${plan.start.instanceId} ${plan.start.action ?? 'none'}: ${plan.message}` : `refuse: ${plan.message}`;
  }
}

const SURVIVAL = 'survival.example.com';
const seconds = (n: number): string => DEFAULT_MESSAGES.starting.replace('{seconds}', String(n));

describe('registry routing decisions', () => {
  it.each<[string, RegistryBackend[], RouteRequest['intent'], string, string]>([
    [
      'Running group members: fullest first, static entry as dial fallback',
      [lobby('l1', { players: { online: 1, max: 20 } }), lobby('l2', { players: { online: 5, max: 20 } })],
      'login',
      'play.example.com',
      'connect lobby@10.0.1.2:25565,lobby@10.0.1.1:25565,static@10.0.0.9:25565',
    ],
    [
      'Stale, maintenance and full members are routed around',
      [lobby('l1', { status: 'Stale' }), lobby('l2', { maintenance: true }), lobby('l3', { full: true }), lobby('l4')],
      'login',
      'x',
      'connect lobby@10.0.1.4:25565,static@10.0.0.9:25565',
    ],
    [
      'a Running member wins over a Paused one in a group',
      [lobby('l1', { status: 'Paused' }), lobby('l2')],
      'login',
      'x',
      'connect lobby@10.0.1.2:25565,static@10.0.0.9:25565',
    ],
    ['an empty group (a fleet scaled to zero) decides: a join, the orchestrator spawns one', [], 'login', 'x', 'join lobby as lobby'],
    ['status: an empty group answers stopped locally (join to start it)', [], 'status', 'x', 'status Stopped'],
    [
      'a group whose members are all Stale is routed around (no join)',
      [lobby('l1', { status: 'Stale' })],
      'login',
      'x',
      'connect static@10.0.0.9:25565',
    ],
    [
      'forced host: the forced list replaces try',
      [survival({}), lobby('l1')],
      'login',
      SURVIVAL,
      'connect survival@10.0.2.1:25565,lobby@10.0.1.1:25565',
    ],
    [
      'forced host: survival in maintenance falls to its lobby',
      [survival({ maintenance: true }), lobby('l1')],
      'login',
      SURVIVAL,
      'connect lobby@10.0.1.1:25565',
    ],
    [
      'Paused first entry: wake it (order wins over a Running fallback)',
      [survival({ status: 'Paused' }), lobby('l1')],
      'login',
      SURVIVAL,
      'wake survival-1 resume',
    ],
    [
      'Stopped with a long start: start and disconnect',
      [survival({ status: 'Stopped', address: null, expectedStartMs: 60_000 })],
      'login',
      SURVIVAL,
      `start survival-1 start: ${seconds(60)}`,
    ],
    [
      'Stopped with an unknown start time: start and disconnect',
      [survival({ status: 'Stopped', address: null })],
      'login',
      SURVIVAL,
      `start survival-1 start: ${seconds(30)}`,
    ],
    [
      'Stopped with a start that fits the hold: start and hold',
      [survival({ status: 'Stopped', address: null, expectedStartMs: 15_000 })],
      'login',
      SURVIVAL,
      'wake survival-1 start',
    ],
    ['Starting, unknown remaining time: wait in the hold', [survival({ status: 'Starting' })], 'login', SURVIVAL, 'wake survival-1 wait'],
    [
      'Starting, too long for the hold: disconnect with the time',
      [survival({ status: 'Starting', expectedStartMs: 45_500 })],
      'login',
      SURVIVAL,
      `start survival-1 none: ${seconds(46)}`,
    ],
    [
      'Running without an address is not routable',
      [survival({ address: null }), lobby('l1', { status: 'Stale' })],
      'login',
      SURVIVAL,
      `refuse: ${DEFAULT_MESSAGES.noBackend}`,
    ],
    [
      'forced host: survival closed and its lobby group empty: the lobby is joined (spawned from zero)',
      [survival({ maintenance: true })],
      'login',
      SURVIVAL,
      'join lobby as lobby',
    ],
    ['status: Paused answers asleep locally', [survival({ status: 'Paused' })], 'status', SURVIVAL, 'status Paused'],
    ['status: Stopped answers locally', [survival({ status: 'Stopped' })], 'status', SURVIVAL, 'status Stopped'],
    ['status: Starting answers locally', [survival({ status: 'Starting' })], 'status', SURVIVAL, 'status Starting'],
    ['status: a full Running backend is still proxied', [survival({ full: true })], 'status', SURVIVAL, 'connect survival@10.0.2.1:25565'],
    [
      'full everywhere: the full message',
      [survival({ full: true }), lobby('l1', { full: true })],
      'login',
      SURVIVAL,
      `refuse: ${DEFAULT_MESSAGES.full}`,
    ],
    [
      'maintenance everywhere: the maintenance message',
      [survival({ maintenance: true }), lobby('l1', { maintenance: true })],
      'login',
      SURVIVAL,
      `refuse: ${DEFAULT_MESSAGES.maintenance}`,
    ],
  ])('%s', (_name, backends, intent, serverAddress, expected) => {
    const registry = RegistryState.from({ revision: 1, backends });
    expect(summary(planRoute({ intent, serverAddress }, ROUTING, registry, OPTS))).toBe(expected);
  });

  const FALLBACK = parseRouterToml(`
try = ["events", "lobby"]
[servers]
lobby = "group:lobby"
events = "group:events"
s1 = "instance:survival"
[forced-hosts]
"s1.example.com" = ["s1"]
[wake]
fallback = "lobby"
`).routing;
  const ev = (id: string, patch: Partial<RegistryBackend> = {}): RegistryBackend =>
    backend(id, { groupId: 'events', address: `10.0.4.${id.slice(-1)}:25565`, ...patch });
  const named = (patch: Partial<RegistryBackend>): RegistryBackend =>
    backend('inst-7f3a', { name: 'survival', groupId: 'survival', address: '10.0.5.1:25565', ...patch });

  it.each<[string, RegistryBackend[], RouteRequest['intent'], string, string]>([
    ['instance:<name> resolves the instance name as well as the id', [named({})], 'login', 's1.example.com', 'connect s1@10.0.5.1:25565'],
    [
      'a group with only sleeping members is joined (the orchestrator picks), with the fallback for a long hold',
      [ev('e1', { status: 'Paused' }), lobby('l1')],
      'login',
      'x',
      'join events as events else lobby@10.0.1.1:25565',
    ],
    [
      'a group with a Running member routes to it without a join',
      [ev('e1'), ev('e2', { status: 'Paused' })],
      'login',
      'x',
      'connect events@10.0.4.1:25565',
    ],
    ['Draining members take no new joins', [ev('e1', { status: 'Draining' }), lobby('l1')], 'login', 'x', 'connect lobby@10.0.1.1:25565'],
    [
      'an empty group is joined, with the fallback for a long hold (spawn from zero)',
      [lobby('l1')],
      'login',
      'x',
      'join events as events else lobby@10.0.1.1:25565',
    ],
    ['status: a Draining member is still proxied', [ev('e1', { status: 'Draining' })], 'status', 'x', 'connect events@10.0.4.1:25565'],
    ['status: a sleeping group answers asleep locally', [ev('e1', { status: 'Paused' })], 'status', 'x', 'status Paused'],
    [
      'Paused instance: wake, and the fallback if the hold ends',
      [named({ status: 'Paused' }), lobby('l1')],
      'login',
      's1.example.com',
      'wake inst-7f3a resume else lobby@10.0.1.1:25565',
    ],
    [
      'Stopped with a long start and a fallback: start it and park the player now',
      [named({ status: 'Stopped', address: null, expectedStartMs: 90_000 }), lobby('l1')],
      'login',
      's1.example.com',
      'fallback inst-7f3a start: lobby@10.0.1.1:25565',
    ],
    [
      'Starting too long with a fallback: park without asking again',
      [named({ status: 'Starting', expectedStartMs: 90_000 }), lobby('l1')],
      'login',
      's1.example.com',
      'fallback inst-7f3a none: lobby@10.0.1.1:25565',
    ],
    [
      'a fallback with nothing Running is no fallback: say when to rejoin',
      [named({ status: 'Stopped', address: null, expectedStartMs: 90_000 }), lobby('l1', { status: 'Paused' })],
      'login',
      's1.example.com',
      `start inst-7f3a start: ${seconds(90)}`,
    ],
  ])('%s', (_name, backends, intent, serverAddress, expected) => {
    const registry = RegistryState.from({ revision: 1, backends });
    expect(summary(planRoute({ intent, serverAddress }, FALLBACK, registry, OPTS))).toBe(expected);
  });

  it('names every [servers] entry the registry does not know', () => {
    const registry = RegistryState.from({ revision: 1, backends: [named({}), lobby('l1')] });
    const routing = parseRouterToml(
      '[servers]\nlobby = "group:lobby"\na = "instance:survival"\nb = "instance:s1"\nc = "group:events"\nd = "10.0.0.1:1"',
    ).routing;
    expect(unknownTargets(routing, registry)).toEqual([
      'servers.b: "instance:s1" matches no instance id or name in the registry',
      'servers.c: "group:events" has no instances in the registry (a login asks the orchestrator to spawn one; a group it does not know is refused as no-backend)',
    ]);
  });

  it('an empty group before the first snapshot is no join: the player hears "unreachable"', () => {
    const routing = parseRouterToml('try = ["events"]\n[servers]\nevents = "group:events"').routing;
    const unsynced = new RegistryState();
    expect(summary(planRoute({ intent: 'login', serverAddress: 'x' }, routing, unsynced, OPTS))).toBe(
      `refuse: ${DEFAULT_MESSAGES.unreachable}`,
    );
    expect(summary(planRoute({ intent: 'status', serverAddress: 'x' }, routing, unsynced, OPTS))).toBe('status Unreachable');
  });

  it('never adds a registry-only backend to an initial join unless accept_registry_backends is set', () => {
    const routing = parseRouterToml('try = []\n[servers]\nx = "10.0.0.1:1"').routing;
    const registry = RegistryState.from({ revision: 1, backends: [backend('event-1', { address: '10.0.3.1:25565' })] });
    expect(summary(planRoute({ intent: 'login', serverAddress: 'event-1.example.com' }, routing, registry, OPTS))).toBe(
      `refuse: ${DEFAULT_MESSAGES.noBackend}`,
    );
    const open = { ...routing, acceptRegistryBackends: true };
    expect(summary(planRoute({ intent: 'login', serverAddress: 'event-1.example.com' }, open, registry, OPTS))).toBe(
      'connect event-1@10.0.3.1:25565',
    );
    expect(summary(planRoute({ intent: 'login', serverAddress: 'other.example.com' }, open, registry, OPTS))).toBe(
      `refuse: ${DEFAULT_MESSAGES.noBackend}`,
    );
  });

  it('before any snapshot, registry entries are unknown: status Unreachable, logins get the unreachable message', () => {
    const routing = parseRouterToml('try = ["s"]\n[servers]\ns = "instance:survival-1"').routing;
    const empty = new RegistryState();
    expect(summary(planRoute({ intent: 'status', serverAddress: 'x' }, routing, empty, OPTS))).toBe('status Unreachable');
    expect(summary(planRoute({ intent: 'login', serverAddress: 'x' }, routing, empty, OPTS))).toBe(
      `refuse: ${DEFAULT_MESSAGES.unreachable}`,
    );
  });

  it('registry targets carry their instance id and read a changed address at dial time', () => {
    const registry = RegistryState.from({ revision: 1, backends: [survival({ status: 'Stopped', address: null, expectedStartMs: 1000 })] });
    const plan = planRoute({ intent: 'login', serverAddress: SURVIVAL }, ROUTING, registry, OPTS);
    if (plan.kind !== 'wake') throw new Error(`expected wake, got ${plan.kind}`);
    expect(instanceIdOf(plan.target)).toBe('survival-1');
    registry.applyUpsert({ revision: 2, backend: survival({ address: '10.0.2.7:30001' }) });
    expect([plan.target.host, plan.target.port]).toEqual(['10.0.2.7', 30001]);
  });
});

describe('RegistryResolver edges', () => {
  const logger = createLogger('resolver-test', 'silent');
  const registry = RegistryState.from({
    revision: 1,
    backends: [lobby('l1'), backend('event-1', { address: '10.0.3.1:25565' }), survival({ status: 'Paused' })],
  });
  const player = { name: 'Alex', uuid: '00000000-0000-0000-0000-000000000001' };
  const summarize = summary;

  it('a claimed transfer goes to its target, even one only the registry knows; no claim → the pool', async () => {
    const pending = new Map([['Alex', { transferId: 't1', instanceId: 'event-1', address: '10.0.3.1:25565' }]]);
    const claims: string[] = [];
    const resolver = new RegistryResolver({
      routing: ROUTING,
      registry,
      messages: DEFAULT_MESSAGES,
      holdTimeoutMs: 20_000,
      logger,
      transfers: {
        claimTransfer: async (p) => {
          claims.push(p.name);
          const claim = pending.get(p.name);
          pending.delete(p.name); // consumed
          return claim;
        },
      },
    });
    const base = { serverAddress: 'x', protocolVersion: 765, clientAddress: '127.0.0.1' };
    expect(summarize(await resolver.resolve({ ...base, intent: 'transfer', player }))).toBe('connect event-1@10.0.3.1:25565');
    expect(summarize(await resolver.resolve({ ...base, intent: 'login', player }))).toBe(
      'connect lobby@10.0.1.1:25565,static@10.0.0.9:25565',
    );
    expect(summarize(await resolver.resolve({ ...base, intent: 'status' }))).toBe('connect lobby@10.0.1.1:25565,static@10.0.0.9:25565');
    expect(claims).toEqual(['Alex', 'Alex']); // status never claims
  });

  it('skips the claim while the registry stream is down, and survives a failing claim', async () => {
    const down = RegistryState.from({ revision: 1, backends: [lobby('l1')] }, false);
    let calls = 0;
    const resolver = new RegistryResolver({
      routing: ROUTING,
      registry: down,
      messages: DEFAULT_MESSAGES,
      holdTimeoutMs: 20_000,
      logger,
      transfers: { claimTransfer: async () => (calls++, undefined) },
    });
    await resolver.resolve({ serverAddress: 'x', protocolVersion: 765, clientAddress: '::1', intent: 'login', player });
    expect(calls).toBe(0);
    const failing = new RegistryResolver({
      routing: ROUTING,
      registry,
      messages: DEFAULT_MESSAGES,
      holdTimeoutMs: 20_000,
      logger,
      transfers: { claimTransfer: async () => Promise.reject(new AppError('UPSTREAM_FAILED', 'down', { retryable: true })) },
    });
    expect(
      summarize(await failing.resolve({ serverAddress: 'x', protocolVersion: 765, clientAddress: '::1', intent: 'login', player })),
    ).toMatch(/^connect lobby@/);
  });

  it('the wake coordinator asks once per instance, and turns a refusal into a WakeFailed naming the reason', async () => {
    const asked: string[] = [];
    let answer: () => Promise<{ commandId: string | null }> = async () => ({ commandId: 'c1' });
    const api = {
      requestWake: async (id: string, action: string) => (asked.push(`${action} ${id}`), answer()),
      joinGroup: async () =>
        Promise.reject(
          new AppError('CONFLICT', 'no room', {
            details: { upstreamCode: 'CAPACITY_EXHAUSTED', playerMessage: 'lobby is full (2 of 2 worlds).' },
          }),
        ),
      requestTransfer: async () => undefined,
    };
    const wakes = new OrchestratorWakeCoordinator({ api, registry, holdTimeoutMs: 20_000, logger });
    await Promise.all([wakes.request('survival-1', 'resume'), wakes.request('survival-1', 'resume')]);
    expect(asked).toEqual(['resume survival-1']); // shared while it wakes
    answer = () => Promise.reject(new AppError('FORBIDDEN', 'waking private-1 is not allowed for guests'));
    await expect(wakes.request('private-1', 'resume')).rejects.toMatchObject({
      reason: 'refused',
      message: 'waking private-1 is not allowed for guests',
    });
    answer = () => Promise.reject(new AppError('UPSTREAM_FAILED', 'ECONNREFUSED', { retryable: true }));
    await expect(wakes.request('private-1', 'resume')).rejects.toMatchObject({ reason: 'unreachable' });
    expect(asked).toEqual(['resume survival-1', 'resume private-1', 'resume private-1']); // refusals are not cached
    const err = await wakes.joinGroup('lobby', 'lobby', player, new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WakeFailed);
    expect(err).toMatchObject({
      reason: 'capacity',
      upstream: { code: 'CAPACITY_EXHAUSTED', playerMessage: 'lobby is full (2 of 2 worlds).' },
    });
    wakes.close();
  });

  it('a held wake resolves when the registry shows Running, and ends with the hold', async () => {
    const state = RegistryState.from({ revision: 1, backends: [survival({ status: 'Paused' })] });
    const api = {
      requestWake: async () => ({ commandId: 'c' }),
      joinGroup: async () => ({ instanceId: 'survival-1', action: 'wake' as const, commandId: 'c' }),
      requestTransfer: async () => undefined,
    };
    const wakes = new OrchestratorWakeCoordinator({ api, registry: state, holdTimeoutMs: 200, logger });
    const woke = wakes.wake('survival-1', 'resume', new AbortController().signal);
    state.applyUpsert({ revision: 2, backend: survival({ status: 'Running' }) });
    await woke;
    state.applyUpsert({ revision: 3, backend: survival({ status: 'Paused' }) });
    await expect(wakes.wake('survival-1', null, new AbortController().signal)).rejects.toMatchObject({ reason: 'timeout' });
    const joined = wakes.joinGroup('survival', 'surv', player, new AbortController().signal);
    state.applyUpsert({ revision: 4, backend: survival({ status: 'Running', address: '10.0.2.9:25570' }) });
    const target = await joined;
    expect([target.name, target.instanceId, target.host, target.port]).toEqual(['surv', 'survival-1', '10.0.2.9', 25570]);
    wakes.close();
  });
});

describe('router configuration for the orchestrator', () => {
  it('takes ENDERCLOUD_ROUTER_ID, defaults it to a hostname made valid, and reads the new messages', async () => {
    const { loadRouterConfig } = await import('../../src/router/config.js');
    const read = (): string => '[messages]\nstarting = "back in {seconds}s"\nwake-refused = "No."';
    const env = { ENDERCLOUD_ROUTER_CONFIG: '/r.toml', ENDERCLOUD_ORCHESTRATOR_URL: 'http://orch:8080/' };
    expect(loadRouterConfig({ ...env, ENDERCLOUD_ROUTER_ID: 'edge-1' }, read).routerId).toBe('edge-1');
    expect(loadRouterConfig(env, read, () => 'router_host#2').routerId).toBe('router_host-2');
    expect(() => loadRouterConfig({ ...env, ENDERCLOUD_ROUTER_ID: '../x' }, read)).toThrow(/^ENDERCLOUD_ROUTER_ID:/);
    const c = loadRouterConfig(env, read);
    expect(c.orchestratorUrl).toBe('http://orch:8080');
    expect(c.messages).toMatchObject({ starting: 'back in {seconds}s', wakeRefused: 'No.', full: DEFAULT_MESSAGES.full });
  });
});

describe('status never wakes or starts anything', () => {
  const t = { name: 's', host: '10.0.0.1', port: 1 };
  it.each<[RoutePlan, string]>([
    [{ kind: 'status', state: 'Paused' }, 'Paused'],
    [{ kind: 'wake', instanceId: 'i', action: 'resume', target: t }, 'Paused'],
    [{ kind: 'wake', instanceId: 'i', action: 'start', target: t }, 'Stopped'],
    [{ kind: 'hold', instanceId: 'i', target: t }, 'Starting'],
    [{ kind: 'join-group', groupId: 'g', name: 'g' }, 'Paused'],
    [{ kind: 'fallback', instanceId: 'i', action: 'start', candidates: [t] }, 'Stopped'],
    [{ kind: 'fallback', instanceId: 'i', action: null, candidates: [t] }, 'Starting'],
    [{ kind: 'refuse', reason: 'starting', message: 'm', start: { instanceId: 'i', action: 'start' } }, 'Stopped'],
    [{ kind: 'refuse', reason: 'unreachable', message: 'm' }, 'Unreachable'],
    [{ kind: 'refuse', reason: 'no_backend', message: 'm' }, 'NoBackend'],
    [{ kind: 'route', candidates: [t] }, 'Unreachable'],
  ])('%j answers locally as %s', async (plan, state) => {
    const { localStateForPlan } = await import('../../src/router/local-status.js');
    expect(localStateForPlan(plan)).toBe(state);
  });
});
