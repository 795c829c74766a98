// The per-address limit on failed authentication (server/auth/failure-limiter.ts),
// on a manual clock: the burst, the refill and its Retry-After, successes that
// give their attempt back, the bound on remembered addresses, the keys, the env value.

import { describe, expect, it } from 'vitest';
import { clientKey, FailureLimiter, parseFailureLimit } from '../../src/server/auth/failure-limiter.js';

type Step = [at: number, op: 'fail' | 'ok', expected: true | number];

describe('FailureLimiter (10 per minute)', () => {
  // Each step is one attempt at `at` ms: `fail` keeps the attempt (a 401), `ok` gives it back.
  // Expected: true when allowed, else the Retry-After in ms.
  const burst: Step[] = Array.from({ length: 10 }, (_, i): Step => [i, 'fail', true]);
  it.each<[string, Step[]]>([
    ['ten failures pass, the eleventh waits one refill (6 s) less the time since', [...burst, [10, 'fail', 5990]]],
    ['a refill of 6 s allows exactly one more', [...burst, [6009, 'fail', true], [6010, 'fail', 5990]]],
    [
      'a full window later the whole burst is back',
      [...burst, [60_010, ...(['fail', true] as const)], ...burst.slice(1).map(([at]): Step => [60_010 + at, 'fail', true])],
    ],
    ['successes do not count', Array.from({ length: 50 }, (_, i): Step => [i, 'ok', true])],
    [
      'successes between failures do not spend the budget',
      [...burst.slice(0, 9), [9, 'ok', true], [10, 'ok', true], [11, 'fail', true], [12, 'fail', 5988]],
    ],
    ['a refused attempt is not counted: the wait does not grow', [...burst, [20, 'fail', 5980], [30, 'fail', 5970]]],
  ])('%s', (_name, steps) => {
    const limiter = new FailureLimiter({ limit: 10, windowMs: 60_000 });
    for (const [at, op, expected] of steps) {
      const answer = limiter.attempt('1.2.3.4', at);
      expect(answer.allowed ? true : answer.retryAfterMs, `at ${at} ms`).toBe(expected);
      if (answer.allowed && op === 'ok') limiter.succeeded('1.2.3.4', at);
    }
  });

  it('counts each address on its own', () => {
    const limiter = new FailureLimiter({ limit: 2, windowMs: 60_000 });
    expect(limiter.attempt('a', 0).allowed).toBe(true);
    expect(limiter.attempt('a', 0).allowed).toBe(true);
    expect(limiter.attempt('a', 0).allowed).toBe(false);
    expect(limiter.attempt('b', 0).allowed).toBe(true);
  });

  it('remembers at most maxClients addresses, forgetting the least recently touched; a refilled one is forgotten', () => {
    const limiter = new FailureLimiter({ limit: 1, windowMs: 60_000 }, 3);
    for (const k of ['a', 'b', 'c']) limiter.attempt(k, 0);
    expect(limiter.attempt('a', 1).allowed).toBe(false); // touches nothing: refused attempts store nothing new
    limiter.attempt('d', 2); // forgets a (oldest)
    expect(limiter.size).toBe(3);
    expect(limiter.attempt('a', 3).allowed).toBe(true);
    expect(limiter.size).toBe(3);
    const ok = new FailureLimiter({ limit: 2, windowMs: 60_000 });
    ok.attempt('x', 0);
    ok.succeeded('x', 0);
    expect(ok.size).toBe(0);
  });
});

describe('clientKey', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['::ffff:10.0.0.7', '10.0.0.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002::9', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
  ])('%s → %s', (address, key) => expect(clientKey(address)).toBe(key));
});

describe('parseFailureLimit (ENDERCLOUD_AUTH_FAILURE_LIMIT)', () => {
  it('reads <count>/<duration> and off; refuses anything else naming the form', () => {
    expect(parseFailureLimit('10/1m')).toEqual({ limit: 10, windowMs: 60_000 });
    expect(parseFailureLimit('1000/30s')).toEqual({ limit: 1000, windowMs: 30_000 });
    expect(parseFailureLimit('off')).toBeUndefined();
    for (const bad of ['10', '0/1m', '10/1', '10/0s', '10/2d', 'ten/1m', '10/500ms'])
      expect(() => parseFailureLimit(bad), bad).toThrow(/count|duration|off/);
  });
});
