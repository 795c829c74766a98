// Executes a login's RoutePlan: route at once, hold while the WakeCoordinator
// wakes / starts / joins (bounded by wake_hold_timeout), park the player on the
// `[wake] fallback` and arrange the transfer back, or refuse with a message.

import { raceAbort, sleep } from './abort.js';
import type { ConnectionDeps } from './connection.js';
import type { Dialed } from './dialer.js';
import { loginMessageFor } from './local-status.js';
import type { ConnectionOutcome } from './metrics.js';
import type { LoginOutcome } from './outcome-log.js';
import { WakeFailed, type BackendTarget, type Player, type RoutePlan } from './resolver.js';

/** What the runner needs from the connection. */
export interface LoginContext {
  readonly deps: ConnectionDeps;
  readonly closedSignal: AbortSignal;
  readonly isEnded: boolean;
  dialCandidates(candidates: readonly BackendTarget[], timeoutMs?: number): Promise<Dialed | undefined>;
  pipe(dialed: Dialed, outcome?: LoginOutcome): void;
  disconnect(outcome: ConnectionOutcome, message: string, reason?: string): void;
  holding(instanceId: string): void;
}

const WAKE_REDIAL_INTERVAL_MS = 200;
export const DEFAULT_CAPACITY_REASON = 'Every world of this kind is busy.';

/** `{seconds}` in a message: the registry's estimate rounded up, else `unknownSeconds`. */
export function fillSeconds(template: string, expectedMs: number | null | undefined, unknownSeconds = 30): string {
  const seconds = expectedMs === null || expectedMs === undefined ? unknownSeconds : Math.max(1, Math.ceil(expectedMs / 1000));
  return template.replace(/\{seconds\}/g, String(seconds));
}

/** `{reason}` in `messages.capacity`: the orchestrator's reason ("survival is full (4 of 4 worlds).") or, when it gave none, a generic one. */
export function fillReason(template: string, reason: string | undefined): string {
  return template.replace(/\{reason\}/g, reason ?? DEFAULT_CAPACITY_REASON);
}

export async function runLoginPlan(plan: RoutePlan, ctx: LoginContext, player: Player): Promise<void> {
  const { messages } = ctx.deps;
  switch (plan.kind) {
    case 'route': {
      const dialed = await ctx.dialCandidates(plan.candidates);
      if (dialed) return ctx.pipe(dialed, 'routed');
      return ctx.disconnect('unreachable', messages.unreachable);
    }
    case 'status':
      return ctx.disconnect(
        plan.state === 'NoBackend' ? 'refused' : 'unreachable',
        loginMessageFor(plan.state, messages),
        plan.state === 'NoBackend' ? 'no_backend' : 'unreachable',
      );
    case 'refuse': {
      if (plan.start?.action) {
        const failed = await requestOnly(ctx, plan.start.instanceId, plan.start.action);
        if (failed) return refuseForFailure(ctx, failed);
      }
      return ctx.disconnect(plan.reason === 'starting' ? 'start_disconnect' : 'refused', plan.message, plan.reason);
    }
    case 'fallback': {
      if (plan.action) {
        const failed = await requestOnly(ctx, plan.instanceId, plan.action);
        if (failed) return refuseForFailure(ctx, failed);
      }
      return parkOnFallback(ctx, player, plan.instanceId, plan.candidates, 'world starts later than the hold');
    }
    case 'wake':
    case 'hold':
    case 'join-group':
      return hold(ctx, plan, player);
  }
}

/** Sends a start without waiting; the failure, if any. */
async function requestOnly(ctx: LoginContext, instanceId: string, action: 'resume' | 'start'): Promise<WakeFailed | undefined> {
  const wakes = ctx.deps.wakes;
  if (!wakes) return new WakeFailed('unreachable', 'no orchestrator configured');
  try {
    await wakes.request(instanceId, action);
    return undefined;
  } catch (err) {
    return err instanceof WakeFailed ? err : new WakeFailed('unreachable', (err as Error).message);
  }
}

function refuseForFailure(ctx: LoginContext, failure: WakeFailed): void {
  const { messages, logger } = ctx.deps;
  logger.info({ err: failure.message, reason: failure.reason }, 'orchestrator did not accept the wake');
  // A `group:` entry naming a group the orchestrator does not have: nothing is configured there, truly.
  if (failure.upstream.code === 'GROUP_NOT_FOUND') return ctx.disconnect('refused', messages.noBackend, 'no_backend');
  if (failure.reason === 'refused') return ctx.disconnect('refused', `${messages.wakeRefused} ${failure.message}`.trim(), 'wake_refused');
  if (failure.reason === 'capacity')
    return ctx.disconnect('refused', fillReason(messages.capacity, failure.upstream.playerMessage), 'capacity');
  return ctx.disconnect('unreachable', messages.unreachable, 'unreachable');
}

/** Holds the login while the instance wakes (or the group join is served), bounded by wake_hold_timeout. */
async function hold(ctx: LoginContext, plan: Extract<RoutePlan, { kind: 'wake' | 'hold' | 'join-group' }>, player: Player): Promise<void> {
  const { metrics, wakes, limits, clock, timers, messages } = ctx.deps;
  if (!wakes) return ctx.disconnect('unreachable', messages.unreachable);
  const started = clock.now();
  const deadline = started + limits.wakeHoldTimeoutMs;
  const holdEnd = new AbortController();
  const holdTimer = timers.setTimeout(() => holdEnd.abort(), limits.wakeHoldTimeoutMs);
  const signal = AbortSignal.any([holdEnd.signal, ctx.closedSignal]);
  const label = plan.kind === 'join-group' ? plan.name : plan.target.name;
  let instanceId = plan.kind === 'join-group' ? undefined : plan.instanceId;
  if (instanceId) ctx.holding(instanceId);
  // A Paused world is dialled as its wake begins (its socket accepts into the backlog), so the
  // connection is ready when it is Running; the login itself is forwarded only then.
  let early = plan.kind === 'wake' && plan.action === 'resume' ? dialEarly(ctx, plan.target) : undefined;
  // Parked before the group join answered: the late answer still brings them back, once they are on the fallback.
  let late: { parked: boolean; instanceId?: string } | undefined;
  try {
    let target: BackendTarget;
    if (plan.kind === 'join-group') {
      const picked = (id: string, paused?: BackendTarget): void => {
        if (late) {
          if (late.parked) wakes.returnWhenOnline(player, id, ctx.closedSignal);
          else late.instanceId = id;
          return;
        }
        instanceId = id;
        ctx.holding(id);
        if (paused && !early) early = dialEarly(ctx, paused);
      };
      target = await raceAbort(wakes.joinGroup(plan.groupId, plan.name, player, signal, picked), signal);
      if (target.instanceId && target.instanceId !== instanceId) picked(target.instanceId);
    } else {
      await raceAbort(wakes.wake(plan.instanceId, plan.kind === 'wake' ? plan.action : null, signal), signal);
      target = plan.target;
    }
    let dialed = early ? await usable(early, target) : undefined;
    early = undefined;
    while (!dialed && !ctx.isEnded && clock.now() < deadline) {
      dialed = await ctx.dialCandidates([target], Math.max(50, Math.min(limits.backendDialTimeoutMs, deadline - clock.now())));
      if (!dialed) await sleep(WAKE_REDIAL_INTERVAL_MS, signal, timers);
    }
    if (!dialed) throw new WakeFailed('timeout', 'backend did not accept connections before the hold ended');
    const seconds = (clock.now() - started) / 1000;
    metrics.wakes.inc({ result: 'ok' });
    metrics.wakeSeconds.observe(seconds);
    metrics.targetWakes.inc({ target: label, result: 'ok' });
    metrics.targetWakeSeconds.observe({ target: label }, seconds);
    return ctx.pipe(dialed, plan.kind === 'hold' ? 'held' : 'woke');
  } catch (err) {
    if (ctx.isEnded) return;
    const failure =
      err instanceof WakeFailed ? err : new WakeFailed(holdEnd.signal.aborted ? 'timeout' : 'unreachable', (err as Error).message);
    metrics.targetWakes.inc({ target: label, result: failure.reason });
    if (failure.reason !== 'timeout' && failure.reason !== 'capacity') return refuseForFailure(ctx, failure);
    metrics.wakes.inc({ result: 'timeout' });
    if (plan.fallback && plan.fallback.length > 0) {
      // A join the orchestrator has not answered yet goes on (its own, longer timeout): its instance is watched once it answers.
      if (plan.kind !== 'join-group' || instanceId !== undefined)
        return parkOnFallback(ctx, player, instanceId, plan.fallback, failure.message);
      const answer: { parked: boolean; instanceId?: string } = { parked: false };
      late = answer;
      await parkOnFallback(ctx, player, undefined, plan.fallback, failure.message);
      answer.parked = true;
      if (answer.instanceId !== undefined) wakes.returnWhenOnline(player, answer.instanceId, ctx.closedSignal);
      return;
    }
    if (failure.reason === 'capacity') return refuseForFailure(ctx, failure);
    ctx.deps.logger.info({ instance: instanceId, err: failure.message }, 'wake did not complete in the hold window');
    const expected = instanceId ? wakes.expectedStartMs(instanceId) : null;
    return ctx.disconnect('wake_timeout', fillSeconds(messages.wakeTimeout, expected, 10), 'wake_timeout');
  } finally {
    timers.clearTimeout(holdTimer);
    // Not used (the hold failed or the player left): the early connection is closed unused.
    void early?.then((d) => d?.socket.destroy());
  }
}

/** Dials `target` now; undefined when it does not answer. The idle socket gets an error listener until it is piped. */
function dialEarly(ctx: LoginContext, target: BackendTarget): Promise<Dialed | undefined> {
  return ctx.dialCandidates([target]).then(
    (d) => {
      d?.socket.on('error', () => d.socket.destroy());
      return d;
    },
    () => undefined,
  );
}

/** The early connection if it is still open and goes where the Running world is; otherwise closed, and undefined (dial again). */
async function usable(early: Promise<Dialed | undefined>, target: BackendTarget): Promise<Dialed | undefined> {
  const d = await early;
  if (d && !d.socket.destroyed && d.socket.readyState === 'open' && d.target.host === target.host && d.target.port === target.port)
    return d;
  d?.socket.destroy();
  return undefined;
}

/** Sends the player to the fallback now; once their world is online the orchestrator moves them back. */
async function parkOnFallback(
  ctx: LoginContext,
  player: Player,
  instanceId: string | undefined,
  candidates: BackendTarget[],
  why: string,
): Promise<void> {
  const dialed = await ctx.dialCandidates(candidates);
  if (!dialed) return ctx.disconnect('unreachable', ctx.deps.messages.unreachable);
  ctx.deps.logger.info({ player: player.name, instance: instanceId, fallback: dialed.target.name, why }, 'player parked on the fallback');
  ctx.pipe(dialed, 'fallback');
  if (instanceId && ctx.deps.wakes) ctx.deps.wakes.returnWhenOnline(player, instanceId, ctx.closedSignal);
}
