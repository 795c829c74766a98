// The console commands the test server understands over RCON, with vanilla's
// wording: stop, list, save-all, say <msg>, transfer <host> [<port>] <player|@a>,
// plus the test-only `repeat <count> <text>` (long answers for multi-packet RCON
// tests). Parsing is pure; the effects are the injected context's.

import type { CommandResult } from './rcon-server.js';

export interface CommandContext {
  maxPlayers: number;
  playerNames(): string[];
  saveAll(): void;
  /** Asks for a graceful stop; returns false when stops are ignored (IGNORE_STOP). */
  stop(): boolean;
  say(message: string): void;
  /** Sends the Transfer packet; returns the names moved, or an error message. */
  transfer(host: string, port: number, target: string): string[] | { error: string };
}

export const COMMAND_HELP = [
  '/help',
  '/list',
  '/repeat <count> <text>',
  '/save-all',
  '/say <message>',
  '/stop',
  '/transfer <hostname> [<port>] <player|@a>',
];
const MAX_REPEAT_BYTES = 1 << 20;

function parseTransfer(args: string[]): { host: string; port: number; target: string } | { error: string } {
  // Vanilla: transfer <hostname> [<port>] [<players>]; from the console a target is required.
  const [host, second, third] = args;
  if (!host || !second || args.length > 3) return { error: 'Usage: /transfer <hostname> [<port>] <player|@a>' };
  const hasPort = third !== undefined;
  const port = hasPort ? Number(second) : 25565;
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { error: `Invalid port ${JSON.stringify(second)}` };
  return { host, port, target: hasPort ? third : second };
}

export function runCommand(line: string, ctx: CommandContext): CommandResult {
  const trimmed = line.trim().replace(/^\//, '');
  const [name = '', ...args] = trimmed.split(/\s+/);
  switch (name.toLowerCase()) {
    case 'help':
      return { response: COMMAND_HELP.join('\n') };
    case 'list': {
      const names = ctx.playerNames();
      return { response: `There are ${names.length} of a max of ${ctx.maxPlayers} players online: ${names.join(', ')}` };
    }
    case 'save-all':
      ctx.saveAll();
      return { response: 'Saved the game' };
    case 'say': {
      const message = trimmed.slice(name.length).trim();
      if (!message) return { response: 'Usage: /say <message>' };
      ctx.say(message);
      return { response: '' };
    }
    case 'repeat': {
      const count = Number(args[0]);
      const text = args.slice(1).join(' ');
      if (!Number.isInteger(count) || count < 1 || !text) return { response: 'Usage: /repeat <count> <text>' };
      if (count * Buffer.byteLength(text) > MAX_REPEAT_BYTES) return { response: `repeat answers at most ${MAX_REPEAT_BYTES} bytes` };
      return { response: text.repeat(count) };
    }
    case 'stop':
      return { response: 'Stopping the server', after: () => void ctx.stop() };
    case 'transfer': {
      const parsed = parseTransfer(args);
      if ('error' in parsed) return { response: parsed.error };
      const moved = ctx.transfer(parsed.host, parsed.port, parsed.target);
      if ('error' in moved) return { response: moved.error };
      const who = moved.length === 1 ? moved[0] : `${moved.length} players`;
      return { response: `Transferring ${who} to ${parsed.host}:${parsed.port}` };
    }
    default:
      return { response: `Unknown or incomplete command, see below for error\n${trimmed}<--[HERE]` };
  }
}
