// The edge end to end on the real Docker engine: orchestrator + in-process agent
// + routers (assembled as `npm run router` does) + test-server containers, with
// real minecraft-protocol clients. Guards: ping and login through the router; a
// registry-only backend is not reachable by an initial join but is after a
// transfer; local status (with pong) while Paused, Stopped and Starting; a login
// wakes a paused instance and completes; a login to a stopped instance gets the
// starting message and the instance starts, or is held through the start when
// its measured start fits the hold; a wake the orchestrator's policy refuses is
// shown to the player; an RCON transfer between two test servers and an
// evacuate, checked on the target's own status; the orchestrator restarted
// under a connected player.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLoginRefused, loginBot, pingStatus, type Bot } from '../support/mc-server.js';
import { startStack, until, type Stack, type StackRouter } from '../support/router-stack.js';

let stack: Stack;
let lobby: { id: string; endpoint: { host: string; port: number } | null };
let event: { id: string; endpoint: { host: string; port: number } | null };
let main: StackRouter;
const bots: Bot[] = [];

const ASLEEP = 'zzz asleep';
const STOPPED = 'off: join to start';
const STARTING = 'starting up';
const statusToml = `[status]\nasleep = "${ASLEEP}"\nstopped = "${STOPPED}"\nstarting = "${STARTING}"\n`;

async function bot(port: number, name: string, opts: Parameters<typeof loginBot>[3] = {}): Promise<Bot> {
  const b = await loginBot('127.0.0.1', port, name, { timeoutMs: 25_000, ...opts });
  bots.push(b);
  return b;
}

async function playersOn(instanceId: string): Promise<string[]> {
  const r = await stack.api<{ players: { name: string }[] }>('GET', `/api/v1/instances/${instanceId}/players`);
  return r.body.players.map((p) => p.name);
}

const onInstance = (instanceId: string, player: string, timeoutMs = 10_000) =>
  until(`${player} reported on ${instanceId}`, async () => (await playersOn(instanceId)).includes(player), timeoutMs, 100);

/** The player count an instance's own server reports in its status answer (pinged directly). */
const onlineOn = (instance: typeof lobby, count: number) =>
  until(
    `${count} player(s) on ${instance.id} by its own status`,
    async () => (await pingStatus(instance.endpoint!.host, instance.endpoint!.port, 3000)).online === count,
    10_000,
    100,
  );

beforeAll(async () => {
  stack = await startStack('e2e-rtr');
  lobby = await stack.createInstance(`${stack.run}-lobby`);
  event = await stack.createInstance(`${stack.run}-event`);
  // `event` exists only in the registry: it is in no [servers] entry.
  main = await stack.startRouter(`try = ["lobby"]\n[servers]\nlobby = "instance:${lobby.id}"\n${statusToml}`, { port: stack.routerPort });
});

afterAll(async () => {
  for (const b of bots) await b.end().catch(() => undefined);
  await stack?.close();
});

describe('router end to end (real containers)', () => {
  it('answers a ping and logs a player in through the router to the test server in its container', async () => {
    const status = await pingStatus('127.0.0.1', main.port, 5000);
    expect(status.motd).toBe('An EnderCloud test server'); // the backend's own answer, proxied
    const b = await bot(main.port, 'Pinger');
    await onInstance(lobby.id, 'Pinger');
    await b.end();
  });

  it('a registry-only backend is not reached by an initial join, but is after a transfer', async () => {
    const initial = await bot(main.port, 'Seeker', { version: undefined });
    await onInstance(lobby.id, 'Seeker');
    expect(await playersOn(event.id)).not.toContain('Seeker');
    await initial.end();
    const res = await stack.api<{ transfer: { status: string } }>('POST', '/api/v1/transfers', {
      player: 'Seeker',
      target: { instance: event.id },
    });
    expect(res.status).toBe(201);
    const moved = await bot(main.port, 'Seeker', { intent: 'transfer' });
    await onInstance(event.id, 'Seeker');
    await moved.end();
  });

  it('status is answered locally with a pong while Paused, Stopped and Starting; a login wakes a paused instance and completes', async () => {
    const sleepy = await stack.createInstance(`${stack.run}-sleepy`);
    const r = await stack.startRouter(`try = ["s"]\n[servers]\ns = "instance:${sleepy.id}"\n${statusToml}`);
    expect((await stack.api('POST', `/api/v1/instances/${sleepy.id}/pause`)).status).toBe(202);
    await stack.waitForState(sleepy.id, 'paused');
    await until('router sees Paused', () => r.parts.registry!.get(sleepy.id)?.status === 'Paused', 5000);
    expect((await pingStatus('127.0.0.1', r.port, 5000)).motd).toBe(ASLEEP); // pingStatus resolves only after the pong
    expect((await stack.api<{ state: string }>('GET', `/api/v1/instances/${sleepy.id}`)).body.state).toBe('paused'); // a ping never wakes

    const started = Date.now();
    const woken = await bot(r.port, 'Waker');
    expect(Date.now() - started).toBeLessThan(20_000);
    expect((await stack.api<{ state: string }>('GET', `/api/v1/instances/${sleepy.id}`)).body.state).toBe('online');
    await onInstance(sleepy.id, 'Waker');
    await woken.end();
  });

  it('a login to a stopped instance gets the starting message; the instance starts and status says Starting meanwhile', async () => {
    const cold = await stack.createInstance(`${stack.run}-cold`, { variant: 'slow', start: false });
    const r = await stack.startRouter(`try = ["c"]\n[servers]\nc = "instance:${cold.id}"\n${statusToml}`);
    await until('router sees Stopped', () => r.parts.registry!.get(cold.id)?.status === 'Stopped', 5000);
    expect((await pingStatus('127.0.0.1', r.port, 5000)).motd).toBe(STOPPED);
    const refused = await expectLoginRefused('127.0.0.1', r.port, 'Early', { timeoutMs: 10_000 });
    expect(refused).toMatch(/starting/i);
    await until('router sees Starting', () => r.parts.registry!.get(cold.id)?.status === 'Starting', 10_000);
    expect((await pingStatus('127.0.0.1', r.port, 5000)).motd).toBe(STARTING);
    await stack.waitForState(cold.id, 'online', 30_000);
    await until('router sees Running', () => r.parts.registry!.get(cold.id)?.status === 'Running', 5000);
    const b = await bot(r.port, 'Early');
    await onInstance(cold.id, 'Early');
    await b.end();

    // Stopped again, now with a measured start that fits the 20 s hold: the login is held through the start.
    expect((await stack.api('POST', `/api/v1/instances/${cold.id}/stop`)).status).toBe(202);
    await stack.waitForState(cold.id, 'stopped', 20_000);
    const stopped = await until(
      'router sees Stopped with a start estimate',
      () => {
        const b2 = r.parts.registry!.get(cold.id);
        return b2?.status === 'Stopped' && b2.expectedStartMs !== null ? b2 : undefined;
      },
      5000,
    );
    expect(stopped.expectedStartMs).toBeLessThan(18_000);
    const held = await bot(r.port, 'Patient');
    expect((await stack.api<{ state: string }>('GET', `/api/v1/instances/${cold.id}`)).body.state).toBe('online');
    await onInstance(cold.id, 'Patient');
    await held.end();
  });

  it('who may wake what is the orchestrator’s policy: its refusal reaches the player as a login disconnect', async () => {
    const guarded = await stack.createInstance(`${stack.run}-guarded`);
    const r = await stack.startRouter(`try = ["g"]\n[servers]\ng = "instance:${guarded.id}"\n${statusToml}`);
    expect((await stack.api('POST', `/api/v1/instances/${guarded.id}/pause`)).status).toBe(202);
    await stack.waitForState(guarded.id, 'paused');
    const message = 'moving the world to new hardware';
    expect((await stack.api('POST', `/api/v1/instances/${guarded.id}/maintenance`, { enabled: true, message })).status).toBe(200);
    await until('router sees maintenance', () => r.parts.registry!.get(guarded.id)?.maintenance === true, 5000);
    // The registry already says so: the router refuses without asking.
    expect(await expectLoginRefused('127.0.0.1', r.port, 'Guest', { timeoutMs: 10_000 })).toMatch(/under maintenance/);

    // A router whose copy lags (it still sees the world Paused and open) asks; the orchestrator refuses the wake.
    const client = r.parts.registry!;
    client.state.applySnapshot({
      revision: client.revision,
      backends: client.backends().map((b) => (b.instanceId === guarded.id ? { ...b, maintenance: false } : b)),
    });
    const refused = await expectLoginRefused('127.0.0.1', r.port, 'Guest', { timeoutMs: 10_000 });
    expect(refused).toContain('This world cannot be started right now.');
    expect(refused).toContain(`in maintenance: ${message}`);
    expect((await stack.api<{ state: string }>('GET', `/api/v1/instances/${guarded.id}`)).body.state).toBe('paused');
  });

  it('moves a connected player between two test servers with RCON transfer, then evacuates the instance', async () => {
    const b = await bot(main.port, 'Mover');
    await onInstance(lobby.id, 'Mover');
    const res = await stack.api<{ move: { moved: boolean; reason?: string } }>('POST', '/api/v1/transfers', {
      player: 'Mover',
      target: { instance: event.id },
    });
    expect(res.body.move).toMatchObject({ moved: true });
    const packet = await b.waitForPacket('transfer', 10_000);
    expect(packet).toMatchObject({ host: '127.0.0.1', port: main.port });
    await b.end(); // a real client leaves and reconnects with handshake intent 3
    const after = await bot(main.port, 'Mover', { intent: 'transfer' });
    await onInstance(event.id, 'Mover');
    // The target itself counts the player (its own status, not the router's report).
    await onlineOn(event, 1);

    const evac = await stack.api<{ players: { player: string; moved: boolean }[] }>('POST', `/api/v1/instances/${event.id}/evacuate`, {});
    expect(evac.status).toBe(200);
    expect(evac.body.players).toEqual([expect.objectContaining({ player: 'Mover', moved: true })]);
    await after.waitForPacket('transfer', 10_000);
    await after.end();
    // No pending transfer: the login is an initial join over `try`, and the drained instance is skipped.
    const back = await bot(main.port, 'Mover', { intent: 'transfer' });
    await onInstance(lobby.id, 'Mover');
    await onlineOn(lobby, 1);
    await onlineOn(event, 0);
    await back.end();
  });

  it('the orchestrator restarted while a player is connected: the connection survives and new joins use the last snapshot', async () => {
    const stayer = await bot(main.port, 'Stayer');
    await onInstance(lobby.id, 'Stayer');
    await stack.stopOrchestrator();
    await until('router notices the orchestrator is gone', () => !main.parts.registry!.connected, 10_000);
    const during = await bot(main.port, 'During'); // routed from the last snapshot
    await new Promise((r) => setTimeout(r, 1000));
    expect(stayer.client.ended).toBe(false);
    await stack.restartOrchestrator();
    await until('router re-synced', () => main.parts.registry!.connected, 15_000);
    expect(stayer.client.ended).toBe(false);
    await onInstance(lobby.id, 'During', 15_000); // buffered session reports arrive after the restart
    expect(await playersOn(lobby.id)).toContain('Stayer');
    await during.end();
    await stayer.end();
  });
});
