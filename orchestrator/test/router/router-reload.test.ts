// Hot reload with real minecraft-protocol clients connected across it, the
// per-IP limits that fit real networks (pre-login cap vs max_players_per_ip),
// the one-line-per-login outcome log with its rate bound, and per-target metrics.
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import mc from 'minecraft-protocol';
import { parseRouterToml, type RouterConfig } from '../../src/router/config.js';
import { OutcomeLog, TokenBucket } from '../../src/router/outcome-log.js';
import { createReloader } from '../../src/router/reload.js';
import { Router } from '../../src/router/router.js';
import { buildRouterParts } from '../../src/router/router-parts.js';
import { RouterMetrics } from '../../src/router/metrics.js';
import { closeAll, mcLogin, recordingLogger, startMcBackend, startRouter, VERSION, waitUntil } from './harness.js';

afterEach(closeAll);

/** A client that stays connected; `ended` flips if the router ever drops it. */
function stayingClient(port: number, username: string): { ended: () => boolean; end: () => void } {
  const client = mc.createClient({ host: '127.0.0.1', port, username, version: VERSION, auth: 'offline', hideErrors: true });
  let ended = false;
  client.on('end', () => {
    ended = true;
  });
  client.on('error', () => undefined);
  return { ended: () => ended, end: () => client.end() };
}

describe('hot reload', () => {
  it('applies a new config to new connections, never drops established sessions, and refuses a bad file with one line', async () => {
    const a = await startMcBackend('A');
    const b = await startMcBackend('B');
    const toml = (name: string, port: number): string =>
      `try = ["${name}"]\n[servers]\n${name} = "127.0.0.1:${port}"\n[limits]\nlogin_ratelimit = 0`;
    let file = toml('a', a.port);
    const config: RouterConfig = { ...parseRouterToml(file), configPath: '/router.toml', routerId: 'reload-test' };
    const logger = recordingLogger();
    const metrics = new RouterMetrics();
    const parts = buildRouterParts(config, logger, metrics);
    const router = new Router({ config, resolver: parts.resolver, logger, metrics });
    const { port } = await router.listen(0, '127.0.0.1');
    const reloader = createReloader(config, router, parts, logger, () => file);
    try {
      const stayers = [stayingClient(port, 'Stay1'), stayingClient(port, 'Stay2')];
      await waitUntil(() => a.logins.length === 2, 5000, 'both players on A');

      file = toml('b', b.port);
      expect(reloader.reload('test')).toBe(true);
      expect((await mcLogin(port, 'Fresh', { waitForBackend: b })).ended).toBe('backend-login');
      expect(a.logins.map((l) => l.username).sort()).toEqual(['Stay1', 'Stay2']);

      file = '[limits]\nwake_hold_timeout = "45s"';
      expect(reloader.reload('test')).toBe(false);
      const refused = logger.lines.filter((l) => l.msg.startsWith('config reload refused'));
      expect(refused).toHaveLength(1);
      expect(refused[0]!.msg).toMatch(/limits\.wake_hold_timeout: must be between 1000 and 29000 ms/);
      expect((await mcLogin(port, 'Fresh2', { waitForBackend: b })).ended).toBe('backend-login');

      await new Promise((r) => setTimeout(r, 300));
      expect(stayers.map((s) => s.ended())).toEqual([false, false]);
      expect(router.activeConnections).toBeGreaterThanOrEqual(2);
      stayers.forEach((s) => s.end());
    } finally {
      await router.close();
      await parts.close();
    }
  });
});

describe('per-IP limits', () => {
  it('caps connections that have not logged in, not logged-in players (one address: a school, a LAN party)', async () => {
    const a = await startMcBackend('A');
    const r = await startRouter(
      `try = ["a"]\n[servers]\na = "127.0.0.1:${a.port}"\n[limits]\nmax_connections_per_ip = 2\nlogin_ratelimit = 0`,
    );
    const players = [1, 2, 3, 4].map((n) => stayingClient(r.port, `Pupil${n}`));
    await waitUntil(() => a.logins.length === 4, 8000, 'four players from one address');
    // Two idle (pre-login) sockets still fill the pre-login slots: a third is refused.
    const idle = [connect({ port: r.port, host: '127.0.0.1' }), connect({ port: r.port, host: '127.0.0.1' })];
    idle.forEach((s) => s.on('error', () => undefined));
    await waitUntil(() => r.router.activeConnections === 6, 3000, 'two idle sockets');
    const third = connect({ port: r.port, host: '127.0.0.1' });
    third.on('error', () => undefined);
    await new Promise<void>((res) => third.once('close', () => res()));
    expect(await r.router.metrics.value(r.router.metrics.rateLimited, { limit: 'connections' })).toBe(1);
    idle.forEach((s) => s.destroy());
    expect(players.map((p) => p.ended())).toEqual([false, false, false, false]);
    players.forEach((p) => p.end());
  });

  it('max_players_per_ip, when set, refuses the extra player with its message', async () => {
    const a = await startMcBackend('A');
    const r = await startRouter(
      `try = ["a"]\n[servers]\na = "127.0.0.1:${a.port}"\n[limits]\nmax_players_per_ip = 1\nlogin_ratelimit = 0\n[messages]\nplayers-per-ip = "One per house"`,
    );
    const first = stayingClient(r.port, 'First');
    await waitUntil(() => a.logins.length === 1, 5000, 'first player');
    const second = await mcLogin(r.port, 'Second');
    expect(JSON.parse(second.disconnectReason!)).toEqual({ text: 'One per house' });
    expect(await r.router.metrics.value(r.router.metrics.rateLimited, { limit: 'players' })).toBe(1);
    first.end();
    await waitUntil(() => r.router.activeConnections === 0, 3000, 'first gone');
    expect((await mcLogin(r.port, 'Third', { waitForBackend: a })).ended).toBe('backend-login');
  });
});

describe('outcome log and per-target metrics', () => {
  it('writes one info line per login with player, client, address, target, outcome and duration; per-target counters move', async () => {
    const a = await startMcBackend('A');
    const logger = recordingLogger('info');
    const r = await startRouter(`try = ["lobby"]\n[servers]\nlobby = "127.0.0.1:${a.port}"\n[limits]\nlogin_ratelimit = 0`, { logger });
    expect((await mcLogin(r.port, 'Logged', { fakeHost: 'Play.Example.com', waitForBackend: a })).ended).toBe('backend-login');
    const refusedRouter = await startRouter('try = []', { logger });
    await mcLogin(refusedRouter.port, 'Nobody');
    await waitUntil(() => r.router.activeConnections === 0, 3000, 'closed');
    const lines = logger.lines.filter((l) => l.msg.startsWith('login '));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'login routed',
      player: 'Logged',
      client: '127.0.0.1',
      address: 'play.example.com',
      target: 'lobby',
      outcome: 'routed',
    });
    expect(lines[0]!.durationMs).toEqual(expect.any(Number));
    expect(lines[1]).toMatchObject({ msg: 'login refused', player: 'Nobody', target: null, outcome: 'refused', reason: 'no_backend' });
    const m = r.router.metrics;
    expect(await m.value(m.targetConnections, { target: 'lobby' })).toBe(1);
    expect(await m.value(m.targetPlayers, { target: 'lobby' })).toBe(0);
    expect(await m.value(m.targetBytes, { target: 'lobby', direction: 'in' })).toBeGreaterThan(0);
    expect(await m.value(m.targetBytes, { target: 'lobby', direction: 'out' })).toBeGreaterThan(0);
  });

  it('takes time from the injected clock: the duration and the login rate limit follow it, not the wall clock', async () => {
    const a = await startMcBackend('A');
    const logger = recordingLogger('info');
    let now = 1_000_000;
    const r = await startRouter(`try = ["a"]\n[servers]\na = "127.0.0.1:${a.port}"\n[limits]\nlogin_ratelimit = 3000`, {
      logger,
      clock: { now: () => now },
    });
    expect((await mcLogin(r.port, 'Clocked', { waitForBackend: a })).ended).toBe('backend-login');
    expect(logger.lines.find((l) => l.msg === 'login routed')?.durationMs).toBe(0);
    expect(JSON.parse((await mcLogin(r.port, 'TooSoon')).disconnectReason!).text).toMatch(/too fast/);
    now += 3000;
    expect((await mcLogin(r.port, 'Later', { waitForBackend: a })).ended).toBe('backend-login');
  });

  it('bounds the line rate with a token bucket and reports how many lines it suppressed', () => {
    let now = 0;
    const clock = { now: () => now };
    const bucket = new TokenBucket(2, 1, clock);
    expect([bucket.take(), bucket.take(), bucket.take()]).toEqual([true, true, false]);
    now += 1000;
    expect([bucket.take(), bucket.take()]).toEqual([true, false]);

    const logger = recordingLogger('info');
    const log = new OutcomeLog(logger, clock, { burst: 3, perSecond: 1 });
    const line = { player: 'p', client: '1.2.3.4', address: 'x', target: null, outcome: 'refused' as const, durationMs: 1 };
    for (let k = 0; k < 1000; k++) log.log(line);
    expect(logger.lines).toHaveLength(3);
    expect(log.suppressedCount).toBe(997);
    now += 1000;
    log.log(line);
    expect(logger.lines.slice(3).map((l) => [l.level, l.msg, l.suppressed])).toEqual([
      [40, 'connection log lines suppressed by the rate bound', 997],
      [30, 'login refused', undefined],
    ]);
  });
});
