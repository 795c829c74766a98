// Spawn from zero on a join (docs/provisioning.md "Spawn from zero: a player's join"), on the real Docker engine:
// a min-0 fleet with no instances at all, a real router in front, and a real
// minecraft-protocol client. The status ping says "join to start it" and
// creates nothing; the login is held while the orchestrator spawns a world,
// then reaches play on it. A fleet whose cap is 0 disconnects the player with
// the limit named, never "No server is configured for this address". A spawn
// slower than the hold parks the player on the fallback and sends them to the
// new world once it is online (the cold-join policy of any wake).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginBot, pingStatus, type Bot } from '../support/mc-server.js';
import { startFleetStack, until, type FleetStack, type Loose } from '../support/fleet-stack.js';
import type { StackRouter } from '../support/router-stack.js';

let stack: FleetStack;
/** The first router listens at ENDERCLOUD_ROUTER_PUBLIC_ADDRESS: RCON transfers send players to it. */
let router: StackRouter;
const bots: Bot[] = [];
const STOPPED = 'zzz no world yet';

async function bot(name: string, port: number, intent: 'login' | 'transfer' = 'login'): Promise<Bot> {
  const b = await loginBot('127.0.0.1', port, name, { timeoutMs: 25_000, intent });
  bots.push(b);
  return b;
}

const playersOn = async (id: string): Promise<string[]> =>
  ((await stack.api('GET', `/instances/${id}/players`)).body.players as Loose[]).map((p) => p.name as string);
const onInstance = (id: string, player: string) =>
  until(`${player} on ${id}`, async () => (await playersOn(id)).includes(player), 10_000, 100);

beforeAll(async () => {
  stack = await startFleetStack('fl-zero');
  await stack.putGroup('zero', { minInstances: 0, maxInstances: 2 });
  await stack.putGroup('capped', { minInstances: 0 }, { caps: { maxInstances: 0 } });
  await stack.putGroup('lobby', null, { kind: 'persistent' });
  // Starts slower than the hold below: the player is parked on the lobby while it spawns.
  await stack.putGroup(
    'slowzero',
    { minInstances: 0 },
    { variants: [{ id: 'slow', template: { name: stack.template, version: '1' }, env: { STARTUP_DELAY_SECONDS: '5' } }] },
  );
  router = await stack.startRouter(`try = ["z"]\n[servers]\nz = "group:zero"\n[status]\nstopped = "${STOPPED}"\n`);
});

afterAll(async () => {
  for (const b of bots) await b.end().catch(() => undefined);
  await stack?.close();
});

describe('a join spawns a world for a fleet scaled to zero (real router, containers, client)', () => {
  it('the status ping answers "stopped" and spawns nothing; the login is held through the spawn and reaches play on the new world', async () => {
    const r = router;
    expect(await stack.groupInstances('zero')).toEqual([]);
    expect((await pingStatus('127.0.0.1', r.port, 5000)).motd).toBe(STOPPED);
    expect(await stack.groupInstances('zero')).toEqual([]);

    const t0 = Date.now();
    await bot('FromZero', r.port);
    expect(Date.now() - t0).toBeLessThan(25_000);
    const [instance, ...others] = await stack.groupInstances('zero');
    expect(others).toEqual([]);
    expect(instance).toMatchObject({ state: 'online' });
    await onInstance(String(instance!.id), 'FromZero');
    expect(stack.logs.some((l) => l.includes('spawned for a router join') && l.includes(String(instance!.id)))).toBe(true);
    // The router reached it through the same join → hold → route path as a wake.
    const wakes = await r.metrics.registry.getSingleMetric('endercloud_router_wake_requests_total')?.get();
    expect(wakes?.values.find((v) => v.labels.action === 'join' && v.labels.result === 'accepted')?.value).toBe(1);
  });

  it('a fleet whose cap is 0: the player is disconnected with the limit named, and nothing is created', async () => {
    const r = await stack.startRouter('try = ["c"]\n[servers]\nc = "group:capped"\n');
    const refused = await loginBot('127.0.0.1', r.port, 'Capped', { timeoutMs: 15_000 }).then(
      (b) => (bots.push(b), 'reached play'),
      (err: Error) => err.message,
    );
    expect(refused).toContain('capped is full (0 of 0 worlds). Please try again in a minute.');
    expect(refused).not.toContain('No server is configured');
    expect(await stack.groupInstances('capped')).toEqual([]);
  });

  it('a spawn slower than the hold: the player is parked on the fallback, then sent to the new world once it is online', async () => {
    const lobby = (await stack.must('POST', '/groups/lobby/spawn', { name: `${stack.run}-lobby`, wait: '20s' })).id as string;
    const cold = await stack.startRouter(
      [
        'try = ["cold"]',
        '[servers]',
        'cold = "group:slowzero"',
        `lobby = "instance:${lobby}"`,
        '[wake]',
        'fallback = "lobby"',
        '[limits]',
        'wake_hold_timeout = "2s"',
      ].join('\n'),
    );
    const parked = await bot('Parked', cold.port);
    const [spawned, ...others] = await stack.groupInstances('slowzero');
    expect(others).toEqual([]);
    expect(spawned!.state).not.toBe('online'); // parked while it starts
    await onInstance(lobby, 'Parked');
    // The world answers ~5 s after its start; the orchestrator then moves the player with RCON transfer to the router.
    const packet = await parked.waitForPacket('transfer', 25_000);
    expect(packet).toMatchObject({ host: '127.0.0.1', port: router.port });
    await parked.end();
    await bot('Parked', Number(packet.port), 'transfer');
    await onInstance(String(spawned!.id), 'Parked');
    expect((await stack.groupInstances('slowzero')).map((i) => i.state)).toEqual(['online']);
  });
});
