// Several hosts on one machine, for real (issue 13): three dockerds, each in
// its own network namespace with one agent (test/support/netns-hosts.ts), and
// one orchestrator in the root namespace on a private PostgreSQL cluster it
// can restart. Heartbeats every 1 s, OFFLINE after 3 missed beats (500 ms
// beats miss their 500 ms timeout on a loaded 2-core machine). A fleet
// group `lobby` (ephemeral, min 3, distributed, savegame discard) and three
// persistent worlds, one per host. In order:
//   maintenance drain — ephemeral instances moved off (spawn elsewhere →
//     evacuate → despawn), the persistent world stays, min never undershot;
//   host loss — dockerd, agent and containers SIGKILLed: OFFLINE, the world
//     `unknown` and never started elsewhere, the fleet instance replaced; the
//     host returns RECOVERING → ONLINE, the lost fleet instance is despawned,
//     the world starts again on its own host;
//   partition — veth down, then up: the same, and the returning host's stale
//     fleet container is removed while the world's container was never restarted;
//   dockerd restart (live-restore) and PostgreSQL restart: nothing lost,
//     nothing duplicated, no host marked OFFLINE.
// After every step no instance has a container on two hosts.
// Skips (with a message) when not root: namespaces and dockerd need it.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { testServerTemplate, type Loose } from '../support/fleet-stack.js';
import { ensureImage } from '../support/images.js';
import { mcServerImage } from '../support/mc-server.js';
import { createNetnsCluster, netnsSkipReason, type NetnsCluster, type NetnsHost } from '../support/netns-hosts.js';
import { freePort } from '../support/registry.js';
import { until } from '../support/router-stack.js';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres.js';

const SKIP = netnsSkipReason();
if (SKIP) console.warn(`[multihost] skipped: ${SKIP}`);

const ADMIN = `admin-multihost-${'a'.repeat(20)}`;
const AGENT = `agent-multihost-${'b'.repeat(20)}`;
const MIN = 3;

describe.skipIf(SKIP !== undefined)('several hosts in network namespaces', () => {
  let pg: PrivatePostgres | undefined;
  let cluster: NetnsCluster | undefined;
  let orchestrator: Orchestrator | undefined;
  let dataDir: string | undefined;
  let url = '';
  const logs: string[] = [];
  const worlds: string[] = [];
  let failed = false;
  let phaseAt = Date.now();
  /** Prints how long the step since the last mark took (the suite's time budget is ~4 minutes). */
  const mark = (what: string): void => {
    const now = Date.now();
    console.log(`[multihost] ${what}: ${now - phaseAt} ms`);
    phaseAt = now;
  };

  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Loose }> => {
    const res = await fetch(`${url}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Loose };
  };
  const must = async (method: string, path: string, body?: unknown): Promise<Loose> => {
    const r = await api(method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const hosts = (): NetnsHost[] => cluster!.hosts;
  const hostOf = (id: string): NetnsHost => hosts().find((h) => h.id === id)!;
  const instance = async (id: string): Promise<Loose> => (await api('GET', `/instances/${id}`)).body;
  const lobby = async (): Promise<Loose[]> => (await must('GET', '/instances?groupId=lobby')).instances as Loose[];
  const hostStatus = async (id: string): Promise<string> => String((await must('GET', `/hosts/${id}`)).status);

  async function waitState(id: string, state: string, timeoutMs = 30_000): Promise<Loose> {
    let last: Loose = {};
    try {
      return await until(
        `instance ${id} ${state}`,
        async () => {
          last = await instance(id);
          return last.state === state ? last : undefined;
        },
        timeoutMs,
        100,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; last ${String(last.state)} (${String(last.stateReason)})`);
    }
  }

  async function waitHost(id: string, status: string, timeoutMs = 20_000): Promise<void> {
    await until(`host ${id} ${status}`, async () => (await hostStatus(id).catch(() => 'absent')) === status, timeoutMs, 50);
  }

  /** `count` online lobby instances, none on `notOn`, and nothing else in the group. */
  async function waitLobby(notOn: string | null, timeoutMs = 45_000): Promise<Loose[]> {
    let last: string[] = [];
    try {
      return await until(
        `${MIN} online lobby instances${notOn ? ` off ${notOn}` : ''}`,
        async () => {
          const all = await lobby();
          last = all.map((i) => `${String(i.name)}@${String(i.hostId)}:${String(i.state)}`);
          const online = all.filter((i) => i.state === 'online' && i.hostId !== notOn);
          return online.length === MIN && all.length === MIN ? online : undefined;
        },
        timeoutMs,
        200,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; lobby: ${last.join(', ')}`);
    }
  }

  /** Every container a reachable dockerd reports: instance id → hosts holding one. */
  async function containersEverywhere(skip: NetnsHost[] = []): Promise<Map<string, { host: string; id: string; state: string }[]>> {
    const all = new Map<string, { host: string; id: string; state: string }[]>();
    for (const h of hosts()) {
      if (skip.includes(h)) continue;
      for (const [instanceId, c] of await h.containers()) all.set(instanceId, [...(all.get(instanceId) ?? []), { host: h.id, ...c }]);
    }
    return all;
  }

  /** No instance has a container on two hosts; every container belongs to a stored instance on that host. */
  async function expectNoInstanceTwice(skip: NetnsHost[] = []): Promise<void> {
    const stored = new Map(((await must('GET', '/instances')).instances as Loose[]).map((i) => [String(i.id), i]));
    for (const [instanceId, where] of await containersEverywhere(skip)) {
      expect(where, `instance ${instanceId} has containers on ${where.map((w) => w.host).join(', ')}`).toHaveLength(1);
      expect(stored.get(instanceId)?.hostId, `container of ${instanceId} on ${where[0]!.host}`).toBe(where[0]!.host);
    }
  }

  beforeAll(async () => {
    try {
      phaseAt = Date.now();
      // Independent steps side by side (each assigned as soon as it exists, so afterAll cleans it up).
      const started = await Promise.allSettled([
        startPrivatePostgres().then((p) => (pg = p)),
        createNetnsCluster(3).then((c) => (cluster = c)),
      ]);
      for (const r of started) if (r.status === 'rejected') throw r.reason;
      mark('private PostgreSQL and 3 namespaces with their dockerd up');
      const image = await ensureImage(mcServerImage);
      const net = cluster!;
      dataDir = mkdtempSync(join(tmpdir(), 'ec-mh-orch-'));
      const port = await freePort();
      orchestrator = await startOrchestrator(
        orchestratorConfig({
          ENDERCLOUD_LISTEN: `${net.orchestratorAddress}:${port}`,
          ENDERCLOUD_DATA_DIR: dataDir,
          ENDERCLOUD_DATABASE_URL: pg!.url,
          ENDERCLOUD_ADMIN_TOKEN: ADMIN,
          ENDERCLOUD_AGENT_TOKEN: AGENT,
          ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
          ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
          ENDERCLOUD_COMMAND_RETRY_MAX: '500ms',
          ENDERCLOUD_COMMAND_LEASE: '5s',
          ENDERCLOUD_OFFLINE_SWEEP_INTERVAL: '200ms',
          ENDERCLOUD_HOST_OFFLINE_AFTER_BEATS: '3',
          ENDERCLOUD_SUPERVISE_INTERVAL: '300ms',
          ENDERCLOUD_PROVISION_INTERVAL: '300ms',
          ENDERCLOUD_LEADER_LEASE_TTL: '3s',
          ENDERCLOUD_UNKNOWN_GRACE: '10m',
          ENDERCLOUD_AGENT_REQUEST_TIMEOUT: '5s',
          ENDERCLOUD_CONTAINER_USER: '0:0',
          ENDERCLOUD_LOG_LEVEL: 'debug',
        }),
        { logger: pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) }) },
      );
      url = orchestrator.url;
      mark('orchestrator up');
      await Promise.all([
        net.loadImage(image),
        net.startAgents({ orchestratorUrl: url, token: AGENT, env: { AGENT_HEARTBEAT_INTERVAL: '1s' } }),
      ]);
      mark('test server image loaded into every dockerd, 3 agents answer');
      for (const h of hosts()) await waitHost(h.id, 'ONLINE', 30_000);
      mark('3 hosts ONLINE');
      await must('PUT', '/templates/mh-mc/versions/1', testServerTemplate(image));
      const variants = [{ id: 'main', template: { name: 'mh-mc', version: '1' }, env: {} }];
      await must('PUT', '/groups/survival', { kind: 'persistent', placement: 'distributed', variants });
      for (const name of ['world-1', 'world-2', 'world-3'])
        worlds.push(String((await must('POST', '/instances', { groupId: 'survival', variantId: 'main', name })).id));
      await must('PUT', '/groups/lobby', {
        kind: 'ephemeral',
        placement: 'distributed',
        variants,
        scaling: { minInstances: MIN, savegame: { mode: 'discard' } },
      });
      for (const id of worlds) await waitState(id, 'online', 60_000);
      const spread = await waitLobby(null, 60_000);
      mark('3 worlds and 3 lobby instances online');
      // Distributed placement: one world and one lobby instance per host.
      expect(new Set(await Promise.all(worlds.map(async (id) => String((await instance(id)).hostId)))).size).toBe(3);
      expect(new Set(spread.map((i) => String(i.hostId))).size).toBe(3);
    } catch (err) {
      failed = true;
      throw err;
    }
  });

  afterAll(async () => {
    if (failed || process.env.MULTIHOST_LOG_FILE) {
      writeFileSync(
        process.env.MULTIHOST_LOG_FILE ?? join(tmpdir(), `ec-multihost-${process.pid}.log`),
        [...logs, ...hosts().flatMap((h) => [`--- agent ${h.id}\n`, ...h.agentLog])].join(''),
      );
    }
    await orchestrator?.stop().catch(() => undefined);
    await cluster?.close().catch(() => undefined);
    await pg?.close().catch(() => undefined);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const track = (fn: () => Promise<void>) => async () => {
    try {
      await fn();
    } catch (err) {
      failed = true;
      throw err;
    }
  };

  it(
    'maintenance drain: ephemeral instances are moved off (spawn elsewhere → evacuate → despawn), the persistent world stays',
    track(async () => {
      const world = await instance(worlds[2]!);
      const host = hostOf(String(world.hostId));
      const before = await host.containers();
      const moved = (await lobby()).filter((i) => i.hostId === host.id).map((i) => String(i.id));
      expect(moved.length).toBeGreaterThan(0);
      await must('POST', `/hosts/${host.id}/maintenance`, { enabled: true, message: 'kernel update' });
      await waitHost(host.id, 'MAINTENANCE');
      // Sampled while it drains: the group never has fewer than min online instances.
      let fewest = Infinity;
      const replaced = await until(
        'moved instances gone, min online elsewhere',
        async () => {
          const all = await lobby();
          fewest = Math.min(fewest, all.filter((i) => i.state === 'online').length);
          const online = all.filter((i) => i.state === 'online' && i.hostId !== host.id);
          return online.length === MIN && all.length === MIN ? online : undefined;
        },
        45_000,
        100,
      );
      expect(fewest).toBeGreaterThanOrEqual(MIN);
      for (const id of moved) expect((await api('GET', `/instances/${id}`)).status).toBe(404);
      expect(replaced.every((i) => !moved.includes(String(i.id)))).toBe(true);
      // Despawned through the pipeline: drained, then deleted.
      const audit = ((await must('GET', '/audit?limit=500')).entries as Loose[]).filter((e) => e.action === 'fleet.scale');
      expect(JSON.stringify(audit)).toContain('is in MAINTENANCE: moved off');
      // The persistent world was not touched: same state, same container.
      expect((await instance(worlds[2]!)).state).toBe('online');
      expect((await host.containers()).get(worlds[2]!)?.id).toBe(before.get(worlds[2]!)?.id);
      for (const id of moved) expect((await host.containers()).has(id)).toBe(false);
      await must('POST', `/hosts/${host.id}/maintenance`, { enabled: false });
      await waitHost(host.id, 'ONLINE');
      await expectNoInstanceTwice();
    }),
  );

  it(
    'host loss: OFFLINE after the missed beats; the world unknown and never started elsewhere; the fleet replaced; the host returns RECOVERING → ONLINE and nothing exists twice',
    track(async () => {
      const world = worlds[0]!;
      const host = hostOf(String((await instance(world)).hostId));
      const lost = (await lobby()).filter((i) => i.hostId === host.id).map((i) => String(i.id));
      expect(lost.length).toBeGreaterThan(0);
      phaseAt = Date.now();
      const killedAt = Date.now();
      await host.kill();
      let restored = false;
      try {
        await waitHost(host.id, 'OFFLINE', 10_000);
        const offlineAfterMs = Date.now() - killedAt;
        console.log(`[multihost] host loss noticed after ${offlineAfterMs} ms (3 beats of 1 s, sweep 200 ms)`);
        expect(offlineAfterMs).toBeGreaterThanOrEqual(2000);
        const unknown = await waitState(world, 'unknown', 10_000);
        expect(unknown.hostId).toBe(host.id);
        expect(String(unknown.stateReason)).toMatch(/never started elsewhere/);
        for (const id of lost)
          expect(String((await waitState(id, 'unknown', 10_000)).stateReason)).toMatch(/fleet instance lost; replaced on the other hosts/);
        // Replaced on the other hosts: min online, the lost ones still listed (unknown) until the host returns.
        await until(
          'fleet replaced on the other hosts',
          async () => {
            const online = (await lobby()).filter((i) => i.state === 'online' && i.hostId !== host.id);
            return online.length === MIN || undefined;
          },
          45_000,
          200,
        );
        mark('host loss: OFFLINE, world unknown, fleet replaced');
        const elsewhere = await containersEverywhere([host]);
        expect(elsewhere.has(world)).toBe(false);
        for (const id of lost) expect(elsewhere.has(id)).toBe(false);
        expect((await instance(world)).state).toBe('unknown');

        const seen = new Set<string>();
        const watching = (async () => {
          for (let n = 0; n < 600 && !seen.has('ONLINE'); n++) {
            seen.add(await hostStatus(host.id).catch(() => 'error'));
            await new Promise((r) => setTimeout(r, 25));
          }
        })();
        restored = true;
        await host.startDockerd();
        mark('host loss: dockerd back');
        await host.startAgent();
        mark('host loss: agent back');
        await waitHost(host.id, 'ONLINE', 30_000);
        await watching;
        mark('host loss: host ONLINE');
        expect(logs.some((l) => l.includes('host returned: RECOVERING') && l.includes(host.id))).toBe(true);
        expect([...seen].filter((s) => s !== 'OFFLINE' && s !== 'error')[0]).toMatch(/RECOVERING|ONLINE/);
        // The lost fleet instances are despawned (their containers were exited with the host); the world starts again where its data is.
        for (const id of lost)
          await until(`lost ${id} despawned`, async () => (await api('GET', `/instances/${id}`)).status === 404, 30_000, 200);
        const back = await waitState(world, 'online', 45_000);
        expect(back.hostId).toBe(host.id);
        await waitLobby(null);
        mark('host loss: lost fleet despawned, world online again');
        await until(
          'lost containers removed',
          async () => [...(await host.containers()).keys()].every((k) => !lost.includes(k)),
          30_000,
          200,
        );
        await expectNoInstanceTwice();
      } finally {
        // The next tests need the host back, also when this one failed before it returned.
        if (!restored) await host.restore().catch(() => undefined);
      }
    }),
  );

  it(
    "partition (veth down, then up): the same, and the returning host's stale fleet containers are removed; the world's container was never restarted",
    track(async () => {
      const world = worlds[1]!;
      const host = hostOf(String((await instance(world)).hostId));
      const lost = (await lobby()).filter((i) => i.hostId === host.id).map((i) => String(i.id));
      expect(lost.length).toBeGreaterThan(0);
      const worldContainer = (await host.containers()).get(world)!;
      await host.partition();
      try {
        await waitHost(host.id, 'OFFLINE', 10_000);
        await waitState(world, 'unknown', 10_000);
        for (const id of lost) await waitState(id, 'unknown', 10_000);
        await waitLobbyOnlineOff(host.id);
        // Still running behind the cut: the stale fleet containers exist, nothing else started the world.
        const here = await host.containers();
        for (const id of lost) expect(here.get(id)?.state).toBe('running');
        expect((await containersEverywhere([host])).has(world)).toBe(false);
      } finally {
        await host.heal();
      }
      await waitHost(host.id, 'ONLINE', 30_000);
      for (const id of lost)
        await until(`stale ${id} despawned`, async () => (await api('GET', `/instances/${id}`)).status === 404, 30_000, 200);
      await until(
        'stale fleet containers removed from the returning host',
        async () => [...(await host.containers()).keys()].every((k) => !lost.includes(k)),
        30_000,
        200,
      );
      const back = await waitState(world, 'online', 45_000);
      expect(back.hostId).toBe(host.id);
      expect((await host.containers()).get(world)?.id).toBe(worldContainer.id);
      await waitLobby(null);
      await expectNoInstanceTwice();
    }),
  );

  async function waitLobbyOnlineOff(hostId: string): Promise<void> {
    await until(
      `fleet replaced off ${hostId}`,
      async () => (await lobby()).filter((i) => i.state === 'online' && i.hostId !== hostId).length === MIN || undefined,
      45_000,
      200,
    );
  }

  /** Every instance with its state and container, to compare before and after a restart. */
  async function snapshot(): Promise<{ instances: string[]; containers: string[] }> {
    const instances = ((await must('GET', '/instances')).instances as Loose[])
      .map((i) => `${String(i.id)}@${String(i.hostId)}:${String(i.state)}`)
      .sort();
    const containers = [...(await containersEverywhere())]
      .map(([id, w]) => `${id}@${w.map((c) => `${c.host}/${c.id}/${c.state}`).join('+')}`)
      .sort();
    return { instances, containers };
  }

  async function settled(): Promise<void> {
    await waitLobby(null);
    for (const id of worlds) await waitState(id, 'online', 30_000);
  }

  it(
    'dockerd restart (live-restore) under running instances: nothing lost, nothing duplicated, the host stays ONLINE',
    track(async () => {
      await settled();
      const before = await snapshot();
      const host = hostOf(String((await instance(worlds[2]!)).hostId));
      const since = logs.length;
      await host.stopDockerd('SIGTERM');
      await new Promise((r) => setTimeout(r, 1000));
      await host.startDockerd();
      // A few supervise and provision rounds against the restarted engine.
      await new Promise((r) => setTimeout(r, 3000));
      await settled();
      expect(await snapshot()).toEqual(before);
      expect(await hostStatus(host.id)).toBe('ONLINE');
      expect(logs.slice(since).some((l) => l.includes('host is OFFLINE'))).toBe(false);
      await expectNoInstanceTwice();
    }),
  );

  it(
    'PostgreSQL restart under running instances: nothing lost, nothing duplicated, no host marked OFFLINE',
    track(async () => {
      await settled();
      const before = await snapshot();
      const since = logs.length;
      await pg!.stop();
      // Longer than the 3 missed beats that would mark a host OFFLINE.
      await new Promise((r) => setTimeout(r, 3000));
      await pg!.start();
      await until('API answers again', async () => (await api('GET', '/hosts').catch(() => ({ status: 0 }))).status === 200, 30_000, 200);
      // The lease is taken back and the loops run again on the restarted database.
      await until('leader again', () => orchestrator!.leadership.isLeader() || undefined, 20_000, 100);
      await new Promise((r) => setTimeout(r, 3000));
      await settled();
      expect(await snapshot()).toEqual(before);
      for (const h of hosts()) expect(await hostStatus(h.id)).toBe('ONLINE');
      expect(logs.slice(since).some((l) => l.includes('host is OFFLINE'))).toBe(false);
      // The offline sweeps failed during the outage, and the detector then gave the agents time to beat again.
      expect(logs.slice(since).some((l) => l.includes('store reachable again'))).toBe(true);
      await expectNoInstanceTwice();
    }),
  );
});
