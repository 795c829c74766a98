// The idle clock and the idle-tier decision, pure. Idle means zero logged-in
// players for a time *in a row*: every login restarts the clock (CloudNet's
// counter never reset and summed idle time; that is the bug avoided here).
// Only the router's session reports and the probe's player count are inputs:
// a client's status ping, legacy ping or port scan is not representable here,
// so it can never count as activity or wake anything.

import type { EpochMs, IdleClock, InstanceState } from '../domain/index.js';
import type { IdleAction, IdleTier } from './scaling-policy.js';

/** What the router reported for one instance since its previous report. */
export interface RouterPresence {
  at: EpochMs;
  /** Logged-in players on the instance now. */
  playersOnline: number;
  /** Login and logout times since the previous report (order irrelevant). */
  logins: readonly EpochMs[];
  logouts: readonly EpochMs[];
}

/** The player count the readiness probe read from the server itself. */
export interface ProbePresence {
  at: EpochMs;
  playersOnline: number;
}

export interface PresenceObservation {
  router?: RouterPresence;
  probe?: ProbePresence;
}

export type { IdleClock } from '../domain/scaling.js';

/** The clock of an instance that became online (empty) at `since`. */
export function startIdleClock(since: EpochMs): IdleClock {
  return { emptySince: since, lastLoginAt: null, playersOnline: 0, router: null, probe: null };
}

/** The latest time, clamped to now: a skewed router clock still restarts the run, just not in the future. */
const latest = (times: readonly EpochMs[], now: EpochMs): EpochMs | null => {
  let max: EpochMs | null = null;
  for (const t of times) if (max === null || t > max) max = t;
  return max === null ? null : Math.min(max, now);
};

/**
 * Advances the clock by one observation. A probe count > 0 is presence even
 * when the router saw nobody (a player who came in around the router). When
 * the count falls to zero, the run starts at the latest login/logout or the
 * time the source reported zero — never earlier, so idle time is never
 * overstated. Reports older than the ones already folded in are ignored.
 */
export function idleSince(prev: IdleClock, observation: PresenceObservation, now: EpochMs): IdleClock {
  const r = observation.router && (prev.router === null || observation.router.at >= prev.router.at) ? observation.router : undefined;
  const p = observation.probe && (prev.probe === null || observation.probe.at >= prev.probe.at) ? observation.probe : undefined;
  const router = r ? { playersOnline: Math.max(0, r.playersOnline), at: Math.min(r.at, now) } : prev.router;
  const probe = p ? { playersOnline: Math.max(0, p.playersOnline), at: Math.min(p.at, now) } : prev.probe;
  const players = Math.max(router?.playersOnline ?? 0, probe?.playersOnline ?? 0);
  const lastLogin = latest([...(prev.lastLoginAt === null ? [] : [prev.lastLoginAt]), ...(r?.logins ?? [])], now);
  const base = { lastLoginAt: lastLogin, playersOnline: players, router, probe };
  if (players > 0) return { ...base, emptySince: null };

  // Every login or logout in this report restarts the run at that moment.
  const lastEvent = latest([...(r?.logins ?? []), ...(r?.logouts ?? [])], now);
  const candidates: EpochMs[] = [];
  if (lastEvent !== null) candidates.push(lastEvent);
  if (prev.emptySince !== null) candidates.push(prev.emptySince);
  else {
    // Players were on: the run starts at the router's last logout, or when a source that saw them reported zero.
    if (r && (prev.router?.playersOnline ?? 0) > 0 && lastEvent === null) candidates.push(router!.at);
    if (p && (prev.probe?.playersOnline ?? 0) > 0) candidates.push(probe!.at);
    if (candidates.length === 0) candidates.push(now);
  }
  return { ...base, emptySince: Math.min(now, Math.max(...candidates)) };
}

/**
 * A router join was just answered with this instance: the player's login is on
 * its way (the router reports sessions in batches, a second or more later, and
 * later still while the orchestrator is unreachable). It restarts the empty run
 * now, as the login itself would, so neither an idle tier nor a scale-down
 * takes the world away in between; a login that never comes counts from here.
 */
export function loginExpected(prev: IdleClock, now: EpochMs): IdleClock {
  return prev.emptySince === null ? prev : { ...prev, emptySince: Math.max(prev.emptySince, now) };
}

export type IdleSubjectState = InstanceState;

export interface IdleActionInput {
  /** The instance's own tiers when it overrides the group's. */
  tiers: readonly IdleTier[];
  clock: IdleClock;
  state: IdleSubjectState;
  allocated: boolean;
  /** Players right now by the freshest count the caller has (cross-checked with the clock's). */
  playersOnline: number;
  /** The last tier this instance went through, with when; ignored when it predates the current empty run. */
  lastTierApplied: { action: IdleAction; at: EpochMs } | null;
  /** The autoscaler keeps this instance as part of its minimum or buffer (FleetPlan.hold). */
  heldByFleet?: boolean;
  /**
   * When the instance last came up (its state's change time while online or degraded). A wake
   * restarts the idle run: a world just woken for a player is never put back to sleep on the
   * strength of the empty spell before the wake, while that player's login is still being reported.
   */
  awakeSince?: EpochMs;
}

export type IdleDecision =
  { action: IdleAction; tier: IdleTier; idleForMs: number } | { wait: { action: IdleAction; dueAt: EpochMs } } | null;

/** How far asleep each settled state is; transitional states are not acted on. */
const DEPTH: Partial<Record<IdleSubjectState, number>> = { online: 0, paused: 1, stopped: 2, archived: 3 };
const ACTION_DEPTH: Record<IdleAction, number> = { pause: 1, stop: 2, archive: 3 };

/**
 * The tier to apply now, or when the next one is due (for "pauses in 4 min"),
 * or null. Never an action with players on, when allocated, when the fleet
 * holds the instance, or while it is in a transition. When several tiers are
 * due (the orchestrator was down), the deepest one is returned.
 */
export function nextIdleAction(input: IdleActionInput, now: EpochMs): IdleDecision {
  const { clock } = input;
  if (input.allocated || input.heldByFleet || input.playersOnline > 0 || clock.playersOnline > 0 || clock.emptySince === null) return null;
  const depth = DEPTH[input.state];
  if (depth === undefined) return null;
  const up = input.awakeSince !== undefined && (input.state === 'online' || input.state === 'degraded');
  const emptySince = up ? Math.max(clock.emptySince, input.awakeSince!) : clock.emptySince;
  const applied = input.lastTierApplied && input.lastTierApplied.at >= emptySince ? ACTION_DEPTH[input.lastTierApplied.action] : 0;
  const reached = Math.max(depth, applied);
  const idleForMs = Math.max(0, now - emptySince);
  const ahead = [...input.tiers].sort((a, b) => a.afterMs - b.afterMs).filter((t) => ACTION_DEPTH[t.action] > reached);
  const due = ahead.filter((t) => t.afterMs <= idleForMs);
  const deepest = due[due.length - 1];
  if (deepest) return { action: deepest.action, tier: deepest, idleForMs };
  const next = ahead[0];
  return next ? { wait: { action: next.action, dueAt: emptySince + next.afterMs } } : null;
}
