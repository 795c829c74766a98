// Readiness, pure: validates a template's probe spec, and turns the latest
// probe result and container observation into the next lifecycle state.

import { READINESS_KINDS, type ReadinessKind, type ResolvedReadinessSpec } from '../domain/index.js';
import { AppError } from '../shared/errors.js';
import { fail, ok, type Checked } from './result.js';
import type { InstanceState } from './states.js';

export const READINESS_DEFAULTS = { intervalMs: 2_000, probeTimeoutMs: 2_000, failureThreshold: 3 } as const;

const LIMITS = {
  startupTimeoutMs: [100, 3_600_000],
  intervalMs: [100, 600_000],
  probeTimeoutMs: [50, 60_000],
  failureThreshold: [1, 100],
  port: [1, 65_535],
  expectStatus: [100, 599],
} as const;

const FIELDS: Record<ReadinessKind, readonly string[]> = {
  minecraft: ['port'],
  tcp: ['port'],
  http: ['port', 'path', 'expectStatus'],
  log: ['pattern'],
  bridge: [],
};
const COMMON_FIELDS = ['kind', 'startupTimeoutMs', 'intervalMs', 'probeTimeoutMs', 'failureThreshold'];

function invalid(field: string, message: string): AppError {
  return new AppError('VALIDATION_FAILED', `readiness.${field} ${message}`, { details: { field: `readiness.${field}` } });
}

function intField(input: Record<string, unknown>, field: keyof typeof LIMITS, fallback?: number): number | AppError | undefined {
  const value = input[field];
  if (value === undefined) return fallback;
  const [min, max] = LIMITS[field];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    return invalid(field, `must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
  }
  return value;
}

/** Validates and normalises (fills defaults) a template's readiness spec. */
export function validateReadinessSpec(input: unknown): Checked<ResolvedReadinessSpec> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return fail(new AppError('VALIDATION_FAILED', 'readiness must be an object', { details: { field: 'readiness' } }));
  }
  const spec = input as Record<string, unknown>;
  const kind = spec.kind;
  if (typeof kind !== 'string' || !(READINESS_KINDS as readonly string[]).includes(kind)) {
    return fail(invalid('kind', `must be one of ${READINESS_KINDS.join(', ')} (got ${JSON.stringify(kind)})`));
  }
  const k = kind as ReadinessKind;
  for (const field of Object.keys(spec)) {
    if (!COMMON_FIELDS.includes(field) && !FIELDS[k].includes(field)) return fail(invalid(field, `is not a field of a ${k} probe`));
  }
  if (spec.startupTimeoutMs === undefined) return fail(invalid('startupTimeoutMs', 'is required'));
  const base: Record<string, number> = {};
  for (const field of ['startupTimeoutMs', 'intervalMs', 'probeTimeoutMs', 'failureThreshold'] as const) {
    const fallback = field === 'startupTimeoutMs' ? undefined : READINESS_DEFAULTS[field];
    const value = intField(spec, field, fallback);
    if (value instanceof AppError) return fail(value);
    if (value !== undefined) base[field] = value;
  }
  const common = base as unknown as Omit<ResolvedReadinessSpec, 'kind'>;
  // The default probe bound shrinks to a short startup timeout; an explicit one must fit in it.
  if (spec.probeTimeoutMs === undefined) common.probeTimeoutMs = Math.min(common.probeTimeoutMs, common.startupTimeoutMs);
  if (common.probeTimeoutMs > common.startupTimeoutMs) {
    return fail(invalid('probeTimeoutMs', `must not exceed startupTimeoutMs (${common.startupTimeoutMs})`));
  }
  const extra: Record<string, unknown> = {};
  for (const field of ['port', 'expectStatus'] as const) {
    if (!FIELDS[k].includes(field)) continue;
    const value = intField(spec, field);
    if (value instanceof AppError) return fail(value);
    if (value !== undefined) extra[field] = value;
  }
  if (k === 'http') {
    const path = spec.path;
    if (typeof path !== 'string' || !path.startsWith('/') || path.length > 2048 || /[\s\0]/.test(path)) {
      return fail(invalid('path', 'must be an absolute URL path starting with "/" without spaces (at most 2048 characters)'));
    }
    extra.path = path;
  }
  if (k === 'log') {
    const pattern = spec.pattern;
    if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > 1000) {
      return fail(invalid('pattern', 'must be a non-empty regular expression of at most 1000 characters'));
    }
    try {
      new RegExp(pattern);
    } catch (err) {
      return fail(invalid('pattern', `does not compile: ${(err as Error).message}`));
    }
    extra.pattern = pattern;
  }
  return ok({ kind: k, ...common, ...extra } as ResolvedReadinessSpec);
}

/**
 * A Server List Ping answer means ready only when it reports `players.max > 0`
 * (itzg's mc-health rule: the server answers with max 0 while it still loads).
 */
export function minecraftStatusReady(status: unknown): boolean {
  if (typeof status !== 'object' || status === null) return false;
  const players = (status as { players?: unknown }).players;
  if (typeof players !== 'object' || players === null) return false;
  const max = (players as { max?: unknown }).max;
  return typeof max === 'number' && max > 0;
}

/** A `log` probe: whether any of the new output lines matches the template's pattern. */
export function logLinesReady(pattern: string, lines: readonly string[]): boolean {
  const re = new RegExp(pattern);
  return lines.some((line) => re.test(line));
}

export interface ReadinessInput {
  state: InstanceState;
  /** When the current wait began: start dispatched, or resume dispatched for a paused instance. */
  waitStartedAt: number;
  now: number;
  /** startupTimeoutMs for a start; the (short) resume check bound for a paused instance. */
  timeoutMs: number;
  failureThreshold: number;
  container: { status: 'running' | 'paused' | 'created' | 'exited' | 'missing'; exitCode?: number | null; oomKilled?: boolean };
  /** The latest probe outcome; null while no probe has completed yet. */
  probe: { ready: boolean; consecutiveFailures: number } | null;
}

/**
 * A container state as readiness reads it (Docker's names, or the observed
 * state in the record): exited and dead are `exited`; unknown or not yet
 * observed counts as running, so the probe decides.
 */
export function readinessContainerStatus(state: string | undefined): ReadinessInput['container']['status'] {
  if (state === 'running' || state === 'paused' || state === 'created') return state;
  if (state === 'exited' || state === 'dead') return 'exited';
  return 'running';
}

export type ReadinessDecision =
  | { kind: 'stay'; reason: string }
  | { kind: 'transition'; to: InstanceState; event: string; reason: string }
  /** The container exited: the caller takes the crash path (crash-loop.ts). */
  | { kind: 'exited'; exitCode: number | null; oomKilled: boolean };

const PROBED_STATES: readonly InstanceState[] = ['starting', 'paused', 'online', 'degraded'];
const ready = (p: ReadinessInput['probe']): boolean => p?.ready === true;

/** The next step for an instance being started, resumed or kept under probe. */
export function evaluateReadiness(input: ReadinessInput): ReadinessDecision {
  const { state, container, probe } = input;
  if (!PROBED_STATES.includes(state)) return { kind: 'stay', reason: `readiness is not evaluated in state ${state}` };
  if (container.status === 'missing') {
    return { kind: 'transition', to: 'unknown', event: 'lose_container', reason: 'the managed container is missing' };
  }
  if (container.status === 'exited') {
    return { kind: 'exited', exitCode: container.exitCode ?? null, oomKilled: container.oomKilled ?? false };
  }
  const elapsed = input.now - input.waitStartedAt;
  switch (state) {
    case 'starting':
      if (container.status === 'running' && ready(probe))
        return { kind: 'transition', to: 'online', event: 'ready', reason: 'readiness probe succeeded' };
      if (elapsed >= input.timeoutMs && container.status === 'running') {
        return {
          kind: 'transition',
          to: 'degraded',
          event: 'startup_timeout',
          reason: `running but not ready after ${input.timeoutMs} ms`,
        };
      }
      if (elapsed >= input.timeoutMs) {
        return {
          kind: 'transition',
          to: 'error',
          event: 'fail',
          reason: `the container is ${container.status}, not running, ${input.timeoutMs} ms after start`,
        };
      }
      return { kind: 'stay', reason: `waiting for readiness (${Math.max(0, input.timeoutMs - elapsed)} ms left)` };
    case 'paused':
      // Only evaluated while a resume is in flight: unpaused, then one quick check.
      if (container.status !== 'running') return { kind: 'stay', reason: 'still paused' };
      if (ready(probe)) return { kind: 'transition', to: 'online', event: 'resumed', reason: 'resumed and ready' };
      if (elapsed >= input.timeoutMs) {
        return {
          kind: 'transition',
          to: 'degraded',
          event: 'resumed_not_ready',
          reason: `resumed but not ready after ${input.timeoutMs} ms`,
        };
      }
      return { kind: 'stay', reason: 'resumed; waiting for the readiness check' };
    case 'online':
      if (probe && !probe.ready && probe.consecutiveFailures >= input.failureThreshold) {
        return {
          kind: 'transition',
          to: 'degraded',
          event: 'probe_failed',
          reason: `${probe.consecutiveFailures} consecutive readiness probes failed`,
        };
      }
      return { kind: 'stay', reason: 'online' };
    default: // degraded
      if (ready(probe)) return { kind: 'transition', to: 'online', event: 'recovered', reason: 'readiness probe succeeded again' };
      return { kind: 'stay', reason: 'degraded: readiness probe still failing' };
  }
}
