// scaling.maxInstances (and every other instance limit) holds on every path
// that adds an instance to a group, under concurrency, on SQLite and on
// PostgreSQL: POST /groups/:id/spawn, allocations that wait, router joins,
// the autoscaler, and the start of an archived world. Refusals name the
// limit; a fleet held short by a limit says so in its fleet view and in one
// log line; an allocation whose labels match nothing names them. Hosts are fake agents (the real agent app over an in-memory
// runtime); the worker does not run, so spawned instances stay `installing`.

import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_TOKEN,
  freshPostgres,
  heartbeatBody,
  startFakeAgent,
  testOrchestrator,
  until,
  type Loose,
  type TestOrchestrator,
} from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface Stack {
  t: TestOrchestrator;
  logs: Loose[];
  put(id: string, scaling: unknown, extra?: Record<string, unknown>): Promise<void>;
  count(groupId: string): Promise<number>;
}

async function setup(dialect: 'sqlite' | 'postgres'): Promise<Stack> {
  const env: Record<string, string> = {};
  if (dialect === 'postgres') {
    const db = await freshPostgres('ec_fleet_limits');
    cleanups.push(() => db.drop());
    env.ENDERCLOUD_DATABASE_URL = db.url;
  }
  const logs: Loose[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) logs.push(JSON.parse(l));
      done();
    },
  });
  const t = await testOrchestrator({ env, deps: { logger: pino({ level: 'info' }, sink), runProvisioner: false } });
  cleanups.push(() => t.close());
  for (const id of ['lim-a', 'lim-b']) {
    const a = await startFakeAgent();
    cleanups.push(() => a.close());
    const hb = await t.call('POST', `/api/v1/agents/${id}/heartbeat`, {
      body: heartbeatBody(a.url, { resources: { cpuCount: 4, memoryTotalBytes: 64 * 1024 ** 3 } }),
      token: AGENT_TOKEN,
    });
    expect(hb.status).toBe(200);
  }
  await t.o.ctx.hosts.whenIdle();
  expect(
    (await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 64 } } })).status,
  ).toBe(201);
  return {
    t,
    logs,
    async put(id, scaling, extra = {}) {
      const variants = [
        { id: 'a', template: { name: 'tpl', version: '1' } },
        { id: 'b', template: { name: 'tpl', version: '1' } },
      ];
      const res = await t.call('PUT', `/api/v1/groups/${id}`, { body: { kind: 'ephemeral', variants, scaling, ...extra } });
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    },
    async count(groupId) {
      return ((await t.call('GET', `/api/v1/instances?groupId=${groupId}`)).body.instances as Loose[]).length;
    },
  };
}

const many = <T>(n: number, f: (i: number) => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: n }, (_, i) => f(i)));

describe.each(['sqlite', 'postgres'] as const)('instance limits on every path (%s)', (dialect) => {
  it('POST /groups/:id/spawn: 12 concurrent spawns against scaling.maxInstances 4 create exactly 4; the refusal names the limit', async () => {
    const s = await setup(dialect);
    await s.put('survival', { maxInstances: 4 });
    const res = await many(12, () => s.t.call('POST', '/api/v1/groups/survival/spawn', { body: {} }));
    expect(res.filter((r) => r.status === 202)).toHaveLength(4);
    for (const r of res.filter((x) => x.status !== 202)) {
      expect(r.status).toBe(409);
      expect(r.body.error).toMatchObject({
        code: 'CAP_REACHED',
        message: 'group survival is at its scaling.maxInstances (4): 4 instances count toward it (archived worlds do not)',
        details: { cap: 'scaling.maxInstances', limit: 4 },
      });
    }
    expect(await s.count('survival')).toBe(4);
    // caps.maxInstances below scaling.maxInstances binds first, on the same path.
    await s.put('capped', { maxInstances: 10 }, { caps: { maxInstances: 2 } });
    const capped = await many(6, () => s.t.call('POST', '/api/v1/groups/capped/spawn', { body: {} }));
    expect(capped.filter((r) => r.status === 202)).toHaveLength(2);
    expect(capped.find((r) => r.status === 409)!.body.error.message).toMatch(/^group capped is at its caps\.maxInstances \(2\)/);
  });

  it('allocations with wait: none spawns past scaling.maxInstances; the refusal says what matched nothing and which limit is full', async () => {
    const s = await setup(dialect);
    const spawnA = async (group: string, n: number) => {
      for (let k = 0; k < n; k++)
        expect((await s.t.call('POST', `/api/v1/groups/${group}/spawn`, { body: { variantId: 'a' } })).status).toBe(202);
    };
    // At the limit, nothing of variant b coming: every waiting allocation of b is refused at once, none spawns a fifth.
    await s.put('duels', { maxInstances: 4 });
    await spawnA('duels', 4);
    const refused = await many(10, () => s.t.call('POST', '/api/v1/groups/duels/allocations', { body: { variantId: 'b', wait: '30s' } }));
    for (const r of refused) {
      expect(r.status).toBe(409);
      expect(r.body.error).toMatchObject({
        code: 'CAP_REACHED',
        details: { groupId: 'duels', cap: 'scaling.maxInstances', limit: 4 },
        message:
          'group duels has no Ready, unallocated instance of variant b in its buffer (0 allocated, 4 starting), and none can be spawned: group duels is at its scaling.maxInstances (4): 4 instances count toward it (archived worlds do not)',
      });
    }
    expect(await s.count('duels')).toBe(4);

    // One slot left: ten waiting allocations of b race for it; exactly one instance more, whoever got it.
    await s.put('duos', { maxInstances: 4 });
    await spawnA('duos', 3);
    const done: Loose[] = [];
    const pending = many(10, async () => {
      const r = await s.t.call('POST', '/api/v1/groups/duos/allocations', { body: { variantId: 'b', wait: '30s' } });
      done.push(r);
      return r;
    });
    // The waiting ones (the spawned b never comes online here) end by the manual clock.
    await until(
      () => {
        s.t.clock.advance(31_000);
        return done.length === 10 || undefined;
      },
      'every allocation answered',
      20_000,
    );
    const res = await pending;
    expect(await s.count('duos')).toBe(4);
    for (const r of res) {
      expect([409, 504]).toContain(r.status);
      if (r.status === 409)
        expect(r.body.error.message).toMatch(
          /^group duos has no Ready, unallocated instance of variant b in its buffer \(0 allocated, [34] starting\), and none can be spawned: group duos is at its scaling\.maxInstances \(4\)/,
        );
    }
  });

  it('router joins: 10 concurrent joins of an empty group spawn at most scaling.maxInstances; at the limit the answer names it', async () => {
    const s = await setup(dialect);
    await s.put('lobby', { maxInstances: 2 });
    const res = await many(10, (n) => s.t.call('POST', '/api/v1/router/groups/lobby/join', { body: { player: `Player${n}` } }));
    const count = await s.count('lobby');
    expect(count).toBeGreaterThanOrEqual(1);
    expect(count).toBeLessThanOrEqual(2);
    for (const r of res) {
      if (r.status === 200) expect(['spawn', 'start']).toContain(r.body.action);
      else
        expect(r.body.error).toMatchObject({
          code: 'CAPACITY_EXHAUSTED',
          message: expect.stringContaining('group lobby is at its scaling.maxInstances (2)'),
        });
    }
    expect(res.filter((r) => r.status === 200 && r.body.action === 'spawn').length).toBeLessThanOrEqual(2);

    // Simulation: both slots held by instances a join cannot use (in error), so every join would spawn.
    await s.put('arcade', { maxInstances: 2 });
    for (let n = 0; n < 2; n++) {
      const spawned = await s.t.call('POST', '/api/v1/groups/arcade/spawn', { body: {} });
      await s.t.o.store.instances.transition(spawned.body.id, 'error', { now: s.t.clock.now(), reason: 'test: failed' });
    }
    const full = await many(6, (n) => s.t.call('POST', '/api/v1/router/groups/arcade/join', { body: { player: `Late${n}` } }));
    for (const r of full) {
      expect(r.status).toBe(409);
      expect(r.body.error).toMatchObject({
        code: 'CAPACITY_EXHAUSTED',
        message:
          'group arcade has no instance with room and cannot spawn one: group arcade is at its scaling.maxInstances (2): 2 instances count toward it (archived worlds do not)',
        details: { cause: 'CAP_REACHED' },
      });
    }
    expect(await s.count('arcade')).toBe(2);
  });

  it('the autoscaler: concurrent ticks and spawns stay within the limit; the fleet view and one log line say why the buffer is short', async () => {
    const s = await setup(dialect);
    await s.put('events', { maxInstances: 3, buffer: { count: 5 } });
    const provisioner = s.t.o.provisioner;
    await Promise.all([
      provisioner.tick(),
      provisioner.tick(),
      ...Array.from({ length: 4 }, () => s.t.call('POST', '/api/v1/groups/events/spawn', { body: {} })),
    ]);
    expect(await s.count('events')).toBe(3);
    await provisioner.tick();
    await provisioner.tick();
    const fleet = (await s.t.call('GET', '/api/v1/groups/events/fleet')).body;
    expect(fleet.short).toMatchObject({
      reason: "buffer 5 needs 2 more (ready 0, starting 3): spawns 0 of 2; group events's scaling.maxInstances (3) has no room",
      since: expect.any(String),
    });
    const said = s.logs.filter((l) => l.groupId === 'events' && String(l.msg).startsWith('fleet events cannot reach'));
    expect(said).toHaveLength(1);
    // Said when first found (by whichever tick or race came first), with the limit named.
    expect(said[0].msg).toMatch(/group events's scaling\.maxInstances \(3\) has (no room|room for [0-3])/);
    const audited = ((await s.t.call('GET', '/api/v1/audit?limit=200')).body.entries as Loose[]).filter(
      (e) => e.action === 'fleet.short' && e.targetId === 'events',
    );
    expect(audited).toHaveLength(1);

    // Raising the limit: the fleet fills, the reason clears (one line), the view says nothing is short.
    await s.put('events', { maxInstances: 5, buffer: { count: 5 } });
    await provisioner.tick();
    expect(await s.count('events')).toBe(5);
    expect((await s.t.call('GET', '/api/v1/groups/events/fleet')).body.short).toBeNull();
    expect(s.logs.filter((l) => l.groupId === 'events' && String(l.msg).includes('reaches its minimum and buffer again'))).toHaveLength(1);
  });

  it('archived worlds take no slot: the buffer refills past them, and bringing one back is checked like a spawn', async () => {
    const s = await setup(dialect);
    await s.put('arena', { maxInstances: 2, buffer: { count: 2 }, savegame: { mode: 'archive' } });
    const provisioner = s.t.o.provisioner;
    await provisioner.tick();
    const [first] = (await s.t.call('GET', '/api/v1/instances?groupId=arena')).body.instances as Loose[];
    // Simulation: the state an archive (despawn with savegame archive) leaves behind, written directly.
    await s.t.o.store.instances.transition(first.id, 'archived', {
      now: s.t.clock.now(),
      reason: 'test: archived',
      patch: { desiredState: 'stopped', fleet: { archived: { at: s.t.clock.now(), hostId: first.hostId, backupId: null } } },
    });
    await provisioner.tick();
    expect(await s.count('arena')).toBe(3); // two counted, one archived
    expect((await s.t.call('GET', '/api/v1/groups/arena/fleet')).body).toMatchObject({ short: null, counts: { archived: 1, starting: 2 } });
    const start = await s.t.call('POST', `/api/v1/instances/${first.id}/start`, { body: {} });
    expect(start.status).toBe(409);
    expect(start.body.error).toMatchObject({
      code: 'CAP_REACHED',
      message: 'group arena is at its scaling.maxInstances (2): 2 instances count toward it (archived worlds do not)',
    });
    expect((await s.t.call('GET', `/api/v1/instances/${first.id}`)).body.state).toBe('archived');
  });

  it('an allocation whose labels match nothing says which labels matched no Ready instance, and what the Ready ones have', async () => {
    const s = await setup(dialect);
    await s.put('arena2', { buffer: { count: 0 } });
    for (const mode of ['solo', 'squads']) {
      const spawned = await s.t.call('POST', '/api/v1/groups/arena2/spawn', { body: {} });
      // Simulation: an online instance whose template gave it the label (the worker does not run here).
      const stored = (await s.t.o.store.instances.get(spawned.body.id))!;
      await s.t.o.store.instances.transition(stored.id, 'online', {
        now: s.t.clock.now(),
        reason: 'test: online',
        patch: { containerConfig: { ...stored.containerConfig, labels: { mode } } },
      });
    }
    const res = await s.t.call('POST', '/api/v1/groups/arena2/allocations', { body: { labels: { mode: 'duels' } } });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({
      code: 'CAPACITY_EXHAUSTED',
      message: 'no Ready instance of group arena2 has label mode=duels (2 Ready: mode=solo, mode=squads)',
    });
    const ok = await s.t.call('POST', '/api/v1/groups/arena2/allocations', { body: { labels: { mode: 'squads' } } });
    expect(ok.status).toBe(201);
  });
});
