// Schedules, pure: definition checks (cron names its field, power actions,
// task counts), the next run, and the task chain (offsets, stop on failure, continueOnFailure).

import { describe, expect, it } from 'vitest';
import { checkSchedule, nextScheduleRun, runTaskChain, type ScheduleTask } from '../../src/lifecycle/schedules.js';
import { AppError } from '../../src/shared/errors.js';

const task = (over: Partial<ScheduleTask> = {}): ScheduleTask => ({
  action: 'command',
  payload: 'say hi',
  offsetSeconds: 0,
  continueOnFailure: false,
  ...over,
});
const def = (over: Record<string, unknown> = {}) => ({
  name: 'n',
  cron: '0 4 * * *',
  enabled: true,
  onlyWhenOnline: false,
  tasks: [task()],
  ...over,
});
const errorOf = (fn: () => unknown): AppError => {
  try {
    fn();
  } catch (err) {
    return err as AppError;
  }
  throw new Error('did not throw');
};

describe('checkSchedule', () => {
  it.each([
    [{ cron: '61 * * * *' }, 'cron', 'minute'],
    [{ cron: '* * *' }, 'cron', 'needs 5 fields'],
    [{ tasks: [task({ action: 'power', payload: 'explode' })] }, 'tasks/0/payload', 'unknown power action'],
    [{ tasks: [task(), task({ payload: ' ' })] }, 'tasks/1/payload', 'one console line'],
    [{ tasks: [] }, 'tasks', '1 to 10'],
    [{ tasks: Array.from({ length: 11 }, () => task()) }, 'tasks', '1 to 10'],
    [{ tasks: [task({ offsetSeconds: 901 })] }, 'tasks/0/offsetSeconds', '0 to 900'],
  ])('refuses %j naming %s', (over, field, text) => {
    const err = errorOf(() => checkSchedule(def(over)));
    expect(err.code).toBe('VALIDATION_FAILED');
    expect(err.details).toMatchObject({ field });
    expect(err.message).toContain(text);
  });

  it('takes the kill power action, and trims the rest', () => {
    expect(checkSchedule(def({ tasks: [task({ action: 'power', payload: ' kill ' })] })).tasks).toMatchObject([{ payload: 'kill' }]);
    expect(checkSchedule(def({ cron: ' */5 * * * * ', tasks: [task({ action: 'power', payload: ' restart ' })] }))).toMatchObject({
      cron: '*/5 * * * *',
      tasks: [{ payload: 'restart' }],
    });
  });
});

describe('nextScheduleRun', () => {
  const at = Date.UTC(2026, 0, 1, 3, 59, 30);
  it.each([
    ['0 4 * * *', true, Date.UTC(2026, 0, 1, 4, 0)],
    ['*/15 * * * *', true, Date.UTC(2026, 0, 1, 4, 0)],
    ['0 4 * * *', false, null],
    ['0 0 31 2 *', true, null],
  ])('%s enabled=%s → %s', (cron, enabled, expected) => {
    expect(nextScheduleRun(cron, enabled, at)).toBe(expected);
  });
});

describe('runTaskChain', () => {
  const chain = async (tasks: ScheduleTask[], failing: number[]) => {
    const log: string[] = [];
    const result = await runTaskChain(
      tasks,
      async (_t, i) => {
        log.push(`run ${i}`);
        if (failing.includes(i)) throw new Error(`boom ${i}`);
      },
      async (ms) => void log.push(`wait ${ms}`),
    );
    return { ...result, log };
  };

  it.each([
    {
      name: 'all ok, offsets before each task',
      tasks: [task(), task({ offsetSeconds: 5 }), task({ offsetSeconds: 1 })],
      failing: [],
      result: 'ok',
      log: ['run 0', 'wait 5000', 'run 1', 'wait 1000', 'run 2'],
    },
    { name: 'a failure stops the chain', tasks: [task(), task(), task()], failing: [1], result: 'failed', log: ['run 0', 'run 1'] },
    {
      name: 'continueOnFailure goes on, the run still failed',
      tasks: [task({ continueOnFailure: true }), task({ offsetSeconds: 2 })],
      failing: [0],
      result: 'failed',
      log: ['run 0', 'wait 2000', 'run 1'],
    },
  ])('$name', async ({ tasks, failing, result, log }) => {
    const out = await chain(tasks, failing);
    expect(out.result).toBe(result);
    expect(out.log).toEqual(log);
    if (failing.length) expect(out.error).toContain(`task ${failing[0]! + 1} (command say hi): boom ${failing[0]}`);
    else expect(out.error).toBeNull();
  });
});
