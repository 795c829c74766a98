// An egg's `config.stop`, pure: `^C` is SIGINT, `^^C` (Ctrl-C twice, Space
// Engineers) one SIGINT with a warning, any other text is a console command
// written to the server's stdin — or sent over RCON when the import declares
// the server's RCON port and password variable.

export interface DeclaredRcon {
  port: number;
  passwordVariable: string;
}

export type StopMapping =
  | { ok: true; signal: string; stdin?: string; rcon?: DeclaredRcon & { command: string }; note: string; warning?: string }
  | { ok: false; reason: string };

export function mapStop(stop: string | undefined | null, rcon?: DeclaredRcon): StopMapping {
  const text = (stop ?? '').trim();
  if (text === '') return { ok: true, signal: 'SIGTERM', note: 'no stop command: SIGTERM' };
  if (text === '^C') return { ok: true, signal: 'SIGINT', note: '^C → SIGINT' };
  if (text === '^^C') {
    // The stop model sends one signal, then SIGKILL after the stop timeout: a second SIGINT has no place in it.
    return {
      ok: true,
      signal: 'SIGINT',
      note: '^^C → SIGINT once, SIGKILL after the stop timeout',
      warning:
        '^^C is Ctrl-C twice (a console that asks to confirm the first one); here one SIGINT is sent, and a server that waits for the second is killed after the stop timeout',
    };
  }
  if (text.startsWith('^')) return { ok: false, reason: `config.stop "${text}": only ^C and ^^C (SIGINT) are known control sequences` };
  if (text.includes('\n')) return { ok: false, reason: 'config.stop spans several lines: one console command is expected' };
  if (rcon)
    return {
      ok: true,
      signal: 'SIGTERM',
      rcon: { ...rcon, command: text },
      note: `"${text}" sent over RCON (port ${rcon.port}), SIGTERM if that fails`,
    };
  return { ok: true, signal: 'SIGTERM', stdin: text, note: `"${text}" written to stdin, SIGTERM then SIGKILL after the stop timeout` };
}
