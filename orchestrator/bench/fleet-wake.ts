// Bench:fleet parts (c) and (d), in one loop of alternating rounds on the same
// fleet member (a `group:` router target whose only member sleeps) and the same
// raw container of the same image:
// (c) paused → Login Success through the router vs raw `docker unpause` + a
//     login straight to the container;
// (d) stopped → Login Success through the router (the join starts the member
//     and the router holds the login until it is Running: docs/router.md) vs
//     raw `docker start` + a ready status ping + a login straight to it.
// Every pause and stop is of an empty world that has worked through its
// previous logins (bench/wake-probe.ts says why); round 0 is not counted.

import { writeFileSync } from 'node:fs';
import type { Stack } from '../test/support/router-stack.js';
import { benchConfig } from './bench-config.js';
import { asleepLogin, runningLogin, startRawWake, type RawStages } from './wake-probe.js';

/** An API call that must succeed (status < 300); its body. */
export async function must<T>(stack: Stack, method: string, path: string, body?: unknown): Promise<T> {
  const r = await stack.api<T>(method, `/api/v1${path}`, body);
  if (r.status >= 300) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Where a routed wake or cold start goes, in ms from the login's TCP connect. */
export interface ActionStages {
  commandCreated: number;
  agentCalled: number;
  agentAnswered: number;
  online: number;
  feedRunning: number;
  routerRunning: number;
  loginSuccess: number;
}

export interface WakeSamples {
  /** (c): the routed login, its stages, the same login to the Running member, the raw unpause + login. */
  wake: number[];
  wakeStages: ActionStages[];
  warm: number[];
  rawUnpause: RawStages[];
  /** (d): the routed login of the stopped member, its stages, the raw start + login. */
  cold: number[];
  coldStages: ActionStages[];
  rawStart: RawStages[];
  /** Each counted routed login, connect → Login Success, in µs of the monotonic clock (BENCH_FLEET_WINDOWS). */
  windows: { part: 'c' | 'd'; round: number; startUs: number; endUs: number }[];
}

/** performance.now() ms → µs of the monotonic clock a CPU profile's timestamps use. */
function monotonicUs(perfMs: number): number {
  const offsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  return Math.round(offsetUs + perfMs * 1000);
}

/** The command of `kind` and agent call ending in `agentPath` behind the last login's wake or start, timed from its connect. */
async function actionStages(
  stack: Stack,
  id: string,
  kind: 'resume' | 'start',
  agentPath: string,
  login: { connectedAt: number; feedRunningAt: number; runningAt: number; ms: number },
  epochAt: number,
): Promise<ActionStages> {
  const connectedAt = epochAt + login.connectedAt;
  const store = stack.orchestrator.store;
  const [cmd] = (await store.commands.list({ instanceId: id })).filter((c) => c.kind === kind).sort((a, b) => b.createdAt - a.createdAt);
  const [online] = (await store.history.list(id, { limit: 5 })).filter((h) => h.to === 'online');
  const url = (l: Record<string, unknown>): string | undefined => (l.req as { url?: unknown } | undefined)?.url as string | undefined;
  const call = stack.agent.logLines.filter((l) => typeof url(l) === 'string' && url(l)!.endsWith(`/${id}${agentPath}`)).at(-1);
  const done = call ? stack.agent.logLines.find((l) => l.requestId === call.requestId && l.msg === 'request completed') : undefined;
  const at = (t: unknown): number => (typeof t === 'number' ? t - connectedAt : Number.NaN);
  return {
    commandCreated: at(cmd?.createdAt),
    agentCalled: at(call?.time),
    agentAnswered: at(done?.time),
    online: at(online?.at),
    feedRunning: login.feedRunningAt - login.connectedAt,
    routerRunning: login.runningAt - login.connectedAt,
    loginSuccess: login.ms,
  };
}

/**
 * What the orchestrator and the agent did to `id` since `since` (epoch ms): its history, its
 * commands and the agent's requests for it, one line each, so a failed round says what happened.
 */
async function diagnose(stack: Stack, id: string, since: number): Promise<string> {
  const store = stack.orchestrator.store;
  const t = (at: number): string => `+${at - since} ms`;
  const history = (await store.history.list(id, { limit: 20 }))
    .filter((h) => h.at >= since)
    .reverse()
    .map((h) => `  history ${t(h.at)} ${h.from ?? '-'} → ${h.to} by ${h.actor ?? '-'} (${h.commandId ?? 'no command'}): ${h.reason}`);
  const commands = (await store.commands.list({ instanceId: id }))
    .filter((c) => c.createdAt >= since)
    .sort((a, b) => a.createdAt - b.createdAt)
    .map(
      (c) =>
        `  command ${t(c.createdAt)} ${c.id} ${c.kind} ${c.status} attempts ${c.attempts}${c.lastError ? ` last error: ${c.lastError}` : ''} (request ${c.requestId})`,
    );
  const agent = stack.agent.logLines
    .filter((l) => typeof l.time === 'number' && l.time >= since && JSON.stringify(l).includes(id))
    .map(
      (l) =>
        `  agent ${t(l.time as number)} ${String(l.msg)} ${JSON.stringify((l.req as { method?: string; url?: string } | undefined) ?? {})}`,
    );
  return [...history, ...commands, ...agent].join('\n');
}

/** A routed login that failed, with what happened to its instance (diagnose). */
async function explained<T>(stack: Stack, id: string, what: string, run: () => Promise<T>): Promise<T> {
  const since = Date.now();
  try {
    return await run();
  } catch (err) {
    throw new Error(
      `${what}: ${(err as Error).message}\n${await diagnose(stack, id, since - 1000).catch((e: unknown) => `  (no diagnosis: ${(e as Error).message})`)}`,
      { cause: err },
    );
  }
}

export async function wakeRounds(stack: Stack, group: string, rounds: number): Promise<WakeSamples> {
  const inst = await must<{ id: string; endpoint: { host: string; port: number } | null }>(stack, 'POST', `/groups/${group}/spawn`, {
    variantId: 'v',
    wait: '60s',
  });
  if (!inst.endpoint) throw new Error('the spawned member has no endpoint');
  let endpoint: { host: string; port: number } = inst.endpoint;
  const router = await stack.startRouter(`try = ["fleet"]\n[servers]\nfleet = "group:${group}"\n`);
  const raw = await startRawWake({ 'orchestrator.host': stack.hostId });
  const s: WakeSamples = { wake: [], wakeStages: [], warm: [], rawUnpause: [], cold: [], coldStages: [], rawStart: [], windows: [] };
  const epochAt = (): number => Date.now() - performance.now(); // performance.now() → epoch ms, for the store's and agent's times
  try {
    // Alternated round by round, so both see the same machine load; round 0 is not counted
    // (the first login into a fresh container pays its warm-up).
    for (let i = 0; i <= rounds; i++) {
      const counted = i > 0;
      let e = epochAt();
      const woke = await explained(stack, inst.id, `(c) round ${i}`, () =>
        asleepLogin(stack, router, inst.id, endpoint, `Fleet${i}`, 'pause'),
      );
      const wakeStages = await actionStages(stack, inst.id, 'resume', '/unpause', woke, e);
      endpoint = woke.endpoint;
      const warm = await runningLogin(router, endpoint, `Warm${i}`);
      const rawUnpause = await raw.unpauseLogin(`RawWake${i}`);
      e = epochAt();
      const cold = await explained(stack, inst.id, `(d) round ${i}`, () =>
        asleepLogin(stack, router, inst.id, endpoint, `Cold${i}`, 'stop'),
      );
      const coldStages = await actionStages(stack, inst.id, 'start', '/start', cold, e);
      endpoint = cold.endpoint;
      const rawStart = await raw.startLogin(`RawCold${i}`);
      if (!counted) continue;
      s.wake.push(woke.ms);
      s.wakeStages.push(wakeStages);
      s.warm.push(warm);
      s.rawUnpause.push(rawUnpause);
      s.cold.push(cold.ms);
      s.coldStages.push(coldStages);
      s.rawStart.push(rawStart);
      s.windows.push({ part: 'c', round: i, startUs: monotonicUs(woke.connectedAt), endUs: monotonicUs(woke.connectedAt + woke.ms) });
      s.windows.push({ part: 'd', round: i, startUs: monotonicUs(cold.connectedAt), endUs: monotonicUs(cold.connectedAt + cold.ms) });
    }
    if (benchConfig.fleetWindows) writeFileSync(benchConfig.fleetWindows, JSON.stringify(s.windows));
  } finally {
    await router.close();
    await raw.remove();
  }
  return s;
}

const stageOf = <T>(xs: T[], k: keyof T): string => median(xs.map((x) => x[k] as number)).toFixed(0);
/** Each round's stages, `a/b/c…` in ActionStages order (medians of stages mix rounds). */
const perRound = (xs: ActionStages[]): string =>
  xs
    .map((x) =>
      Object.values(x)
        .map((v: number) => v.toFixed(0))
        .join('/'),
    )
    .join(', ');

/** Prints (c) and (d): each figure beside its goal, then where the time goes. */
export function printWake(s: WakeSamples, rounds: number): { wakeDiff: number; coldRatio: number } {
  const wake = median(s.wake);
  const rawWake = median(s.rawUnpause.map((r) => r.loginSuccess));
  const cold = median(s.cold);
  const rawCold = median(s.rawStart.map((r) => r.loginSuccess));
  const seen = median(s.wakeStages.map((x) => x.routerRunning));
  console.log(
    `(c) paused-to-playable through the router (group: target, login → Login Success), N=${rounds} each (alternated with (d); each pause of an empty, idle world)`,
  );
  console.log(`    router login of a Paused fleet member                     median ${wake.toFixed(0)} ms`);
  console.log(`    raw docker unpause + login straight to it                 median ${rawWake.toFixed(0)} ms`);
  console.log(`    difference                                                ${(wake - rawWake).toFixed(0)} ms (goal <= +20 ms)`);
  console.log(
    `    per round (router / raw ms): ${s.wake.map((w, i) => `${w.toFixed(0)}/${s.rawUnpause[i]!.loginSuccess.toFixed(0)}`).join(', ')}`,
  );
  console.log(
    `    of which: login → router sees Running ${seen.toFixed(0)} ms; the same login to the Running member ${median(s.warm).toFixed(0)} ms (the backend's own login cost, through the router)`,
  );
  console.log(
    `    stages (median ms after the connect): resume command created ${stageOf(s.wakeStages, 'commandCreated')}, agent unpause called ${stageOf(s.wakeStages, 'agentCalled')}, unpause answered ${stageOf(s.wakeStages, 'agentAnswered')}, online ${stageOf(s.wakeStages, 'online')}, feed announces Running ${stageOf(s.wakeStages, 'feedRunning')}, router sees Running ${stageOf(s.wakeStages, 'routerRunning')}, Login Success ${stageOf(s.wakeStages, 'loginSuccess')}`,
  );
  console.log(`    per round: ${perRound(s.wakeStages)}`);
  console.log(
    `    raw stages (median ms after the unpause was sent): unpause answered ${stageOf(s.rawUnpause, 'answered')}, Login Success ${stageOf(s.rawUnpause, 'loginSuccess')}`,
  );
  console.log(
    `(d) stopped-to-playable through the router (group: target whose member is stopped: the join starts it, the login is held), N=${rounds} each (alternated with (c))`,
  );
  console.log(`    router login of a Stopped fleet member                    median ${cold.toFixed(0)} ms`);
  console.log(`    raw docker start + ready ping (every 5 ms) + login        median ${rawCold.toFixed(0)} ms`);
  console.log(`    ratio                                                     ${(cold / rawCold).toFixed(2)} (goal <= 1.2)`);
  console.log(
    `    per round (router / raw ms): ${s.cold.map((c, i) => `${c.toFixed(0)}/${s.rawStart[i]!.loginSuccess.toFixed(0)}`).join(', ')}`,
  );
  console.log(
    `    stages (median ms after the connect): start command created ${stageOf(s.coldStages, 'commandCreated')}, agent start called ${stageOf(s.coldStages, 'agentCalled')}, start answered ${stageOf(s.coldStages, 'agentAnswered')}, online ${stageOf(s.coldStages, 'online')}, feed announces Running ${stageOf(s.coldStages, 'feedRunning')}, router sees Running ${stageOf(s.coldStages, 'routerRunning')}, Login Success ${stageOf(s.coldStages, 'loginSuccess')}`,
  );
  console.log(`    per round: ${perRound(s.coldStages)}`);
  console.log(
    `    raw stages (median ms after the start was sent): start answered ${stageOf(s.rawStart, 'answered')}, first ready ping ${stageOf(s.rawStart, 'up')}, Login Success ${stageOf(s.rawStart, 'loginSuccess')}`,
  );
  return { wakeDiff: wake - rawWake, coldRatio: cold / rawCold };
}
