// Retryability comes from the error code (shared/errors.ts): every code of the
// catalogue with its default, a site's override, `final`, and the agent
// driver's reading of an agent answer (agentError), which adds only that any
// 5xx or 429 is worth another attempt.

import { describe, expect, it } from 'vitest';
import { AppError, ERROR_CATALOGUE, retryableByDefault, type ErrorCode } from '../../src/shared/errors.js';
import { agentError } from '../../src/server/drivers/agent-driver.js';
import { classifyError } from '../../src/lifecycle/command-retry.js';

// Written from the rule, not the code: a retry may cure a lost peer, a busy one, taken capacity, a deposed leader.
const RETRYABLE: readonly ErrorCode[] = [
  'UPSTREAM_FAILED',
  'TIMEOUT',
  'DATABASE_UNAVAILABLE',
  'HOST_UNAVAILABLE',
  'NO_CAPACITY',
  'PORT_RANGE_EXHAUSTED',
  'INSTANCE_BUSY',
  'STALE_LEADER',
  'DOCKER_ERROR',
  'IMAGE_PULL_FAILED',
];

describe('retryability by code', () => {
  it.each(Object.keys(ERROR_CATALOGUE) as ErrorCode[])('%s', (code) => {
    const expected = RETRYABLE.includes(code);
    expect(retryableByDefault(code)).toBe(expected);
    expect(new AppError(code, 'x').retryable).toBe(expected);
    expect(classifyError(new AppError(code, 'x'))).toBe(expected ? 'retryable' : 'fatal');
  });

  it.each<[string, AppError, boolean]>([
    ['an override to final wins over the code', new AppError('TIMEOUT', 'install script timed out', { retryable: false }), false],
    ['an override to retryable wins over the code', new AppError('CONFLICT', 'version race', { retryable: true }), true],
    ['final is never retryable', new AppError('IMAGE_PULL_FAILED', 'denied', { final: true }), false],
    ['final beats an explicit retryable', new AppError('IMAGE_PULL_FAILED', 'denied', { final: true, retryable: true }), false],
  ])('%s', (_name, err, retryable) => expect(err.retryable).toBe(retryable));
});

describe('agentError', () => {
  const answer = (code: string, extra: Record<string, unknown> = {}) => ({ error: { code, message: 'm', ...extra } });
  it.each<[string, number, unknown, string, boolean]>([
    ['a busy instance (409) is retried', 409, answer('INSTANCE_BUSY'), 'INSTANCE_BUSY', true],
    ['a stale leader (409) is retried', 409, answer('STALE_LEADER'), 'STALE_LEADER', true],
    ['a validation refusal (400) is final', 400, answer('VALIDATION_FAILED'), 'VALIDATION_FAILED', false],
    ['a conflict (409) is final', 409, answer('INSTANCE_CONFLICT'), 'INSTANCE_CONFLICT', false],
    ['an agent INTERNAL (500) is retried', 500, answer('INTERNAL'), 'INTERNAL', true],
    ['any 5xx is retried, whatever the code', 501, answer('NOT_IMPLEMENTED'), 'NOT_IMPLEMENTED', true],
    ['429 is retried', 429, answer('BAD_REQUEST'), 'BAD_REQUEST', true],
    [
      'an answer that says retryable:false is final, whatever its status',
      502,
      answer('IMAGE_PULL_FAILED', { retryable: false }),
      'IMAGE_PULL_FAILED',
      false,
    ],
    ['an unknown code on a 5xx is UPSTREAM_FAILED, retried', 503, answer('SOMETHING_NEW'), 'UPSTREAM_FAILED', true],
    ['no body on a 4xx is BAD_REQUEST, final', 404, undefined, 'BAD_REQUEST', false],
  ])('%s', (_name, status, body, code, retryable) => {
    const err = agentError(status, body, 'POST /x', 'http://agent');
    expect(err.code).toBe(code);
    expect(err.retryable).toBe(retryable);
  });
});
