// Fencing (HA): two replicas on one PostgreSQL database. The leader's create is
// in flight when it is SIGSTOPped past its lease; the standby takes the lease
// (epoch 2) and announces itself to the agent (POST /leader) before its supervisor's first call. SIGCONT: the old
// leader's late call (epoch 1) is refused by the agent with STALE_LEADER, the
// old leader claims nothing more, and the new leader carries the create out once.

import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgres, until } from './support.js';
import { heartbeatPump, killReplica, newTempDir, seedCatalog, startHaAgent, startReplica, type Replica } from './ha-support.js';
import { rm } from 'node:fs/promises';

let db: { url: string; drop(): Promise<void> };
const cleanups: (() => Promise<void> | void)[] = [];
beforeAll(async () => {
  db = await freshPostgres('ec_ha_fencing');
});
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(async () => {
  await db?.drop();
});

async function lease(): Promise<{ holder: string; epoch: number } | undefined> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    const r = await c.query<{ holder: string; epoch: string }>(`select holder, epoch from leases where name = 'reconciler'`);
    return r.rows[0] && { holder: r.rows[0].holder, epoch: Number(r.rows[0].epoch) };
  } finally {
    await c.end();
  }
}

async function claimedBy(commandId: string): Promise<string | null> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    return (
      (await c.query<{ claimed_by: string | null }>('select claimed_by from commands where id = $1', [commandId])).rows[0]?.claimed_by ??
      null
    );
  } finally {
    await c.end();
  }
}

async function replica(name: string): Promise<Replica> {
  const dataDir = await newTempDir(`ec-ha-fence-${name}-`);
  const r = await startReplica({
    ENDERCLOUD_DATA_DIR: dataDir,
    ENDERCLOUD_DATABASE_URL: db.url,
    ENDERCLOUD_NODE_ID: name,
    ENDERCLOUD_LEADER_LEASE_TTL: '1s',
  });
  cleanups.push(async () => {
    await killReplica(r);
    await rm(dataDir, { recursive: true, force: true });
  });
  return r;
}

describe('leader fencing', () => {
  it("a SIGSTOPped-then-SIGCONTed old leader's late call is refused by the agent; the new leader carries the create out exactly once", async () => {
    const agent = await startHaAgent('fence-agent');
    cleanups.push(() => agent.close());
    const a = await replica('node-a');
    expect(await lease()).toEqual({ holder: 'node-a', epoch: 1 });
    const b = await replica('node-b');
    const target: string | undefined = b.url; // heartbeats land on the standby: any replica serves the API
    const pump = heartbeatPump(agent.url, 'fence-agent', () => target);
    cleanups.push(() => pump.stop());
    await pump.beat();
    await until(async () => (await b.call('GET', '/hosts/fence-agent')).body?.status === 'ONLINE', 'host ONLINE', 15_000);
    await seedCatalog(b);
    await until(() => agent.fence.highest === 1, "the leader's epoch reaching the agent", 30_000);

    const release = agent.holdCreates();
    const created = await b.call('POST', '/instances', { groupId: 'g', variantId: 'v' });
    expect(created.status).toBe(202);
    await until(() => agent.held === 1, "the leader's create reaching the agent", 15_000);

    a.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    await until(async () => (await lease())?.holder === 'node-b', 'the standby taking the lease', 15_000);
    const failoverMs = Date.now() - stoppedAt;
    expect((await lease())?.epoch).toBe(2);
    await until(() => agent.fence.highest === 2, "the new leader's epoch reaching the agent", 10_000);
    console.log(`[ha-fencing] failover after SIGSTOP: ${failoverMs} ms (lease TTL 1 s)`);

    a.child.kill('SIGCONT');
    release(); // the old leader's create arrives late, carrying epoch 1
    await until(
      () => agent.answers.some((x) => x.method === 'PUT' && x.epoch === '1' && x.status === 409),
      "the agent refusing the old leader's create",
      10_000,
    );

    const done = await until(
      async () => {
        const c = (await b.call('GET', `/commands/${created.body.commandId}`)).body;
        return c?.status === 'succeeded' ? c : undefined;
      },
      'the new leader to carry the create out',
      20_000,
    );
    expect(done.attempts).toBe(2);
    expect(await claimedBy(created.body.commandId)).toMatch(/^node-b:/);
    expect(agent.runtime.containers.size).toBe(1);
    // Every call that changed something came from the new leader; node-a only announced itself (POST /leader) while it led.
    const done2 = agent.answers.filter((x) => x.method !== 'GET' && x.status < 300);
    const mutating = done2.filter((x) => x.path !== '/leader');
    expect(mutating.length).toBeGreaterThan(0);
    expect(mutating.every((x) => x.epoch === '2')).toBe(true);
    expect(done2.filter((x) => x.path === '/leader').map((x) => x.epoch)).toEqual(expect.arrayContaining(['1', '2']));
    // The resumed old leader knows it lost: it claims nothing and does not take the lease back.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await lease()).toEqual({ holder: 'node-b', epoch: 2 });
    expect(a.output.join('')).toContain('leader lease lost to another replica');
  });
});
