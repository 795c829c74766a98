// Guards command retry backoff: exponential growth with injected jitter, a
// cap, bounded attempts, and no retry of errors not tagged retryable.

import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/shared/errors.js';
import {
  DEFAULT_RETRY_POLICY,
  baseDelay,
  classifyError,
  nextRetry,
  retrySchedule,
  type RetryPolicy,
} from '../../src/lifecycle/command-retry.js';

const policy: RetryPolicy = { initialDelayMs: 100, maxDelayMs: 1_000, multiplier: 2, maxAttempts: 6, jitter: 0.5 };
const retryable = new AppError('UPSTREAM_FAILED', 'agent unreachable', { retryable: true });

describe('command retry backoff', () => {
  it.each([
    [new AppError('UPSTREAM_FAILED', 'x', { retryable: true }), 'retryable'],
    [new AppError('TIMEOUT', 'x', { retryable: true }), 'retryable'],
    [new AppError('VALIDATION_FAILED', 'x'), 'fatal'],
    [new AppError('INSTANCE_CONFLICT', 'x'), 'fatal'],
    [new Error('untagged bug'), 'fatal'],
    ['string', 'fatal'],
  ])('classifies %s as %s', (err, kind) => expect(classifyError(err)).toBe(kind));

  it('doubles up to the cap without jitter', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => baseDelay(n, policy))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it('applies the injected jitter within [1 − jitter, 1] of the base', () => {
    expect(nextRetry(3, retryable, () => 0, policy)).toEqual({ retry: true, delayMs: 200, attempt: 4 });
    expect(nextRetry(3, retryable, () => 0.5, policy)).toEqual({ retry: true, delayMs: 300, attempt: 4 });
    expect(nextRetry(3, retryable, () => 0.999999, policy)).toEqual({ retry: true, delayMs: 400, attempt: 4 });
  });

  it('gives up after maxAttempts', () => {
    const d = nextRetry(6, retryable, () => 0, policy);
    expect(d).toMatchObject({ retry: false, reason: 'exhausted' });
    if (!d.retry) expect(d.message).toMatch(/gave up after 6 attempts: agent unreachable/);
  });

  it('never retries a fatal error', () => {
    expect(nextRetry(1, new AppError('VALIDATION_FAILED', 'bad body'), () => 0, policy)).toEqual({
      retry: false,
      reason: 'fatal',
      message: 'bad body',
    });
  });

  it('lists the schedule (maxAttempts − 1 waits)', () => {
    expect(retrySchedule(() => 1, policy)).toEqual([100, 200, 400, 800, 1_000]);
    expect(retrySchedule(() => 1)).toHaveLength(DEFAULT_RETRY_POLICY.maxAttempts - 1);
  });
});
