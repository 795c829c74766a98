// Graceful stop and console commands (Wings' stop types): an RCON command or a
// signal, a bounded wait, then SIGKILL; the answer says which path was taken.
// RCON reaches the container at the address the runtime reports for it.

import { AppError, isAppError } from '../shared/errors.js';
import { RconClient, type RconClientOptions } from '../shared/rcon-client.js';
import type { Logger } from '../shared/logger.js';
import type { StopBody, StopResult } from '../contracts/agent-api.js';
import type { ContainerDetails, ContainerRuntime, ContainerState, StdinRuntime } from './runtime.js';

type Log = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface RconTarget {
  port: number;
  password: string;
}

/** Stop options are exactly the wire body of POST /stop (src/contracts/agent-api.ts). */
export type StopOptions = StopBody;
export type { StopResult };

/** Opens an authenticated RCON session (RconClient.connect in production). */
export type RconConnect = (options: RconClientOptions) => Promise<Pick<RconClient, 'exec' | 'close'>>;

export interface PowerDeps {
  runtime: ContainerRuntime;
  defaultStopTimeoutSeconds: number;
  rconConnect: RconConnect;
}

export const RCON_CONNECT_TIMEOUT_MS = 5000;
export const RCON_COMMAND_TIMEOUT_MS = 10_000;
/** Bound on the wait after SIGKILL (the kernel is quick; the engine may not be). */
const KILL_WAIT_MS = 10_000;
const NOT_RUNNING: readonly ContainerState[] = ['created', 'exited', 'dead', 'removing'];

/** Only the verb: arguments may name players or carry secrets. */
function verb(command: string): string {
  return command.trim().split(/\s+/)[0] ?? '';
}

/**
 * Stops one container: RCON command or signal, wait, SIGKILL after the
 * timeout. The caller holds the instance lock and passes fresh details.
 */
export async function gracefulStop(deps: PowerDeps, c: ContainerDetails, options: StopOptions, log: Log): Promise<StopResult> {
  if (NOT_RUNNING.includes(c.state)) return { method: 'none', killed: false, exitCode: c.exitCode };
  // A frozen process cannot receive a signal or answer RCON.
  if (c.state === 'paused') await deps.runtime.unpause(c.id);
  const timeoutMs = (options.timeoutSeconds ?? c.stopTimeoutSeconds ?? deps.defaultStopTimeoutSeconds) * 1000;

  let method: StopResult['method'] = 'signal';
  if (options.rcon && (await sendRconStop(deps, c, options.rcon, log))) method = 'rcon';
  else if (options.stdin !== undefined && (await sendStdinStop(deps, c, options.stdin, log))) method = 'stdin';
  if (method === 'signal') {
    const signal = options.signal ?? (c.stopSignal || 'SIGTERM');
    await deps.runtime.kill(c.id, signal);
  }
  let killed = false;
  if (!(await deps.runtime.waitForExit(c.id, timeoutMs))) {
    log.warn({ containerId: c.id, method, timeoutMs }, 'container did not stop in time; killing it');
    await deps.runtime.kill(c.id, 'SIGKILL');
    killed = true;
    if (!(await deps.runtime.waitForExit(c.id, KILL_WAIT_MS))) {
      throw new AppError('TIMEOUT', `container ${c.id} still runs ${KILL_WAIT_MS} ms after SIGKILL`);
    }
  }
  const after = await deps.runtime.inspect(c.id);
  log.info({ containerId: c.id, method, killed, exitCode: after?.exitCode ?? null }, 'container stopped');
  return { method, killed, exitCode: after?.exitCode ?? null };
}

/**
 * SIGKILL now (POST /kill): no graceful request and no instance lock, so a stop that hangs
 * ends with it. A container that is not running is left as it is (`killed: false`).
 */
export async function killNow(
  deps: PowerDeps,
  c: ContainerDetails,
  log: Log,
  beforeSignal: () => void = () => undefined,
): Promise<{ killed: boolean; exitCode: number | null }> {
  if (NOT_RUNNING.includes(c.state)) return { killed: false, exitCode: c.exitCode };
  // A frozen process receives the signal only once thawed.
  if (c.state === 'paused') await deps.runtime.unpause(c.id).catch(() => undefined);
  beforeSignal();
  try {
    await deps.runtime.kill(c.id, 'SIGKILL');
  } catch (err) {
    // It exited between the inspect and the kill: nothing left to kill.
    const now = await deps.runtime.inspect(c.id);
    if (!now || NOT_RUNNING.includes(now.state)) return { killed: false, exitCode: now?.exitCode ?? null };
    throw err;
  }
  if (!(await deps.runtime.waitForExit(c.id, KILL_WAIT_MS))) {
    throw new AppError('TIMEOUT', `container ${c.id} still runs ${KILL_WAIT_MS} ms after SIGKILL`);
  }
  const after = await deps.runtime.inspect(c.id);
  log.warn({ containerId: c.id, exitCode: after?.exitCode ?? null }, 'container killed on request');
  return { killed: true, exitCode: after?.exitCode ?? null };
}

/**
 * True once the command went out on an authenticated connection (a server
 * that closes the connection while stopping has still received it); false
 * when RCON could not be reached, so the caller falls back to the signal.
 */
async function sendRconStop(deps: PowerDeps, c: ContainerDetails, rcon: StopOptions['rcon'] & object, log: Log): Promise<boolean> {
  const host = c.address;
  if (!host) {
    log.warn({ containerId: c.id }, 'container has no network address for RCON; falling back to the stop signal');
    return false;
  }
  const command = rcon.command ?? 'stop';
  let client: Awaited<ReturnType<RconConnect>>;
  try {
    client = await deps.rconConnect({
      host,
      port: rcon.port,
      password: rcon.password,
      connectTimeoutMs: RCON_CONNECT_TIMEOUT_MS,
      commandTimeoutMs: RCON_COMMAND_TIMEOUT_MS,
    });
  } catch (err) {
    log.warn(
      { containerId: c.id, port: rcon.port, code: isAppError(err) ? err.code : undefined, reason: (err as Error).message },
      'RCON stop failed; falling back to the stop signal',
    );
    return false;
  }
  try {
    await client.exec(command);
  } catch (err) {
    log.info({ containerId: c.id, command: verb(command), reason: (err as Error).message }, 'RCON connection ended while stopping');
  } finally {
    await client.close().catch(() => undefined);
  }
  return true;
}

/** Egg templates stop on a console command written to stdin; false (signal fallback) when it cannot be written. */
async function sendStdinStop(deps: PowerDeps, c: ContainerDetails, command: string, log: Log): Promise<boolean> {
  const writer = deps.runtime as Partial<StdinRuntime>;
  if (c.state !== 'running' || typeof writer.writeStdin !== 'function') return false;
  try {
    await writer.writeStdin(c.id, `${command}\n`);
    return true;
  } catch (err) {
    log.warn({ containerId: c.id, reason: (err as Error).message }, 'stdin stop failed; falling back to the stop signal');
    return false;
  }
}

/** Runs one console command on a running container and returns the server's answer. */
export async function rconCommand(deps: PowerDeps, c: ContainerDetails, target: RconTarget, command: string, log: Log): Promise<string> {
  if (c.state !== 'running') {
    throw new AppError('INSTANCE_NOT_RUNNING', `instance container ${c.name} is ${c.state}; RCON needs a running server`);
  }
  const host = c.address;
  if (!host) throw new AppError('UPSTREAM_FAILED', `container ${c.name} has no network address to reach RCON at`);
  const client = await deps.rconConnect({
    host,
    port: target.port,
    password: target.password,
    connectTimeoutMs: RCON_CONNECT_TIMEOUT_MS,
    commandTimeoutMs: RCON_COMMAND_TIMEOUT_MS,
  });
  try {
    const response = await client.exec(command);
    log.info({ containerId: c.id, command: verb(command) }, 'RCON command run');
    return response;
  } finally {
    await client.close().catch(() => undefined);
  }
}

export const defaultRconConnect: RconConnect = (options) => RconClient.connect(options);
