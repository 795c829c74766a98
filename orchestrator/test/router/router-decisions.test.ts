// Router: PROXY protocol v2 in both directions, and the route plans a
// registry-backed resolver returns (wake, hold, join, fallback, refuse), with a
// fake wake coordinator that brings a real minecraft-protocol backend up.
import { afterEach, describe, expect, it } from 'vitest';
import mc from 'minecraft-protocol';
import { parseProxyV2Header, writeProxyV2Header } from '../../src/protocol/proxy-protocol.js';
import { writeHandshake, writeLoginStart } from '../../src/protocol/packets.js';
import { WakeFailed, type BackendResolver, type RoutePlan } from '../../src/router/resolver.js';
import {
  closeAll,
  deadPort,
  fakeWakes,
  mcLogin,
  PROTOCOL,
  rawExchange,
  startMcBackend,
  startRawBackend,
  startRouter,
  VERSION,
  waitUntil,
  type McBackend,
} from './harness.js';

afterEach(closeAll);

const login = Buffer.concat([
  writeHandshake({ protocolVersion: PROTOCOL, serverAddress: 'play.example.com', serverPort: 25565, nextState: 2 }),
  writeLoginStart({ name: 'Proxied', uuid: '11111111-2222-4333-8444-555555555555' }, PROTOCOL),
]);

describe('PROXY protocol v2', () => {
  it('sends a v2 header with the player address to the backend, then the exact bytes the client sent', async () => {
    const raw = await startRawBackend();
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${raw.port}"\n[proxy-protocol]\nsend_to_backends = true`);
    await rawExchange(r.port, [login], { timeoutMs: 300 }).catch(() => undefined);
    await waitUntil(() => raw.received().length >= 28 + login.length, 3000, 'bytes at the backend');
    const got = raw.received();
    const parsed = parseProxyV2Header(got)!;
    expect(parsed.header).toMatchObject({
      command: 'proxy',
      sourceAddress: '127.0.0.1',
      destinationAddress: '127.0.0.1',
      destinationPort: r.port,
    });
    expect(got.subarray(parsed.size).equals(login)).toBe(true);
  });

  it('accepts PROXY v2 from a trusted CIDR and forwards the real player address', async () => {
    const raw = await startRawBackend();
    const r = await startRouter(
      `try = ["a"]\n[servers]\na = "127.0.0.1:${raw.port}"\n[proxy-protocol]\nsend_to_backends = true\ntrusted_cidrs = ["127.0.0.0/8"]`,
    );
    const inbound = writeProxyV2Header({
      sourceAddress: '203.0.113.9',
      sourcePort: 4444,
      destinationAddress: '10.0.0.1',
      destinationPort: 25565,
    });
    await rawExchange(r.port, [Buffer.concat([inbound, login])], { timeoutMs: 300 });
    await waitUntil(() => raw.received().length >= 28 + login.length, 3000, 'bytes at the backend');
    const parsed = parseProxyV2Header(raw.received())!;
    expect(parsed.header).toMatchObject({ command: 'proxy', sourceAddress: '203.0.113.9', sourcePort: 4444 });
    expect(raw.received().subarray(parsed.size).equals(login)).toBe(true);
  });

  it('treats a PROXY header from an untrusted address as Minecraft bytes and drops it', async () => {
    const raw = await startRawBackend();
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${raw.port}"\n[proxy-protocol]\ntrusted_cidrs = ["10.99.0.0/16"]`);
    const inbound = writeProxyV2Header({
      sourceAddress: '203.0.113.9',
      sourcePort: 4444,
      destinationAddress: '10.0.0.1',
      destinationPort: 25565,
    });
    const res = await rawExchange(r.port, [Buffer.concat([inbound, login])]);
    expect(res.closed).toBe(true);
    expect(raw.connections).toBe(0);
    expect(await r.router.metrics.value(r.router.metrics.connectionsTotal, { outcome: 'malformed' })).toBe(1);
  });
});

/** A resolver returning a fixed plan per intent, and counting calls. */
function fixedResolver(login: RoutePlan, status: RoutePlan = login): BackendResolver & { calls: number } {
  const r = { calls: 0, resolve: (req: { intent: string }) => (r.calls++, req.intent === 'status' ? status : login) };
  return r;
}

describe('route plans', () => {
  it('wake: status answers "asleep" without waking; a login wakes the backend and completes', async () => {
    const port = await deadPort();
    let backend: McBackend | undefined;
    const wakes: string[] = [];
    const waker = fakeWakes({
      wake: async (id) => {
        wakes.push(id);
        await new Promise((r) => setTimeout(r, 300));
        backend = await startMcBackend('woken', port);
      },
    });
    const resolver = fixedResolver({
      kind: 'wake',
      instanceId: 'lobby-1',
      action: 'resume',
      target: { name: 'lobby', host: '127.0.0.1', port },
    });
    const r = await startRouter('[status]\nasleep = "Zzz — join to wake"', { resolver, waker, limits: { loginRatelimitMs: 0 } });

    const status = (await mc.ping({ host: '127.0.0.1', port: r.port, version: VERSION })) as {
      description: { text: string };
      version: { protocol: number };
    };
    expect(status.description.text).toBe('Zzz — join to wake');
    expect(status.version.protocol).toBe(PROTOCOL);
    expect(wakes).toEqual([]);

    const started = Date.now();
    const out = await mcLogin(r.port, 'Sleeper', { timeoutMs: 8000 });
    expect(backend?.logins.map((l) => l.username)).toEqual(['Sleeper']);
    expect(out.disconnectReason).toBeUndefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(wakes).toEqual(['lobby-1']);
    const m = r.router.metrics;
    expect(await m.value(m.wakes, { result: 'ok' })).toBe(1);
    expect((await m.wakeSeconds.get()).values.find((v) => v.metricName?.endsWith('_count'))?.value).toBe(1);
  });

  it('wake: the hold is bounded and the player gets the wake-timeout message', async () => {
    const port = await deadPort();
    let aborted = false;
    const waker = fakeWakes({
      wake: (_id, _action, signal) =>
        new Promise((_resolve, reject) => signal.addEventListener('abort', () => ((aborted = true), reject(new Error('aborted'))))),
    });
    const resolver = fixedResolver({ kind: 'wake', instanceId: 'stuck', action: 'resume', target: { name: 's', host: '127.0.0.1', port } });
    const r = await startRouter('[messages]\nwake-timeout = "Still waking"', {
      resolver,
      waker,
      limits: { loginRatelimitMs: 0, wakeHoldTimeoutMs: 500 },
    });
    const started = Date.now();
    const out = await mcLogin(r.port, 'Waiter');
    expect(Date.now() - started).toBeLessThan(3000);
    expect(JSON.parse(out.disconnectReason!)).toEqual({ text: 'Still waking' });
    expect(aborted).toBe(true);
    expect(await r.router.metrics.value(r.router.metrics.wakes, { result: 'timeout' })).toBe(1);
  });

  it('join-group answered after the hold ended: the player is parked on the fallback and still watched for the world the late answer names', async () => {
    const lobby = await startMcBackend('lobby');
    const waker = fakeWakes({
      // The orchestrator answers the join 600 ms after the 300 ms hold ended (a busy control plane).
      joinGroup: (_g, _n, _p, _signal, onInstance) =>
        new Promise((_resolve, reject) =>
          setTimeout(() => {
            onInstance?.('late-1');
            reject(new Error('hold already ended'));
          }, 900),
        ),
    });
    const resolver = fixedResolver({
      kind: 'join-group',
      groupId: 'events',
      name: 'events',
      fallback: [{ name: 'lobby', host: '127.0.0.1', port: lobby.port }],
    });
    const r = await startRouter('', { resolver, waker, limits: { loginRatelimitMs: 0, wakeHoldTimeoutMs: 300 } });
    const out = await mcLogin(r.port, 'Parked', { waitForBackend: lobby });
    expect(out.ended).toBe('backend-login');
    expect(waker.calls).toEqual(['join events Parked']);
    await waitUntil(() => waker.calls.includes('return Parked late-1'), 3000, 'the late answer is watched');
  });

  it('refuse with a start: requests the start and the client sees the message; status says stopped', async () => {
    const starts: string[] = [];
    const waker = fakeWakes({ request: async (id) => void starts.push(id) });
    const resolver = fixedResolver({
      kind: 'refuse',
      reason: 'starting',
      message: 'Starting — retry in 30 s',
      start: { instanceId: 'survival-1', action: 'start' },
    });
    const r = await startRouter('[status]\nstopped = "Stopped — join to start"', { resolver, waker, limits: { loginRatelimitMs: 0 } });
    const status = (await mc.ping({ host: '127.0.0.1', port: r.port, version: VERSION })) as { description: { text: string } };
    expect(status.description.text).toBe('Stopped — join to start');
    expect(starts).toEqual([]);
    const out = await mcLogin(r.port, 'Starter');
    expect(JSON.parse(out.disconnectReason!)).toEqual({ text: 'Starting — retry in 30 s' });
    expect(starts).toEqual(['survival-1']);
  });

  it('refuse: the client sees the refusal and status answers NoBackend', async () => {
    const resolver = fixedResolver({ kind: 'refuse', reason: 'no_backend', message: 'Not on the list' });
    const r = await startRouter('[status]\nno-backend = "Nothing here"', { resolver, limits: { loginRatelimitMs: 0 } });
    const status = (await mc.ping({ host: '127.0.0.1', port: r.port, version: VERSION })) as { description: { text: string } };
    expect(status.description.text).toBe('Nothing here');
    expect(JSON.parse((await mcLogin(r.port, 'Nobody')).disconnectReason!)).toEqual({ text: 'Not on the list' });
  });

  it('wake refused by the orchestrator: the player sees wake-refused and the reason; unreachable: the unreachable message', async () => {
    const target = { name: 's', host: '127.0.0.1', port: await deadPort() };
    let failure = new WakeFailed('refused', 'guests may not wake s');
    const waker = fakeWakes({ wake: () => Promise.reject(failure) });
    const resolver = fixedResolver({ kind: 'wake', instanceId: 's-1', action: 'resume', target });
    const r = await startRouter('[messages]\nwake-refused = "No."\nunreachable = "Down."', {
      resolver,
      waker,
      limits: { loginRatelimitMs: 0 },
    });
    expect(JSON.parse((await mcLogin(r.port, 'Guest')).disconnectReason!)).toEqual({ text: 'No. guests may not wake s' });
    failure = new WakeFailed('unreachable', 'ECONNREFUSED');
    expect(JSON.parse((await mcLogin(r.port, 'Guest2')).disconnectReason!)).toEqual({ text: 'Down.' });
    expect(waker.calls).toEqual(['wake s-1 resume', 'wake s-1 resume']);
  });
});
