// The backup scheduler's pure parts: the cron parser/next-run function and the
// retention planner, as tables.

import { describe, expect, it } from 'vitest';
import { nextRun, parseCron } from '../../src/lifecycle/cron.js';
import { planRetention } from '../../src/lifecycle/backup-retention.js';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

describe('cron next run (UTC)', () => {
  const cases: [expr: string, after: string, next: string][] = [
    ['0 4 * * *', '2026-12-01T03:59:00Z', '2026-12-01T04:00:00.000Z'],
    ['0 4 * * *', '2026-12-01T04:00:00Z', '2026-12-02T04:00:00.000Z'],
    ['0 4 * * *', '2026-12-31T05:00:00Z', '2027-01-01T04:00:00.000Z'],
    ['*/15 * * * *', '2026-12-01T10:07:30Z', '2026-12-01T10:15:00.000Z'],
    ['5,35 * * * *', '2026-12-01T10:06:00Z', '2026-12-01T10:35:00.000Z'],
    ['0 9-17/4 * * *', '2026-12-01T13:00:00Z', '2026-12-01T17:00:00.000Z'],
    ['30 2 * * 0', '2026-12-01T00:00:00Z', '2026-12-06T02:30:00.000Z'], // Sunday
    ['30 2 * * 7', '2026-12-01T00:00:00Z', '2026-12-06T02:30:00.000Z'], // 7 is Sunday too
    ['0 0 1 * *', '2026-12-15T00:00:00Z', '2027-01-01T00:00:00.000Z'],
    ['0 0 29 2 *', '2026-03-01T00:00:00Z', '2028-02-29T00:00:00.000Z'],
    ['0 0 13 * 5', '2026-12-01T00:00:00Z', '2026-12-04T00:00:00.000Z'], // day-of-month OR Friday
    ['* * * * *', '2026-12-01T10:00:59.999Z', '2026-12-01T10:01:00.000Z'],
  ];
  it.each(cases)('%s after %s → %s', (expr, after, next) => {
    expect(iso(nextRun(parseCron(expr), at(after)))).toBe(next);
  });

  it('answers undefined for a date that never comes', () => {
    expect(nextRun(parseCron('0 0 31 2 *'), at('2026-01-01T00:00:00Z'))).toBeUndefined();
  });

  const bad: [expr: string, message: RegExp][] = [
    ['0 4 * *', /needs 5 fields/],
    ['60 * * * *', /minute 60 is outside 0-59/],
    ['* 24 * * *', /hour/],
    ['* * 0 * *', /day-of-month/],
    ['* * * 13 *', /month/],
    ['*/0 * * * *', /step must be at least 1/],
    ['a * * * *', /is not \*/],
    ['5-2 * * * *', /outside/],
  ];
  it.each(bad)('refuses %s', (expr, message) => {
    expect(() => parseCron(expr)).toThrow(message);
  });
});

describe('retention plan', () => {
  const b = (id: string, when: string) => ({ backupId: id, createdAt: at(when) });
  const backups = [
    b('mon-a', '2026-11-30T04:00:00Z'),
    b('mon-b', '2026-11-30T16:00:00Z'),
    b('tue', '2026-12-01T04:00:00Z'),
    b('wed', '2026-12-02T04:00:00Z'),
    b('prev-sun', '2026-11-29T04:00:00Z'),
    b('prev-wed', '2026-11-25T04:00:00Z'),
    b('old', '2026-11-10T04:00:00Z'),
  ];
  const cases: [name: string, policy: { last?: number; daily?: number; weekly?: number }, keep: string[]][] = [
    ['no rule keeps everything', {}, ['wed', 'tue', 'mon-b', 'mon-a', 'prev-sun', 'prev-wed', 'old']],
    ['last 2', { last: 2 }, ['wed', 'tue']],
    ['daily 3: the newest of each of the 3 newest days', { daily: 3 }, ['wed', 'tue', 'mon-b']],
    ['weekly 2: the newest of this week and the previous one', { weekly: 2 }, ['wed', 'prev-sun']],
    ['weekly 3 reaches the week of Nov 9', { weekly: 3 }, ['wed', 'prev-sun', 'old']],
    ['rules add up', { last: 1, daily: 2, weekly: 3 }, ['wed', 'tue', 'prev-sun', 'old']],
    ['more than there are keeps all', { last: 50 }, ['wed', 'tue', 'mon-b', 'mon-a', 'prev-sun', 'prev-wed', 'old']],
  ];
  it.each(cases)('%s', (_name, policy, keep) => {
    const plan = planRetention(backups, policy);
    expect(plan.keep).toEqual(keep);
    expect(plan.prune.sort()).toEqual(
      backups
        .map((x) => x.backupId)
        .filter((id) => !keep.includes(id))
        .sort(),
    );
  });
});
