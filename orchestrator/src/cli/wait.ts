// `--wait`: follow an instance until it reaches the state an action aims for
// (start → online: readiness passed, not just "container running"). Polls
// GET /instances/:id, which every token that may act on an instance can read;
// the command's own status is read too when the token may (403 is ignored).

import { enc, type ApiClient } from './api-client.js';
import { ApiError, CliError } from './errors.js';
import type { Output } from './output.js';
import { startSpinner } from './progress.js';

/** What the waiter reads of an instance. */
export interface WaitedInstance {
  id: string;
  name?: string;
  state: string;
  stateReason?: string | null;
  activeAction?: { kind: string; commandId: string } | null;
}

/** The states an action's --wait ends in (`idle`: any state once no action runs). */
export type WaitGoal = 'online' | 'stopped' | 'paused' | 'idle' | 'gone';

export const GOAL_OF_ACTION: Readonly<Record<string, WaitGoal>> = {
  create: 'online',
  start: 'online',
  restart: 'online',
  resume: 'online',
  update: 'online',
  stop: 'stopped',
  kill: 'stopped',
  pause: 'paused',
  backup: 'idle',
  restore: 'idle',
  delete: 'gone',
  reinstall: 'idle',
};

export type WaitVerdict = { kind: 'done' } | { kind: 'failed'; reason: string } | { kind: 'waiting' };

const FAILED_STATES = ['error', 'intervention_required', 'unknown'];

/**
 * Pure: whether the wait is over. `instance` undefined = gone (404). A degraded
 * instance failed its readiness within the startup timeout: waiting for online
 * ends there (the bridge may still report it ready later).
 */
export function waitVerdict(
  goal: WaitGoal,
  instance: WaitedInstance | undefined,
  commandStatus?: string,
  commandError?: string | null,
): WaitVerdict {
  if (goal === 'gone') {
    if (!instance) return { kind: 'done' };
  } else if (!instance) {
    return { kind: 'failed', reason: 'the instance no longer exists' };
  }
  if (commandStatus === 'failed') return { kind: 'failed', reason: `its command failed: ${commandError ?? 'no reason given'}` };
  if (!instance) return { kind: 'waiting' };
  const why = instance.stateReason ? ` (${instance.stateReason})` : '';
  if (FAILED_STATES.includes(instance.state) && !instance.activeAction) return { kind: 'failed', reason: `it is ${instance.state}${why}` };
  if (instance.activeAction) return { kind: 'waiting' };
  // A command still pending (when the token may read it) has not run yet.
  if (commandStatus !== undefined && commandStatus !== 'succeeded') return { kind: 'waiting' };
  if (goal === 'idle' || instance.state === goal) return { kind: 'done' };
  if (goal === 'online' && instance.state === 'degraded')
    return { kind: 'failed', reason: `it is degraded: not ready within its startup timeout${why}` };
  return { kind: 'waiting' };
}

/**
 * Pure: what the wait says, in the words of what is awaited. An action that
 * ends in no particular state (backup, restore) is named itself ("backup of
 * world done"), an instance state as such ("instance world is online").
 */
export function waitTexts(goal: WaitGoal, name: string, action?: string) {
  if (goal === 'idle') {
    const what = `${action ?? 'the action'} of ${name}`;
    return {
      waiting: `waiting for the ${what}`,
      done: `${what} done`,
      failed: (reason: string) => `${what} failed: ${reason}`,
      late: (s: number, state: string) => `${what} still running after ${s}s (instance ${state}; ectl instances get ${name} shows it)`,
    };
  }
  const target = goal === 'gone' ? 'deleted' : goal;
  return {
    waiting: `waiting for instance ${name} to be ${target}`,
    done: goal === 'gone' ? `instance ${name} deleted` : `instance ${name} is ${target}`,
    failed: (reason: string) => `instance ${name} did not become ${target}: ${reason}`,
    late: (s: number, state: string) => `instance ${name} still ${state} after ${s}s (ectl instances get ${name} shows it)`,
  };
}

export interface WaitDeps {
  client: ApiClient;
  out: Output;
  now(): number;
  sleep(ms: number): Promise<void>;
}

async function readInstance(client: ApiClient, id: string): Promise<WaitedInstance | undefined> {
  try {
    return await client.get<WaitedInstance>(`/instances/${enc(id)}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return undefined;
    throw err;
  }
}

async function readCommand(
  client: ApiClient,
  commandId: string | null | undefined,
  allowed: { yes: boolean },
): Promise<{ status?: string; lastError?: string | null }> {
  if (!commandId || !allowed.yes) return {};
  try {
    return await client.get<{ status: string; lastError: string | null }>(`/commands/${enc(commandId)}`);
  } catch (err) {
    if (err instanceof ApiError && (err.status === 403 || err.status === 404)) {
      allowed.yes = false; // this token may not read commands: the instance alone decides
      return {};
    }
    throw err;
  }
}

/**
 * Waits until `goal`; throws a runtime error on failure or after `timeoutMs`. Returns the last view.
 * `action` names what was queued (the texts of an `idle` goal say "backup of NAME done").
 */
export async function waitForInstance(
  deps: WaitDeps,
  id: string,
  goal: WaitGoal,
  timeoutMs: number,
  commandId?: string | null,
  action?: string,
): Promise<WaitedInstance | undefined> {
  const texts = (i: WaitedInstance | undefined) => waitTexts(goal, i?.name ?? id, action);
  const spinner = startSpinner(deps.out, texts(undefined).waiting);
  const deadline = deps.now() + timeoutMs;
  const commandAllowed = { yes: true };
  try {
    for (;;) {
      const instance = await readInstance(deps.client, id);
      const cmd = await readCommand(deps.client, commandId, commandAllowed);
      const verdict = waitVerdict(goal, instance, cmd.status, cmd.lastError);
      spinner.update(`instance ${instance?.name ?? id}: ${instance ? instance.state : 'gone'}`);
      if (verdict.kind === 'done') {
        spinner.stop(texts(instance).done);
        return instance;
      }
      if (verdict.kind === 'failed') throw new CliError('runtime', texts(instance).failed(verdict.reason));
      if (deps.now() >= deadline) throw new CliError('runtime', texts(instance).late(timeoutMs / 1000, instance?.state ?? 'present'));
      await deps.sleep(250);
    }
  } finally {
    spinner.stop();
  }
}
