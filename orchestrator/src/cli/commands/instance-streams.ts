// Interactive instance access: `logs NAME --follow` (the streamed log until
// Ctrl-C or the container stops), `exec NAME -- <command>` (one console command
// through POST /instances/:id/console: RCON when the template declares it, else
// the server's stdin) and `console NAME` (follow the log, send each typed line).

import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Command } from 'commander';
import { enc, type ApiClient } from '../api-client.js';
import { CliError } from '../errors.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import type { ConsoleAnswer } from '../../contracts/public-api/answers.js';

/** Opens the followed log (errors surface here, before anything is read). */
function openLog(client: ApiClient, id: string, tail: number, signal: AbortSignal): Promise<Readable> {
  return client.follow(`/instances/${enc(id)}/logs`, { follow: 'true', tail }, signal);
}

/** Copies the log to stdout as it comes; 'ended' when the server ended it (the container stopped). */
async function pumpLog(ctx: CommandContext, body: Readable, signal: AbortSignal): Promise<'ended' | 'interrupted'> {
  const decoder = new StringDecoder('utf8');
  try {
    for await (const chunk of body) ctx.out.write(decoder.write(chunk as Buffer));
  } catch (err) {
    if (!signal.aborted) throw new CliError('runtime', `the log stream broke: ${(err as Error).message}`);
  }
  const rest = decoder.end();
  if (rest) ctx.out.write(rest);
  return signal.aborted ? 'interrupted' : 'ended';
}

/** `instances logs NAME --follow`: streamed, never polled; Ctrl-C ends it with exit code 0. */
export async function followLog(ctx: CommandContext, name: string, tail: number): Promise<void> {
  const client = await ctx.client();
  const interrupt = ctx.interrupt();
  try {
    const body = await openLog(client, name, tail, interrupt.signal);
    if ((await pumpLog(ctx, body, interrupt.signal)) === 'ended') ctx.out.error(`the log of ${name} ended (the container stopped)`);
  } catch (err) {
    // Ctrl-C while the stream was still being opened is a clean end too.
    if (!interrupt.signal.aborted) throw err;
  } finally {
    interrupt.dispose();
  }
}

function sendCommand(client: ApiClient, id: string, command: string): Promise<ConsoleAnswer> {
  return client.post<ConsoleAnswer>(`/instances/${enc(id)}/console`, { command });
}

function printReply(ctx: CommandContext, answer: ConsoleAnswer): void {
  if (answer.via === 'rcon' && answer.response) ctx.out.write(answer.response.endsWith('\n') ? answer.response : `${answer.response}\n`);
}

function positiveIntOrZero(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new CliError('usage', `${flag} ${value}: a whole number of milliseconds`);
    return n;
  };
}

export function registerInstanceStreams(instances: Command, ctx: CommandContext): void {
  instances
    .command('exec <name> <command...>')
    .description(
      "run one server console command (RCON when the template declares it, else written to the server's stdin): ectl instances exec NAME -- say hi",
    )
    .option('--json', 'print {via, response} as JSON')
    .action(async (name: string, words: string[], opts: { json?: boolean }) => {
      const answer = await sendCommand(await ctx.client(), name, words.join(' '));
      if (opts.json) return printJson(ctx.out, answer);
      printReply(ctx, answer);
      if (answer.via === 'stdin')
        ctx.out.error(`written to the server's stdin (no reply there; its output is in: ectl instances logs ${name})`);
    });

  instances
    .command('console <name>')
    .description('follow the log and send each typed line as a console command (RCON or stdin, per the template); Ctrl-D or Ctrl-C ends it')
    .option(
      '--tail <n>',
      'log lines shown before following',
      (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1 || n > 1000) throw new CliError('usage', `--tail ${v}: a whole number from 1 to 1000`);
        return n;
      },
      20,
    )
    .option(
      '--linger <ms>',
      'after the input ends (Ctrl-D, end of piped input), keep showing the log this long for the last answers',
      positiveIntOrZero('--linger'),
      1000,
    )
    .action(async (name: string, opts: { tail: number; linger: number }) => runConsole(ctx, name, opts));
}

async function runConsole(ctx: CommandContext, name: string, opts: { tail: number; linger: number }): Promise<void> {
  const client = await ctx.client();
  const instance = await client.get<{ id: string; name: string; state: string }>(`/instances/${enc(name)}`);
  const interrupt = ctx.interrupt();
  const stopLog = new AbortController();
  const onInterrupt = (): void => stopLog.abort();
  interrupt.signal.addEventListener('abort', onInterrupt);
  const input = ctx.input();
  let lines: ReturnType<typeof createInterface> | undefined;
  let failures = 0;
  try {
    const body = await openLog(client, instance.id, opts.tail, stopLog.signal);
    ctx.out.error(`console of ${instance.name} (${instance.state}): each line is sent as a command; Ctrl-D or Ctrl-C ends it`);
    // Read the input only now, and iterate at once: lines read before the iterator exists would be lost.
    const reader = createInterface({ input, crlfDelay: Infinity, terminal: false });
    lines = reader;
    const log = pumpLog(ctx, body, stopLog.signal);
    // The log ends by itself when the container stops: then there is nothing to type to.
    void log.then(
      (how) => {
        if (how === 'ended') ctx.out.error(`the log of ${instance.name} ended (the container stopped)`);
        reader.close();
      },
      () => reader.close(),
    );
    interrupt.signal.addEventListener('abort', () => reader.close());
    for await (const line of reader) {
      const command = line.trim();
      if (command === '') continue;
      try {
        printReply(ctx, await sendCommand(client, instance.id, command));
      } catch (err) {
        failures += 1;
        ctx.out.error(`error: ${command.split(/\s+/)[0]}: ${(err as Error).message}`);
      }
    }
    // Input ended: show the server's last answers (stdin commands answer in the log) for a moment.
    if (!interrupt.signal.aborted && !stopLog.signal.aborted && opts.linger > 0) {
      await Promise.race([ctx.sleep(opts.linger), log.catch(() => undefined)]);
    }
    stopLog.abort();
    await log;
  } finally {
    lines?.close();
    stopLog.abort();
    interrupt.signal.removeEventListener('abort', onInterrupt);
    interrupt.dispose();
    // process.stdin would keep the process alive after the console ends.
    if (input === process.stdin) process.stdin.destroy();
  }
  if (failures > 0) throw new CliError('runtime', `${failures} command${failures > 1 ? 's' : ''} failed`);
}
