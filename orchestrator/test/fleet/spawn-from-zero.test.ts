// Spawn from zero on a join (seed 003's flagship), on the real Docker engine:
// a min-0 fleet with no instances at all, a real router in front, and a real
// minecraft-protocol client. The status ping says "join to start it" and
// creates nothing; the login is held while the orchestrator spawns a world,
// then reaches play on it. A fleet whose cap is 0 disconnects the player with
// the limit named, never "No server is configured for this address".

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginBot, pingStatus, type Bot } from '../support/mc-server.js';
import { startFleetStack, until, type FleetStack } from '../support/fleet-stack.js';

let stack: FleetStack;
const bots: Bot[] = [];
const STOPPED = 'zzz no world yet';

beforeAll(async () => {
  stack = await startFleetStack('fl-zero');
  await stack.putGroup('zero', { minInstances: 0, maxInstances: 2 });
  await stack.putGroup('capped', { minInstances: 0 }, { caps: { maxInstances: 0 } });
});

afterAll(async () => {
  for (const b of bots) await b.end().catch(() => undefined);
  await stack?.close();
});

describe('a join spawns a world for a fleet scaled to zero (real router, containers, client)', () => {
  it('the status ping answers "stopped" and spawns nothing; the login is held through the spawn and reaches play on the new world', async () => {
    const r = await stack.startRouter(`try = ["z"]\n[servers]\nz = "group:zero"\n[status]\nstopped = "${STOPPED}"\n`);
    expect(await stack.groupInstances('zero')).toEqual([]);
    expect((await pingStatus('127.0.0.1', r.port, 5000)).motd).toBe(STOPPED);
    expect(await stack.groupInstances('zero')).toEqual([]);

    const t0 = Date.now();
    const bot = await loginBot('127.0.0.1', r.port, 'FromZero', { timeoutMs: 25_000 });
    bots.push(bot);
    expect(Date.now() - t0).toBeLessThan(25_000);
    const [instance, ...others] = await stack.groupInstances('zero');
    expect(others).toEqual([]);
    expect(instance).toMatchObject({ state: 'online' });
    await until('FromZero reported on the spawned world', async () => ((await stack.api('GET', `/instances/${String(instance!.id)}/players`)).body.players as Array<{ name: string }>).some((p) => p.name === 'FromZero'), 10_000, 100);
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
});
