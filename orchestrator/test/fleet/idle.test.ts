// Idle tiers on the real Docker engine, with a router in front and real
// minecraft-protocol clients (docs/provisioning.md "Idle semantics"): the pause tier pauses an empty world;
// 1,000 status pings through the router wake nothing; a login through the
// router (a group join) wakes it and gets in; a login restarts the idle clock;
// the stop and archive tiers (archived: container gone, world kept; a start
// re-creates it over the same world).

import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginBot, pingStatus, type Bot } from '../support/mc-server.js';
import { startFleetStack, until, type FleetStack, type Loose } from '../support/fleet-stack.js';

let stack: FleetStack;
const bots: Bot[] = [];
const ASLEEP = 'zzz fleet asleep';

async function bot(port: number, name: string): Promise<Bot> {
  const b = await loginBot('127.0.0.1', port, name, { timeoutMs: 25_000 });
  bots.push(b);
  return b;
}

const spawnOne = async (groupId: string): Promise<string> =>
  (await stack.must('POST', `/groups/${groupId}/spawn`, { name: `${stack.run}-${groupId}` })).id as string;
const wakeCommands = async (id: string) => (await stack.commands(id)).filter((c) => c.kind === 'resume' || c.kind === 'start').length;
const fleetEntry = async (groupId: string, id: string): Promise<Loose> =>
  ((await stack.api('GET', `/groups/${groupId}/fleet`)).body.instances as Loose[]).find((i) => i.id === id)!;
const seedOf = (id: string): string =>
  (JSON.parse(readFileSync(join(stack.runtimeDir(id), 'level.json'), 'utf8')) as { seed: string }).seed;

beforeAll(async () => {
  stack = await startFleetStack('fl-idle');
  await stack.putGroup('nap', { idleTiers: [{ after: '2s', action: 'pause' }] });
  await stack.putGroup('reset', { idleTiers: [{ after: '4s', action: 'pause' }] });
  await stack.putGroup('deep', {
    idleTiers: [
      { after: '3s', action: 'stop' },
      { after: '5s', action: 'archive' },
    ],
    savegame: { mode: 'archive' },
  });
});

afterAll(async () => {
  for (const b of bots) await b.end().catch(() => undefined);
  await stack?.close();
});

describe('idle tiers (real containers, router, minecraft-protocol clients)', () => {
  it('pause tier → paused; 1,000 status pings through the router wake nothing; a login through the router wakes it and gets in', async () => {
    const id = await spawnOne('nap');
    await stack.waitState(id, 'online');
    const paused = await stack.waitState(id, 'paused', 15_000);
    expect((await stack.history(id))[0]).toMatchObject({ to: 'paused' });
    const idle = ((await stack.api('GET', '/audit?limit=500')).body.entries as Loose[]).find(
      (e) => e.action === 'instance.idle' && e.targetId === id,
    );
    expect(idle).toMatchObject({ actor: 'provisioner', params: { action: 'pause', tier: '2s' } });

    const r = await stack.startRouter(`try = ["g"]\n[servers]\ng = "group:nap"\n[status]\nasleep = "${ASLEEP}"\n`);
    await until('router sees Paused', () => r.parts.registry!.get(id)?.status === 'Paused', 5000);
    const wakesBefore = await wakeCommands(id);
    const historyBefore = (await stack.history(id)).length;
    let answered = 0;
    const started = Date.now();
    const worker = async (n: number) => {
      for (let k = n; k < 1000; k += 25) {
        const s = await pingStatus('127.0.0.1', r.port, 5000);
        if (s.motd === ASLEEP) answered++;
      }
    };
    await Promise.all(Array.from({ length: 25 }, (_, n) => worker(n)));
    expect(answered).toBe(1000);
    expect(Date.now() - started).toBeLessThan(60_000);
    const after = await stack.get(id);
    expect(after.state).toBe('paused');
    expect(after.stateChangedAt).toBe(paused.stateChangedAt);
    expect(await wakeCommands(id)).toBe(wakesBefore);
    expect((await stack.history(id)).length).toBe(historyBefore);

    const t0 = Date.now();
    const waker = await bot(r.port, 'Waker');
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect((await stack.get(id)).state).toBe('online');
    await until(
      'Waker reported on the instance',
      async () => ((await stack.api('GET', `/instances/${id}/players`)).body.players as Loose[]).some((p) => p.name === 'Waker'),
      10_000,
      100,
    );
    expect(await wakeCommands(id)).toBe(wakesBefore + 1);
    // Never paused under a player: three tier lengths with Waker on.
    await new Promise((res) => setTimeout(res, 3000));
    expect((await stack.get(id)).state).toBe('online');
    await waker.end();
    await stack.waitState(id, 'paused', 15_000);
  });

  it('a login restarts the idle clock: the pause comes a full tier after the player left, not after the first empty run', async () => {
    const id = await spawnOne('reset');
    const online = await stack.waitState(id, 'online');
    const r = await stack.startRouter(`try = ["w"]\n[servers]\nw = "instance:${id}"\n`);
    const firstEmpty = await until(
      'empty run begins',
      async () => ((await fleetEntry('reset', id)).emptySince as string | null) || undefined,
      5000,
    );
    expect(Date.parse(firstEmpty)).toBeGreaterThanOrEqual(online.stateChangedAt ? Date.parse(String(online.stateChangedAt)) - 1000 : 0);
    await new Promise((res) => setTimeout(res, 2000)); // half the 4 s tier
    const visitor = await bot(r.port, 'Visitor');
    await until('Visitor counted', async () => (await fleetEntry('reset', id)).playersOnline === 1, 10_000, 100);
    await visitor.end();
    const leftAt = Date.now();
    const entry = await until(
      'new empty run',
      async () => {
        const e = await fleetEntry('reset', id);
        return e.playersOnline === 0 && e.emptySince && Date.parse(e.emptySince) > Date.parse(firstEmpty) ? e : undefined;
      },
      10_000,
      100,
    );
    expect(Date.parse(entry.emptySince)).toBeGreaterThan(Date.parse(firstEmpty) + 1500);
    expect(entry.next).toMatchObject({ action: 'pause' });
    expect(Date.parse(entry.next.dueAt)).toBeGreaterThanOrEqual(leftAt + 4000 - 1500);
    // Past the first run's due time the world is still online.
    const firstDue = Date.parse(firstEmpty) + 4000;
    await new Promise((res) => setTimeout(res, Math.max(0, firstDue + 800 - Date.now())));
    expect((await stack.get(id)).state).toBe('online');
    await stack.waitState(id, 'paused', 15_000);
    const pausedAt = (await stack.history(id)).find((h) => h.to === 'paused')!;
    expect(Date.parse(String(pausedAt.at))).toBeGreaterThanOrEqual(leftAt + 4000 - 1500);
  });

  it('stop and archive tiers: stopped, then archived (container gone, world kept); a start re-creates it over the intact world', async () => {
    const id = await spawnOne('deep');
    const online = await stack.waitState(id, 'online');
    const b = await bot(online.endpoint.port, 'Keeper');
    await b.end();
    const seed = seedOf(id);
    await stack.waitState(id, 'stopped', 15_000);
    const archived = await stack.waitState(id, 'archived', 20_000);
    expect(archived.activeAction).toBeNull();
    expect(await stack.containerOf(id)).toBeUndefined();
    expect(existsSync(join(stack.runtimeDir(id), 'level.json'))).toBe(true);
    const players = readdirSync(join(stack.runtimeDir(id), 'playerdata'));
    expect(players.length).toBe(1);
    const tiers = ((await stack.api('GET', '/audit?limit=500')).body.entries as Loose[])
      .filter((e) => e.action === 'instance.idle' && e.targetId === id)
      .map((e) => e.params.action);
    expect(tiers.sort()).toEqual(['archive', 'stop']);

    expect((await stack.api('POST', `/instances/${id}/start`)).status).toBe(202);
    const back = await stack.waitState(id, 'online', 30_000);
    expect(await stack.containerOf(id)).toBeDefined();
    expect(seedOf(id)).toBe(seed);
    expect(readdirSync(join(stack.runtimeDir(id), 'playerdata'))).toEqual(players);
    const again = await bot(back.endpoint.port, 'Keeper');
    await again.end();
    const record = JSON.parse(readFileSync(join(stack.runtimeDir(id), 'playerdata', players[0]!), 'utf8')) as { joins: number };
    expect(record.joins).toBe(2);
  });
});
