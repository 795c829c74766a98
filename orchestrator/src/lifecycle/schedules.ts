// Instance schedules, pure (issue 24, Pelican's model): the checks of a
// schedule's definition, its next run from the cron (cron.ts), and the task
// chain — tasks in order, each after its offset; a failure ends the chain
// unless the task says continueOnFailure. Nothing here reads a clock or does I/O.

import { AppError } from '../shared/errors.js';
import { nextRun, parseCron } from './cron.js';

/** `kill`: SIGKILL, ending a stop in progress at once (server/services/instance-kill.ts). */
export const SCHEDULE_POWER_ACTIONS = ['start', 'stop', 'restart', 'kill'] as const;
export type SchedulePowerAction = (typeof SCHEDULE_POWER_ACTIONS)[number];

export interface ScheduleTask {
  action: 'command' | 'power' | 'backup';
  payload: string;
  offsetSeconds: number;
  continueOnFailure: boolean;
}

export interface ScheduleDefinitionInput {
  name: string;
  cron: string;
  enabled: boolean;
  onlyWhenOnline: boolean;
  tasks: ScheduleTask[];
}

/** Checks what the body schema cannot: the cron (naming the `cron` field), each task's payload. Returns the trimmed definition. */
export function checkSchedule(input: ScheduleDefinitionInput): ScheduleDefinitionInput {
  const cron = input.cron.trim();
  try {
    parseCron(cron);
  } catch (err) {
    throw new AppError('VALIDATION_FAILED', `cron: ${(err as Error).message}`, { details: { field: 'cron' } });
  }
  if (input.tasks.length < 1 || input.tasks.length > 10) {
    throw new AppError('VALIDATION_FAILED', `tasks: a schedule has 1 to 10 tasks, got ${input.tasks.length}`, {
      details: { field: 'tasks' },
    });
  }
  const tasks = input.tasks.map((t, i) => {
    const field = `tasks/${i}/payload`;
    const payload = t.payload.trim();
    if (t.action === 'command' && (payload === '' || /[\r\n]/.test(payload))) {
      throw new AppError('VALIDATION_FAILED', `${field}: a command task needs one console line`, { details: { field } });
    }
    if (t.action === 'power' && !(SCHEDULE_POWER_ACTIONS as readonly string[]).includes(payload)) {
      throw new AppError(
        'VALIDATION_FAILED',
        `${field}: unknown power action ${JSON.stringify(t.payload)} (one of ${SCHEDULE_POWER_ACTIONS.join(', ')})`,
        { details: { field } },
      );
    }
    if (!Number.isInteger(t.offsetSeconds) || t.offsetSeconds < 0 || t.offsetSeconds > 900) {
      throw new AppError('VALIDATION_FAILED', `tasks/${i}/offsetSeconds: 0 to 900 seconds`, {
        details: { field: `tasks/${i}/offsetSeconds` },
      });
    }
    return { action: t.action, payload, offsetSeconds: t.offsetSeconds, continueOnFailure: t.continueOnFailure };
  });
  return { name: input.name.trim(), cron, enabled: input.enabled, onlyWhenOnline: input.onlyWhenOnline, tasks };
}

/** The next due minute strictly after `afterMs`; null when disabled or the cron never fires. */
export function nextScheduleRun(cron: string, enabled: boolean, afterMs: number): number | null {
  if (!enabled) return null;
  return nextRun(parseCron(cron), afterMs) ?? null;
}

export interface TaskOutcome {
  index: number;
  ok: boolean;
  error?: string;
}

export interface ChainResult {
  result: 'ok' | 'failed';
  /** The first failure's message (`task N (action): …`); null when every task ran fine. */
  error: string | null;
  outcomes: TaskOutcome[];
}

/**
 * Runs the tasks in order: waits each task's offset (`wait`), then `run`s it.
 * A throw fails the task; the chain stops there unless it continues on failure.
 * The run is `failed` when any task failed.
 */
export async function runTaskChain(
  tasks: readonly ScheduleTask[],
  run: (task: ScheduleTask, index: number) => Promise<void>,
  wait: (ms: number) => Promise<void>,
): Promise<ChainResult> {
  const outcomes: TaskOutcome[] = [];
  let error: string | null = null;
  for (const [index, task] of tasks.entries()) {
    if (task.offsetSeconds > 0) await wait(task.offsetSeconds * 1000);
    try {
      await run(task, index);
      outcomes.push({ index, ok: true });
    } catch (err) {
      const message = `task ${index + 1} (${task.action} ${task.payload}): ${(err as Error).message}`;
      outcomes.push({ index, ok: false, error: message });
      error ??= message;
      if (!task.continueOnFailure) break;
    }
  }
  return { result: error === null ? 'ok' : 'failed', error, outcomes };
}
