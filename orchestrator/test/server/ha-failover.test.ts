// Failover under load (HA): two and three replicas on one PostgreSQL database;
// the leader is killed with -9 while its creates are in flight, again and
// again (20 times by default). Every command ends succeeded exactly once and
// every instance has exactly one container. The killed node is restarted on
// its data dir (same node id): it comes back as a standby, or takes its lease
// and claims back at once.

import { rm } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { instanceOf } from '../support/memory-runtime.js';
import { freshPostgres, until } from './support.js';
import {
  heartbeatPump,
  killReplica,
  newTempDir,
  seedCatalog,
  startHaAgent,
  startReplica,
  type HaAgent,
  type Replica,
} from './ha-support.js';

const KILLS = Number(process.env.ENDERCLOUD_TEST_HA_KILLS ?? 20);

let db: { url: string; drop(): Promise<void> } | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
beforeAll(async () => {
  db = await freshPostgres('ec_ha_failover');
});
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(async () => {
  await db?.drop();
});

async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: db!.url });
  await c.connect();
  try {
    return (await c.query<T>(text, values)).rows;
  } finally {
    await c.end();
  }
}

class Cluster {
  readonly replicas = new Map<string, Replica>();
  private readonly dirs = new Map<string, string>();

  async start(node: string): Promise<Replica> {
    let dir = this.dirs.get(node);
    if (!dir) {
      dir = await newTempDir(`ec-ha-${node}-`);
      this.dirs.set(node, dir);
    }
    const r = await startReplica({
      ENDERCLOUD_DATA_DIR: dir,
      ENDERCLOUD_DATABASE_URL: db!.url,
      ENDERCLOUD_NODE_ID: node,
      ENDERCLOUD_LEADER_LEASE_TTL: '1s',
      ENDERCLOUD_COMMAND_LEASE: '3s',
    });
    this.replicas.set(node, r);
    return r;
  }

  any(): Replica | undefined {
    return [...this.replicas.values()].find((r) => r.child.exitCode === null && r.child.signalCode === null);
  }

  async leader(): Promise<string | undefined> {
    return (
      await query<{ holder: string }>(
        `select holder from leases where name = 'reconciler' and expires_at > extract(epoch from clock_timestamp()) * 1000`,
      )
    )[0]?.holder;
  }

  async close(): Promise<void> {
    await Promise.all([...this.replicas.values()].map((r) => killReplica(r)));
    await Promise.all([...this.dirs.values()].map((d) => rm(d, { recursive: true, force: true })));
  }
}

async function scenario(replicaCount: number, kills: number): Promise<void> {
  const agent: HaAgent = await startHaAgent(`failover-agent-${replicaCount}`);
  cleanups.push(() => agent.close());
  const cluster = new Cluster();
  cleanups.push(() => cluster.close());
  const nodes = Array.from({ length: replicaCount }, (_, i) => `r${replicaCount}-n${i}`);
  for (const n of nodes) await cluster.start(n);
  const hostId = `failover-agent-${replicaCount}`;
  const pump = heartbeatPump(agent.url, hostId, () => cluster.any()?.url);
  cleanups.push(() => pump.stop());
  await pump.beat();
  await until(async () => (await cluster.any()!.call('GET', `/hosts/${hostId}`)).body?.status === 'ONLINE', 'host ONLINE', 20_000);
  await seedCatalog(cluster.any()!); // idempotent: the second scenario re-puts the same versions

  const commands: string[] = [];
  const instances: string[] = [];
  const failovers: number[] = [];
  for (let k = 0; k < kills; k++) {
    const leader = await until(() => cluster.leader(), 'a leader', 20_000);
    const release = agent.holdCreates();
    for (let j = 0; j < 2; j++) {
      const api = cluster.any()!;
      const res = await api.call('POST', '/instances', { groupId: 'g', variantId: 'v' });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      commands.push(res.body.commandId);
      instances.push(res.body.id);
    }
    // In the middle of commands: the leader's creates are on their way to the agent.
    await until(() => agent.held > 0, 'a create in flight', 20_000);
    const killedAt = Date.now();
    await killReplica(cluster.replicas.get(leader)!);
    release();
    await until(
      async () => {
        const l = await cluster.leader();
        return l !== undefined && l !== leader ? l : undefined;
      },
      'a new leader',
      20_000,
    );
    failovers.push(Date.now() - killedAt);
    await cluster.start(leader); // back as a standby, on its data dir (same node id)
  }

  await until(
    async () => {
      const rows = await query<{ n: string }>(`select count(*) as n from commands where id = any($1) and status = 'succeeded'`, [commands]);
      return Number(rows[0]!.n) === commands.length;
    },
    'every command to succeed',
    90_000,
  );
  const statuses = await query<{ status: string }>(`select status from commands where id = any($1)`, [commands]);
  expect(statuses.every((s) => s.status === 'succeeded')).toBe(true);
  // Exactly one container per instance, none extra.
  const perInstance = new Map<string, number>();
  for (const c of agent.runtime.containers.values()) {
    const id = instanceOf(c) ?? c.name;
    perInstance.set(id, (perInstance.get(id) ?? 0) + 1);
  }
  expect([...perInstance.keys()].sort()).toEqual([...instances].sort());
  expect([...perInstance.values()].every((n) => n === 1)).toBe(true);
  const refused = agent.answers.filter((a) => a.status === 409).length;
  const sorted = [...failovers].sort((x, y) => x - y);
  console.log(
    `[ha-failover] ${replicaCount} replicas, ${kills} kill -9 of the leader: ${commands.length} creates, each once; ` +
      `failover median ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted[sorted.length - 1]} ms (TTL 1 s); agent refusals ${refused}`,
  );
}

describe('kill -9 of the leader in the middle of commands', () => {
  it(`two replicas, ${KILLS} kills: each command carried out once, no duplicate container`, async () => {
    await scenario(2, KILLS);
  }, 600_000);

  it(`three replicas, ${KILLS} kills: each command carried out once, no duplicate container`, async () => {
    await scenario(3, KILLS);
  }, 600_000);
});
