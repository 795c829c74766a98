// Graceful stop, pure: what the agent is asked to do (RCON command where the
// template declares RCON and the instance has its password, else the stop
// signal), and which path the history records from the agent's answer.

export interface StopSpecInput {
  signal: string;
  timeoutMs: number;
  rcon?: { port: number; passwordVariable: string; command?: string };
  /** Console command written to stdin (egg templates). */
  stdin?: string;
}

export interface StopRequest {
  timeoutSeconds: number;
  signal: string;
  rcon?: { port: number; password: string; command: string };
  stdin?: string;
}

/** `none`: the container had already exited when the stop arrived. */
export type StopPath = 'rcon' | 'signal' | 'stdin' | 'killed' | 'none';

/** The agent's stop body. The password is read from the instance's secrets at dispatch, never stored in a command. */
export function planStop(stop: StopSpecInput, secrets: Readonly<Record<string, string>>): StopRequest {
  // Docker counts whole seconds; round up so a 500 ms template timeout is not "kill at once".
  const request: StopRequest = { timeoutSeconds: Math.max(0, Math.ceil(stop.timeoutMs / 1000)), signal: stop.signal };
  const password = stop.rcon ? secrets[stop.rcon.passwordVariable] : undefined;
  if (stop.rcon && password) request.rcon = { port: stop.rcon.port, password, command: stop.rcon.command ?? 'stop' };
  if (stop.stdin !== undefined && !request.rcon) request.stdin = stop.stdin;
  return request;
}

/** The path recorded in the history: the bounded timeout's kill wins over the graceful method. */
export function stopPath(result: { method: 'rcon' | 'signal' | 'stdin' | 'none'; killed: boolean }): StopPath {
  return result.killed ? 'killed' : result.method;
}

/** `killedOnRequest`: a kill (POST /instances/:id/kill) ended the stop, not its timeout. */
export function describeStop(path: StopPath, timeoutSeconds: number, exitCode: number | null, killedOnRequest = false): string {
  const code = exitCode === null ? '' : ` (exit code ${exitCode})`;
  if (path === 'killed' && killedOnRequest) return `killed on request${code}`;
  switch (path) {
    case 'rcon':
      return `stopped gracefully over RCON${code}`;
    case 'signal':
      return `stopped gracefully by the stop signal${code}`;
    case 'stdin':
      return `stopped gracefully by the stop command on stdin${code}`;
    case 'none':
      return `the container had already exited${code}`;
    default:
      return `killed: no exit within the ${timeoutSeconds} s stop timeout${code}`;
  }
}
