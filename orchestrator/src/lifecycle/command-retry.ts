// Retry backoff for durable agent commands, pure: exponential with injected
// jitter, capped, bounded attempts; only errors tagged retryable are retried.

import { isAppError } from '../shared/errors.js';

export interface RetryPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  multiplier: number;
  /** Total attempts including the first one. */
  maxAttempts: number;
  /** Fraction of the delay randomised (0 = none, 1 = full jitter): delay · (1 − jitter + jitter · random()). */
  jitter: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  multiplier: 2,
  maxAttempts: 8,
  jitter: 0.5,
};

/**
 * Retryable only when an adapter said so (AppError.retryable: network, busy
 * engine, 5xx). Anything else, including errors nobody tagged, is fatal: a
 * bug retried forever would hide it and hold the instance busy.
 */
export function classifyError(err: unknown): 'retryable' | 'fatal' {
  return isAppError(err) && err.retryable ? 'retryable' : 'fatal';
}

/** The un-jittered delay after the n-th failed attempt (n ≥ 1). */
export function baseDelay(failedAttempts: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY): number {
  const n = Math.max(1, failedAttempts);
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** Math.min(n - 1, 60));
}

export type RetryDecision =
  { retry: true; delayMs: number; attempt: number } | { retry: false; reason: 'fatal' | 'exhausted'; message: string };

/**
 * After `failedAttempts` attempts have failed (the last with `err`): retry
 * after a delay, or give up. `random` returns [0, 1) and is injected.
 */
export function nextRetry(
  failedAttempts: number,
  err: unknown,
  random: () => number,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): RetryDecision {
  const message = err instanceof Error ? err.message : String(err);
  if (classifyError(err) === 'fatal') return { retry: false, reason: 'fatal', message };
  if (failedAttempts >= policy.maxAttempts)
    return { retry: false, reason: 'exhausted', message: `gave up after ${failedAttempts} attempts: ${message}` };
  return { retry: true, delayMs: jitteredDelay(failedAttempts, random, policy), attempt: failedAttempts + 1 };
}

/** The delays a command would wait between attempts if every failure were retryable. */
export function retrySchedule(random: () => number, policy: RetryPolicy = DEFAULT_RETRY_POLICY): number[] {
  const delays: number[] = [];
  for (let n = 1; n < policy.maxAttempts; n++) delays.push(jitteredDelay(n, random, policy));
  return delays;
}

function jitteredDelay(n: number, random: () => number, policy: RetryPolicy): number {
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  return Math.round(baseDelay(n, policy) * (1 - jitter + jitter * Math.min(1, Math.max(0, random()))));
}
