// SIMULATION (docs/testing.md "Deterministic simulation"): one seeded run of the
// REAL orchestrator (buildOrchestrator: store, command pipeline, lifecycle
// engine, supervisor, provisioner with idle tiers and fleets, allocation,
// registry feed, backup store and scheduler, offline detector, HTTP routes) in
// this process, on a manual clock, against simulated agents (sim-agents.ts, at
// the AgentTransport seam) and a simulated router (players join through
// POST /router/groups/:id/join, log in when the registry says Running, and are
// reported through POST /router/sessions). Operators act through the HTTP API
// (app.inject). The background loops are not started: each round of simulated
// time calls their tick functions in a fixed order, awaited one after the other,
// so one seed is one sequence of events. Invariants are checked after every round.

import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { ManualClock } from '../server/clock.js';
import { orchestratorConfig, type OrchestratorConfig } from '../server/config.js';
import { buildOrchestrator, type Orchestrator } from '../server/orchestrator.js';
import type { GroupJoinAnswer, RouterSessionEvent } from '../protocol/registry-contract.js';
import type { Instance, InstanceState } from '../domain/index.js';
import { rng, describeStep, type Step } from './actions.js';
import { SimAgents, type SimHost } from './sim-agents.js';
import { deterministicIds } from './deterministic-ids.js';
import { SimTimers } from './sim-timers.js';
import { cuttableStore, SimLeases, withSimLeases } from './sim-replicas.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { InProcessChangePort } from '../server/changes/change-port.js';

const ROUND_MS = 2000;
/** The agent's AGENT_HEARTBEAT_INTERVAL default (src/agent/config.ts). */
const AGENT_DEFAULT_BEAT_MS = 10_000;
/** ENDERCLOUD_COMMAND_BATCH's default (src/server/config.ts). */
const DEFAULT_BATCH = orchestratorConfig({ ENDERCLOUD_DATA_DIR: tmpdir() }).commandBatchSize;
/** A join's world must be Running within this many rounds (when no fault touched it). */
export const WAKE_BOUND_ROUNDS = 15;
const GROUPS = ['survival', 'lobby'] as const;
const MAX_TOTAL = 8;
const AGENT_TOKEN = 'sim-agent-token-0123456789abcdef';
const ADMIN_TOKEN = 'ec_sim-admin-token-0123456789abcdef0123';
const SLEEPY = ['pause', 'pausing', 'paused', 'stopping', 'stopped', 'archiving', 'archived', 'deleting'] as const;
const FAILED: readonly InstanceState[] = ['error', 'unknown', 'intervention_required'];
/** States a world passes through and leaves where it was (a stopped world's backup ends stopped). */
const TRANSIT: readonly InstanceState[] = ['backup', 'restore', 'update'];

export interface Violation {
  invariant: string;
  message: string;
  /** Index of the step after which it was seen. */
  step: number;
}

export interface RunResult {
  seed: number;
  steps: Step[];
  violation: Violation | null;
  /** What happened, one line per step (printed with a failure). */
  trace: string[];
  /** Instances, their history and commands at the failure. */
  state: string[];
  /** sha256 of every instance's history and commands at the end: one seed, one digest. */
  digest: string;
}

interface Replica {
  id: string;
  o: Orchestrator;
  /** Cut from the database until this round (null: reaches it). */
  cutUntil: number | null;
  /** Cut at some point of the current rounds: its loops' failures until it settles are the cut's. */
  wasCut: boolean;
  failureTraced?: boolean;
}

interface Player {
  name: string;
  groupId: string;
  instanceId: string;
  sessionId: string;
  status: 'waiting' | 'on';
  joinedRound: number;
}

const silent = pino({ level: 'silent' });

/** Lets every promise chain started by a timer run to its end (they wait on the store and the simulated agents only). */
async function flush(): Promise<void> {
  for (let n = 0; n < 20; n++) await new Promise<void>((resolve) => setImmediate(resolve));
}

const templateBody = (image: string) => ({
  image,
  resources: { memoryMb: 512 },
  containerPort: 25565,
  variables: [{ name: 'MOTD', type: 'string', default: 'hello' }],
  readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 60_000, intervalMs: 1000, failureThreshold: 3 },
  stop: { signal: 'SIGTERM', timeoutMs: 3000 },
  dataPaths: ['world'],
  technicalPaths: ['logs'],
  backup: { onFailure: 'abort_stop' },
});

const TIER_SETS: ReadonlyArray<ReadonlyArray<{ after: string; action: string }> | null> = [
  [
    { after: '20s', action: 'pause' },
    { after: '60s', action: 'stop' },
  ],
  [{ after: '15s', action: 'pause' }],
  [
    { after: '30s', action: 'stop' },
    { after: '90s', action: 'archive' },
  ],
  [],
  null,
];

const SCALINGS = [
  {
    minInstances: 1,
    maxInstances: 4,
    buffer: { count: 1 },
    scaleDown: { whenEmptyFor: '30s' },
    releaseWhenEmptyFor: '40s',
    savegame: { mode: 'archive' },
  },
  { minInstances: 0, maxInstances: 2, buffer: { count: 0 }, scaleDown: { whenEmptyFor: '20s' }, savegame: { mode: 'discard' } },
  { minInstances: 2, maxInstances: 3, buffer: { count: 2 }, scaleUp: { whenFillAbove: 0.5, step: 1, cooldown: '5s' } },
];

export class Simulation {
  readonly clock = new ManualClock(1_800_000_000_000);
  readonly agents = new SimAgents(this.clock);
  readonly timers = new SimTimers(this.clock);
  readonly trace: string[] = [];
  /** The orchestrator replicas (one, or two sharing the store); `o` is the one the load balancer sends a call to. */
  private replicas: Replica[] = [];
  private shared: Store | undefined;
  private readonly changes = new InProcessChangePort();
  private readonly leases = new SimLeases(this.clock);
  private config!: Readonly<OrchestratorConfig>;
  private env: Record<string, string> = {};
  private leaderSeen = '';
  private dataDir = '';
  private routerToken = '';
  private round = 0;
  private step = -1;
  private players = new Map<string, Player>();
  private playerSeq = 0;
  private sessionSeq = 0;
  private secretSeq = 0;
  private allocations: string[] = [];
  /** Instances and hosts a fault touched: their error/unknown is explained. */
  private faulted = new Set<string>();
  /** Instances an operator acted on this round (an operator may pause a world with players). */
  private touched = new Set<string>();
  /** Hosts down until a round: [host, round it comes back, machine lost]. */
  private downUntil = new Map<string, { round: number; machine: boolean }>();
  private lastAuditId = 0;
  private outlook = new Map<string, { action: string; dueAt: string; tier: string } | null>();
  /** Instance ids whose world an operator deleted on purpose (player_data scope). */
  private wiped = new Set<string>();
  private groupCount = new Map<string, number>();
  private total = 0;
  private violation: Violation | null = null;
  private restoreIds: (() => void) | undefined;

  /**
   * Drawn from the seed: the worker's batch (1, 4, or the production default),
   * and how often the agents beat (every round, or the agent's default 10 s).
   */
  readonly batchSize: number;
  readonly beatEveryRounds: number;
  private lastBeat = new Map<string, number>();
  /** Each instance's state at the end of the last round it was not in TRANSIT. */
  private settled = new Map<string, InstanceState>();

  /** Replicas of the orchestrator (drawn from the seed): 1, or 2 over one store with the lease between them. */
  readonly replicaCount: number;

  constructor(readonly seed: number) {
    const r = rng(seed ^ 0xba7c4);
    this.batchSize = [1, 4, DEFAULT_BATCH][Math.floor(r() * 3)]!;
    this.beatEveryRounds = r() < 0.5 ? 1 : AGENT_DEFAULT_BEAT_MS / ROUND_MS;
    this.replicaCount = r() < 0.5 ? 1 : 2;
  }

  /** The replica the load balancer sends a call to: the first that passes its readiness (not cut from the database). */
  private get o(): Orchestrator {
    return (this.replicas.find((r) => !this.isCut(r)) ?? this.replicas[0]!).o;
  }

  private isCut(r: Replica): boolean {
    return r.cutUntil !== null && this.round < r.cutUntil;
  }

  private leaderReplica(): Replica | undefined {
    return this.replicas.find((r) => r.o.leadership.isLeader());
  }

  /** Runs one replica's loop; a replica cut from the database fails its calls, as in production (logged, retried next round). */
  private async onReplica(r: Replica, what: string, fn: (o: Orchestrator) => Promise<unknown>): Promise<void> {
    try {
      await fn(r.o);
    } catch (err) {
      if (!this.isCut(r) && !r.wasCut) throw err;
      // Once per cut in the trace: the first failure says what the cut did.
      if (!r.failureTraced) this.trace.push(`  round ${this.round}: ${r.id} ${what} failed: ${(err as Error).message.slice(0, 100)}`);
      r.failureTraced = true;
    }
  }

  async setup(): Promise<void> {
    this.restoreIds = deterministicIds(rng(this.seed ^ 0x5eed));
    this.trace.push(`seed ${this.seed}: command batch ${this.batchSize}, heartbeats every ${(this.beatEveryRounds * ROUND_MS) / 1000} s`);
    this.dataDir = await mkdtemp(path.join(tmpdir(), 'ec-sim-'));
    this.env = {
      ENDERCLOUD_DATA_DIR: this.dataDir,
      ENDERCLOUD_LISTEN: '127.0.0.1:0',
      ENDERCLOUD_AGENT_TOKEN: AGENT_TOKEN,
      ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
      ENDERCLOUD_STATS_INTERVAL: '0',
      ENDERCLOUD_MAX_INSTANCES: String(MAX_TOTAL),
      ENDERCLOUD_COMMAND_BATCH: String(this.batchSize),
      ENDERCLOUD_COMMAND_RETRY_INITIAL: '500ms',
      ENDERCLOUD_COMMAND_RETRY_MAX: '5s',
      ENDERCLOUD_UNKNOWN_GRACE: '5s',
      ENDERCLOUD_IDLE_TIERS: '20s:pause,60s:stop',
      ENDERCLOUD_RESUME_TIMEOUT: '10s',
      ENDERCLOUD_LOG_LEVEL: 'silent',
    };
    this.config = orchestratorConfig(this.env);
    if (this.replicaCount > 1) {
      const store = await openStore(undefined, this.dataDir);
      this.shared = withSimLeases(store, this.leases);
    }
    this.trace.push(`seed ${this.seed}: ${this.replicaCount} orchestrator replica${this.replicaCount > 1 ? 's over one store' : ''}`);
    for (let n = 1; n <= this.replicaCount; n++)
      this.replicas.push({ id: `r${n}`, o: await this.boot(`r${n}`), cutUntil: null, wasCut: false });
    for (const [n, id] of ['h1', 'h2', 'h3'].entries()) this.agents.addHost(id, 30000 + n * 100);
    await this.heartbeats();
    await this.must('PUT', '/templates/sim/versions/1', templateBody('sim/game:1'));
    await this.must('PUT', '/templates/sim/versions/2', templateBody('sim/game:2'));
    await this.must('PUT', '/groups/survival', {
      kind: 'persistent',
      caps: { maxInstances: 4 },
      variants: [{ id: 'main', template: { name: 'sim', version: '1' }, env: {} }],
      idleTiers: [
        { after: '20s', action: 'pause' },
        { after: '60s', action: 'stop' },
      ],
    });
    await this.must('PUT', '/groups/lobby', {
      kind: 'ephemeral',
      caps: { maxInstances: 5 },
      variants: [{ id: 'main', template: { name: 'sim', version: '1' }, env: {} }],
      scaling: SCALINGS[0],
    });
    this.routerToken = (await this.must('POST', '/tokens', { name: 'sim-router', scopes: ['router'] })).secret as string;
    await this.settle(3);
  }

  private async boot(nodeId: string): Promise<Orchestrator> {
    const config = this.replicaCount > 1 ? orchestratorConfig({ ...this.env, ENDERCLOUD_NODE_ID: nodeId }) : this.config;
    const shared = this.shared;
    const two =
      shared === undefined
        ? {}
        : {
            store: cuttableStore(shared, () => {
              const r = this.replicas.find((x) => x.id === nodeId);
              return r !== undefined && this.isCut(r);
            }),
            changes: this.changes,
            leaderLease: { sole: false as const, now: () => this.clock.now() },
          };
    return buildOrchestrator(config, {
      ...two,
      clock: this.clock,
      logger: silent,
      agentTransport: this.agents,
      random: rng(this.seed ^ 0xc0ffee),
      runWorker: false,
      runOfflineDetector: false,
      timers: this.timers,
      // A command that waits holds the worker while the simulated time passes (batch size 1).
      sleep: async (ms) => this.clock.advance(ms),
      runProvisioner: false,
      runBackupScheduler: false,
      generateSecret: () => createHash('sha256').update(`${this.seed}-${++this.secretSeq}`).digest('base64url').slice(0, 24),
    });
  }

  async close(): Promise<void> {
    for (const r of this.replicas) await r.o.stop().catch(() => undefined);
    await this.shared?.close().catch(() => undefined);
    this.restoreIds?.();
    if (this.dataDir) await rm(this.dataDir, { recursive: true, force: true });
  }

  // ---------------------------------------------------------------- API

  private async api(
    method: string,
    url: string,
    body?: unknown,
    token = ADMIN_TOKEN,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await this.o.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: { authorization: `Bearer ${token}`, 'x-request-id': `sim-${this.round}-${this.step}` },
      ...(body !== undefined ? { payload: body as object } : {}),
    });
    let parsed: Record<string, unknown> = {};
    try {
      parsed = res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {};
    } catch {
      parsed = { text: res.body };
    }
    return { status: res.statusCode, body: parsed };
  }

  private async must(method: string, url: string, body?: unknown): Promise<Record<string, unknown>> {
    const r = await this.api(method, url, body);
    if (r.status >= 300) throw new Error(`sim setup: ${method} ${url} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  }

  private async instances(): Promise<Instance[]> {
    return (await this.o.store.instances.list()).sort((a, b) => a.id.localeCompare(b.id));
  }

  // ---------------------------------------------------------------- time

  /** Each agent that is up beats when its interval has passed (an agent that just came back beats at once). */
  private async heartbeats(): Promise<void> {
    for (const host of this.agents.hosts.values()) {
      if (!host.agentUp) {
        this.lastBeat.delete(host.id);
        continue;
      }
      const last = this.lastBeat.get(host.id);
      if (last !== undefined && this.round - last < this.beatEveryRounds) continue;
      this.lastBeat.set(host.id, this.round);
      await this.o.app.inject({
        method: 'POST',
        url: `/api/v1/agents/${host.id}/heartbeat`,
        headers: { authorization: `Bearer ${AGENT_TOKEN}` },
        payload: this.agents.heartbeat(host, this.beatEveryRounds * ROUND_MS),
      });
    }
  }

  /** Each replica's worker claims and runs what is due (only the leader's claims anything). */
  private async drainWorker(): Promise<void> {
    for (const r of this.replicas) {
      await this.onReplica(r, 'worker', async (o) => {
        for (let n = 0; n < 40; n++) {
          const claimed = await o.worker.tick();
          await o.worker.whenIdle();
          if (claimed.length === 0) return;
        }
      });
    }
  }

  /** Where a run's wall time goes (`npm run sim -- --profile`). */
  readonly phases = new Map<string, number>();
  private async timed<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const t = performance.now();
    try {
      return await fn();
    } finally {
      this.phases.set(name, (this.phases.get(name) ?? 0) + performance.now() - t);
    }
  }

  /** The supervisor's timers that are due (its pass, readiness probes), and the commands they and anything before queued. */
  private async loops(): Promise<void> {
    for (let n = 0; n < 5; n++) {
      await this.drainWorker();
      await this.timers.fireDue(flush);
      const pending = await this.o.store.commands.list({ statuses: ['pending'] });
      if (!pending.some((c) => c.nextAttemptAt <= this.clock.now())) return;
    }
  }

  /** One round of simulated time: the loops in a fixed order, then the router and the invariants. */
  private async tickRound(): Promise<void> {
    this.round++;
    this.clock.advance(ROUND_MS);
    for (const [hostId, down] of [...this.downUntil]) {
      if (this.round < down.round) continue;
      const host = this.agents.hosts.get(hostId)!;
      if (down.machine) this.agents.returnMachine(host);
      else {
        host.agentUp = true;
        host.bootId = `${host.id}-boot-${this.round}`;
      }
      this.downUntil.delete(hostId);
      this.trace.push(`  round ${this.round}: host ${hostId} back`);
    }
    const before = new Map((await this.instances()).map((i) => [i.id, i]));
    const heldBefore = new Set([...before.values()].filter((i) => i.sessionId !== null).map((i) => i.id));
    const playedBefore = new Set([...this.players.values()].filter((p) => p.status === 'on').map((p) => p.instanceId));
    await this.timed('heartbeats', () => this.heartbeats());
    for (const r of this.replicas) {
      // A cut that ended: the replica is back on the database (its errors from now on are the orchestrator's).
      if (r.cutUntil !== null && this.round >= r.cutUntil) {
        r.cutUntil = null;
        this.trace.push(`  round ${this.round}: ${r.id} reaches the database again`);
      } else if (r.cutUntil === null) r.wasCut = false;
    }
    await this.timed('detector', () => this.eachReplica('detector', (o) => o.detector.sweep()));
    await this.timed('loops', () => this.loops());
    if (this.round % 2 === 1) {
      await this.timed('outlooks', () => this.readOutlooks());
      await this.timed('provisioner', () => this.eachReplica('provisioner', (o) => o.provisioner.tick()));
      await this.timed('idle-check', () => this.checkIdleActions());
      await this.timed('loops', () => this.loops());
    }
    if (this.round % 5 === 0) {
      await this.timed('backups', () => this.eachReplica('backups', (o) => o.ctx.backupScheduler.tick()));
      await this.timed('loops', () => this.loops());
    }
    const leader = this.leaderReplica();
    const view = leader ? `${leader.id} (epoch ${leader.o.leadership.epoch()})` : 'none';
    if (this.replicas.length > 1 && view !== this.leaderSeen) this.trace.push(`  round ${this.round}: leader ${view}`);
    this.leaderSeen = view;
    await this.timed('router', () => this.routerRound());
    await this.timed('invariants', () => this.checkInvariants(before, heldBefore, playedBefore));
    this.touched.clear();
  }

  private async eachReplica(what: string, fn: (o: Orchestrator) => Promise<unknown>): Promise<void> {
    for (const r of this.replicas) await this.onReplica(r, what, fn);
  }

  private async settle(rounds: number): Promise<void> {
    for (let n = 0; n < rounds && !this.violation; n++) await this.tickRound();
  }

  // ---------------------------------------------------------------- the router

  private async report(events: RouterSessionEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.api('POST', '/router/sessions', { routerId: 'sim-router', events }, this.routerToken);
  }

  private event(type: RouterSessionEvent['type'], p: Player): RouterSessionEvent {
    return {
      type,
      id: p.sessionId,
      player: p.name,
      uuid: null,
      instanceId: p.instanceId,
      backend: p.instanceId,
      at: new Date(this.clock.now()).toISOString(),
    };
  }

  private async routerRound(): Promise<void> {
    const snapshot = await this.o.ctx.registry.snapshot();
    const status = new Map(snapshot.backends.map((b) => [b.instanceId, b.status]));
    const events: RouterSessionEvent[] = [];
    for (const p of [...this.players.values()]) {
      const s = status.get(p.instanceId);
      if (p.status === 'waiting') {
        if (s === 'Running') {
          p.status = 'on';
          events.push(this.event('login', p));
        } else if (this.round - p.joinedRound > WAKE_BOUND_ROUNDS) {
          const hostId = (await this.o.store.instances.get(p.instanceId))?.hostId;
          // A fault armed on the host before the world was placed there (a pull that fails) explains it too.
          if (!this.faulted.has(p.instanceId) && !(hostId && this.faulted.has(hostId)) && !this.wasTouched(p.instanceId)) {
            this.fail(
              'wake-bound',
              `player ${p.name} joined ${p.groupId} → ${p.instanceId} at round ${p.joinedRound}; still ${s ?? 'not in the registry'} ${this.round - p.joinedRound} rounds later`,
            );
          }
          this.players.delete(p.name);
        }
      } else if (s !== 'Running' && s !== 'Draining') {
        // The connection went with the world (stopped, lost, deleted): the router reports it.
        events.push(this.event('disconnect', p));
        this.players.delete(p.name);
      }
    }
    await this.report(events);
  }

  private touchedEver = new Set<string>();
  private wasTouched(id: string): boolean {
    return this.touchedEver.has(id);
  }

  /** An operator is about to act on the instance: its players leave first (the operator's call), and it is excused. */
  private async operatorTouches(id: string): Promise<void> {
    this.touched.add(id);
    this.touchedEver.add(id);
    await this.report(
      [...this.players.values()]
        .filter((p) => p.instanceId === id)
        .map((p) => {
          this.players.delete(p.name);
          return this.event('disconnect', p);
        }),
    );
  }

  private async hostFault(host: SimHost): Promise<void> {
    this.faulted.add(host.id);
    for (const c of host.containers.keys()) this.faulted.add(c);
    for (const i of await this.instances()) if (i.hostId === host.id) this.faulted.add(i.id);
  }

  // ---------------------------------------------------------------- steps

  private pick<T>(list: readonly T[], x: number): T | undefined {
    return list.length === 0 ? undefined : list[Math.floor(x * list.length) % list.length];
  }

  /** A replica's process restarts over the same data: a leader resigns on the way out, so the other takes over. */
  private async restartReplica(r: Replica): Promise<void> {
    await r.o.stop().catch(() => undefined);
    r.o = await this.boot(r.id);
  }

  private async replicaFault(step: Step, index: number): Promise<void> {
    const f = step.replica;
    if (!f || this.replicas.length < 2) return;
    const leader = this.leaderReplica();
    if (f.kind === 'leader-change') {
      if (!leader || this.isCut(leader)) return;
      await this.restartReplica(leader);
      const now = this.leaderReplica();
      this.trace.push(
        `step ${index}: leader ${leader.id} restarted; leader now ${now?.id ?? 'none'} (epoch ${now?.o.leadership.epoch() ?? '-'})`,
      );
      return;
    }
    if (this.replicas.some((r) => this.isCut(r))) return;
    const target = f.pick < 0.6 ? (leader ?? this.replicas[0]!) : (this.replicas.find((r) => r !== leader) ?? this.replicas[1]!);
    target.cutUntil = this.round + f.rounds;
    target.wasCut = true;
    target.failureTraced = false;
    this.trace.push(`step ${index}: ${target.id}${target === leader ? ' (leader)' : ''} cut from the database for ${f.rounds} rounds`);
  }

  async apply(step: Step, index: number): Promise<void> {
    this.step = index;
    await this.replicaFault(step, index);
    const all = await this.instances();
    const target = this.pick(all, step.pick);
    const note = (what: string) => this.trace.push(`step ${index}: ${describeStep(step)} ${what}`);
    const act = async (method: string, url: string, body?: unknown) => {
      const r = await this.api(method, url, body);
      note(`→ ${method} ${url} ${r.status}${r.status >= 400 ? ` ${String((r.body.error as { code?: string } | undefined)?.code)}` : ''}`);
      return r;
    };
    switch (step.kind) {
      case 'create':
        await act('POST', '/instances', { groupId: 'survival', variantId: 'main' });
        break;
      case 'start':
      case 'resume':
      case 'pause':
      case 'restart':
      case 'stop':
        if (target) {
          await this.operatorTouches(target.id);
          await act('POST', `/instances/${target.id}/${step.kind}`, step.kind === 'stop' ? {} : undefined);
        }
        break;
      case 'stop-backup':
        if (target) {
          await this.operatorTouches(target.id);
          await act('POST', `/instances/${target.id}/stop`, {
            backup: true,
            failurePolicy: step.variant < 0.5 ? 'abort_stop' : 'stop_without_backup',
          });
        }
        break;
      case 'delete':
        if (target) {
          await this.operatorTouches(target.id);
          const scopes = [['container'], ['technical'], ['container', 'player_data'], ['technical', 'player_data', 'backups']][
            Math.floor(step.variant * 4)
          ]!;
          const r = await act('DELETE', `/instances/${target.id}`, {
            scopes,
            ...(scopes.includes('player_data') ? { confirm: target.name } : {}),
          });
          if (r.status < 300 && scopes.includes('player_data')) this.wiped.add(target.id);
        }
        break;
      case 'update':
        if (target) {
          await this.operatorTouches(target.id);
          await act('POST', `/instances/${target.id}/update`, {
            image: step.variant < 0.5 ? 'sim/game:2' : 'sim/game:1',
            confirm: true,
            backup: step.variant < 0.25,
          });
        }
        break;
      case 'backup':
        if (target) await act('POST', `/instances/${target.id}/backup`, { reason: 'sim', stop: step.variant < 0.3 });
        break;
      case 'restore':
        if (target) {
          const list = await this.api('GET', `/instances/${target.id}/backups`);
          const backups = (list.body.backups as { backupId: string }[] | undefined) ?? [];
          const b = this.pick(backups, step.variant);
          if (b) {
            await this.operatorTouches(target.id);
            await act('POST', `/instances/${target.id}/restore`, { backupId: b.backupId, confirm: target.name });
          } else note('(no backup)');
        }
        break;
      case 'settings':
        if (target) {
          await this.operatorTouches(target.id);
          await act('PATCH', `/instances/${target.id}/settings`, {
            settings: { MOTD: `motd-${index}` },
            mode: step.variant < 0.5 ? 'immediate' : 'next_start',
          });
        }
        break;
      case 'idle-tiers':
        if (target) await act('PUT', `/instances/${target.id}/idle-tiers`, { idleTiers: this.pick(TIER_SETS, step.variant) });
        break;
      case 'group-idle-tiers':
        await act('PUT', `/groups/${this.pick(GROUPS, step.pick)}/idle-tiers`, { idleTiers: this.pick(TIER_SETS, step.variant) });
        break;
      case 'system-idle-tiers':
        await act('PUT', '/system/idle-tiers', {
          idleTiers: this.pick(
            TIER_SETS.filter((t) => t !== null),
            step.variant,
          ),
        });
        break;
      case 'scaling': {
        const scaling = this.pick(SCALINGS, step.variant)!;
        await act('PUT', '/groups/lobby', {
          kind: 'ephemeral',
          caps: { maxInstances: step.pick < 0.5 ? 5 : 3 },
          variants: [{ id: 'main', template: { name: 'sim', version: '1' }, env: {} }],
          scaling,
        });
        break;
      }
      case 'spawn':
        await act('POST', '/groups/lobby/spawn', {});
        break;
      case 'despawn': {
        const lobby = all.filter((i) => i.groupId === 'lobby');
        const t = this.pick(lobby, step.pick);
        if (t) {
          await this.operatorTouches(t.id);
          await act('POST', `/instances/${t.id}/despawn`, { timeout: '5s', force: step.variant < 0.3 });
        }
        break;
      }
      case 'join': {
        const groupId = this.pick(GROUPS, step.variant)!;
        const name = `p${++this.playerSeq}`;
        const r = await this.api('POST', `/router/groups/${groupId}/join`, { player: name }, this.routerToken);
        note(`→ join ${groupId} ${r.status} ${JSON.stringify(r.body)}`);
        if (r.status === 200) {
          const answer = r.body as unknown as GroupJoinAnswer;
          this.players.set(name, {
            name,
            groupId,
            instanceId: answer.instanceId,
            sessionId: `s${++this.sessionSeq}`,
            status: 'waiting',
            joinedRound: this.round,
          });
        }
        break;
      }
      case 'leave': {
        const on = [...this.players.values()].filter((p) => p.status === 'on');
        const p = this.pick(on, step.pick);
        if (p) {
          this.players.delete(p.name);
          await this.report([this.event('disconnect', p)]);
          note(`→ ${p.name} left ${p.instanceId}`);
        }
        break;
      }
      case 'allocate': {
        const r = await act('POST', '/groups/lobby/allocations', {});
        if (r.status === 201) this.allocations.push(r.body.allocationId as string);
        break;
      }
      case 'release': {
        const a = this.pick(this.allocations, step.pick);
        if (a) {
          this.allocations = this.allocations.filter((x) => x !== a);
          await act('DELETE', `/allocations/${a}`);
        }
        break;
      }
      case 'kill-agent':
      case 'lose-host': {
        const host = this.pick(
          [...this.agents.hosts.values()].filter((h) => h.agentUp),
          step.pick,
        );
        if (!host) break;
        await this.hostFault(host);
        const machine = step.kind === 'lose-host';
        if (machine) this.agents.loseMachine(host);
        else host.agentUp = false;
        // Killed briefly (a restart) or for long enough to be marked OFFLINE.
        const rounds = step.variant < 0.5 ? 2 : 8 + Math.floor(step.variant * 20);
        this.downUntil.set(host.id, { round: this.round + rounds, machine });
        if (machine) {
          await this.report(
            [...this.players.values()]
              .filter((p) => host.containers.has(p.instanceId) || this.faulted.has(p.instanceId))
              .map((p) => {
                this.players.delete(p.name);
                return this.event('disconnect', p);
              }),
          );
        }
        note(`→ ${host.id} down for ${rounds} rounds`);
        break;
      }
      case 'slow-agent':
      case 'lose-answers':
      case 'port-taken':
      case 'pull-fails':
      case 'disk-full': {
        const host = this.pick([...this.agents.hosts.values()], step.pick)!;
        await this.hostFault(host);
        const f = host.faults;
        if (step.kind === 'slow-agent') f.slowMs = step.variant < 0.3 ? 0 : Math.floor(step.variant * 300);
        if (step.kind === 'lose-answers') f.lostAnswers += 1 + Math.floor(step.variant * 2);
        if (step.kind === 'port-taken') f.portTaken += 1;
        if (step.kind === 'pull-fails') f.pullFails += 1;
        if (step.kind === 'disk-full') f.diskFull += 1 + Math.floor(step.variant * 2);
        note(`→ ${host.id} ${JSON.stringify(f)}`);
        break;
      }
      case 'crash': {
        const host = this.pick(
          [...this.agents.hosts.values()].filter((h) => [...h.containers.values()].some((c) => c.state === 'running')),
          step.pick,
        );
        const c = host
          ? this.pick(
              [...host.containers.values()].filter((x) => x.state === 'running'),
              step.variant,
            )
          : undefined;
        if (host && c) {
          this.faulted.add(c.instanceId);
          this.agents.crash(host, c.instanceId);
          await this.report(
            [...this.players.values()]
              .filter((p) => p.instanceId === c.instanceId)
              .map((p) => {
                this.players.delete(p.name);
                return this.event('disconnect', p);
              }),
          );
          note(`→ ${c.instanceId} on ${host.id} exited`);
        }
        break;
      }
      case 'restart-orchestrator': {
        // A replica cut from the database would not come up (its start needs the store): only one that reaches it restarts.
        const r = this.pick(
          this.replicas.filter((x) => !this.isCut(x)),
          step.variant,
        )!;
        await this.restartReplica(r);
        note(`→ orchestrator ${r.id} restarted`);
        break;
      }
      case 'wait':
        note('');
        break;
    }
    await this.settle(Math.max(1, Math.round(step.advanceMs / ROUND_MS)));
  }

  // ---------------------------------------------------------------- invariants

  private fail(invariant: string, message: string): void {
    this.violation ??= { invariant, message, step: this.step };
  }

  get failed(): Violation | null {
    return this.violation;
  }

  /** Every instance's history and commands, for a failure's report. */
  async explain(): Promise<string[]> {
    const lines: string[] = [];
    for (const i of await this.instances()) {
      lines.push(`instance ${i.id} (${i.groupId}) on ${i.hostId ?? '-'}: ${i.state}${i.sessionId ? ` allocated ${i.sessionId}` : ''}`);
      for (const h of (await this.o.store.history.list(i.id, { limit: 40 })).reverse()) {
        lines.push(`  ${new Date(h.at).toISOString().slice(11, 23)} ${h.from ?? '-'} → ${h.to} by ${h.actor ?? '-'}: ${h.reason}`);
      }
      for (const c of await this.o.store.commands.list({ instanceId: i.id })) {
        lines.push(`  command ${c.id} ${c.kind} ${c.status} attempts=${c.attempts}${c.lastError ? ` ${c.lastError.slice(0, 160)}` : ''}`);
      }
    }
    return lines;
  }

  private async readOutlooks(): Promise<void> {
    this.outlook.clear();
    for (const g of GROUPS) {
      const r = await this.api('GET', `/groups/${g}/fleet`);
      for (const i of (r.body.instances as { id: string; next: { action: string; dueAt: string; tier: string } | null }[] | undefined) ??
        [])
        this.outlook.set(i.id, i.next);
    }
  }

  /** The countdown shown equals the tier that fires: every idle action the provisioner took was the one the fleet view showed as due. */
  private async checkIdleActions(): Promise<void> {
    const entries = (await this.o.store.audit.list({ limit: 100 })).filter((e) => e.id > this.lastAuditId).reverse();
    for (const e of entries) {
      this.lastAuditId = Math.max(this.lastAuditId, e.id);
      if (e.action !== 'instance.idle' || !e.targetId) continue;
      const shown = this.outlook.get(e.targetId);
      const action = String(e.params.action);
      if (!shown)
        this.fail('countdown', `the provisioner applied idle ${action} to ${e.targetId} while its fleet view showed no tier ahead`);
      else if (shown.action !== action)
        this.fail(
          'countdown',
          `the provisioner applied idle ${action} to ${e.targetId}; its fleet view showed ${shown.action} (tier ${shown.tier})`,
        );
      else if (Date.parse(shown.dueAt) > this.clock.now())
        this.fail(
          'countdown',
          `idle ${action} of ${e.targetId} fired at ${new Date(this.clock.now()).toISOString()}, before the ${shown.dueAt} shown`,
        );
    }
  }

  private async checkInvariants(before: Map<string, Instance>, heldBefore: Set<string>, playedBefore: Set<string>): Promise<void> {
    const now = await this.instances();
    const groups = new Map((await this.o.store.groups.list()).map((g) => [g.id, g]));
    // Caps: a group (or the cloud) over its limit never grows.
    const counts = new Map<string, number>();
    for (const i of now) if (i.state !== 'archived') counts.set(i.groupId, (counts.get(i.groupId) ?? 0) + 1);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    for (const [groupId, n] of counts) {
      const g = groups.get(groupId);
      const caps = [g?.caps.maxInstances, (g?.scaling as { maxInstances?: number } | null | undefined)?.maxInstances].filter(
        (x): x is number => typeof x === 'number',
      );
      const cap = Math.min(...caps);
      if (n > cap && n > (this.groupCount.get(groupId) ?? 0))
        this.fail('caps', `group ${groupId} grew to ${n} instances, over its limit ${cap}`);
    }
    if (total > MAX_TOTAL && total > this.total)
      this.fail('caps', `the cloud grew to ${total} instances, over ENDERCLOUD_MAX_INSTANCES=${MAX_TOTAL}`);
    this.groupCount = counts;
    this.total = total;

    const byId = new Map(now.map((i) => [i.id, i]));
    for (const [id, prev] of before) {
      const cur = byId.get(id);
      const curState = cur?.state ?? 'deleted';
      // A backup, restore or update returns the world to where it was: a stopped world's backup does not put it to sleep.
      const was = (TRANSIT as readonly string[]).includes(prev.state) ? (this.settled.get(id) ?? prev.state) : prev.state;
      const wentToSleep =
        !(SLEEPY as readonly string[]).includes(was) && ((SLEEPY as readonly string[]).includes(curState) || curState === 'deleted');
      if (!wentToSleep || this.touched.has(id) || this.faulted.has(id)) continue;
      if (heldBefore.has(id) && cur?.sessionId !== null)
        this.fail('allocated', `allocated instance ${id} went ${prev.state} → ${curState}`);
      if (playedBefore.has(id) && [...this.players.values()].some((p) => p.instanceId === id))
        this.fail('players', `instance ${id} with a player on it went ${prev.state} → ${curState}`);
    }
    for (const i of now) {
      if (FAILED.includes(i.state) && !this.faulted.has(i.id) && !(i.hostId && this.faulted.has(i.hostId))) {
        this.fail('unexplained-failure', `instance ${i.id} is ${i.state} (${i.stateReason ?? ''}) with no fault on it or its host`);
      }
    }
    for (const i of now) if (!(TRANSIT as readonly string[]).includes(i.state)) this.settled.set(i.id, i.state);
    if (this.agents.twice.length > 0) this.fail('once', this.agents.twice[0]!);
    await this.checkData(now, groups);
  }

  /** No persistent world's data is lost: its directory is on some host, or a verified backup is in the store. */
  private async checkData(now: Instance[], groups: Map<string, { kind: string }>): Promise<void> {
    const created = new Set(this.agents.effects.filter((e) => e.verb === 'create').map((e) => e.instanceId));
    for (const i of now) {
      if (groups.get(i.groupId)?.kind !== 'persistent' || !created.has(i.id) || this.wiped.has(i.id) || i.state === 'deleting') continue;
      if ([...this.agents.hosts.values()].some((h) => h.data.has(i.id))) continue;
      let verified = false;
      for (const b of await this.o.store.storedBackups.listForInstance(i.id)) {
        const file = path.join(this.o.ctx.backupStore.dir, b.storedPath);
        const bytes = await stat(file).then(
          () => readFile(file),
          () => undefined,
        );
        if (bytes && createHash('sha256').update(bytes).digest('hex') === b.sha256) verified = true;
      }
      if (!verified)
        this.fail('data', `persistent instance ${i.id} (${i.state}) has no world directory on any host and no verified backup`);
    }
  }
}

/** Runs the steps of one seed (all of them, or only those whose index is in `keep`). */
export async function runSteps(seed: number, steps: Step[]): Promise<RunResult> {
  const sim = new Simulation(seed);
  try {
    await sim.setup();
    for (const [n, step] of steps.entries()) {
      await sim.apply(step, n);
      if (sim.failed) break;
    }
    const state = await sim.explain();
    const digest = createHash('sha256').update(state.join('\n')).digest('hex');
    return { seed, steps, violation: sim.failed, trace: sim.trace, state: sim.failed ? state : [], digest };
  } finally {
    await sim.close();
  }
}
