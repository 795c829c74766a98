// `ectl completion bash|zsh|fish`: prints the completion script for a shell;
// `ectl __complete KIND` (hidden): the names the script offers, read from the API.

import type { Command } from 'commander';
import { listOf } from '../api-client.js';
import { completionScript, NAME_SOURCES, SHELLS, type CommandNode, type NameKind, type Shell } from '../completion.js';
import { CliError } from '../errors.js';
import type { CommandContext } from '../program.js';

/** A Tab press waits at most this long for the API (each call; an unreachable one fails at once). */
const COMPLETE_TIMEOUT_MS = 1000;
/** Names offered at most: a shell lists them all at once. */
const COMPLETE_MAX_NAMES = 1000;

/** The commander tree as plain data (long options only; -h/--help is added by the generator). */
export function commandTree(cmd: Command): CommandNode {
  return {
    name: cmd.name(),
    aliases: cmd.aliases(),
    description: cmd.description(),
    args: cmd.registeredArguments.map((a) => a.name()),
    options: cmd.options
      .filter((o) => o.long && o.long !== '--help' && !o.hidden)
      .map((o) => ({
        flag: o.long!,
        description: o.description,
        value: o.required,
        ...(o.argChoices ? { choices: o.argChoices } : {}),
      })),
    commands: cmd.commands.filter((c) => !(c as Command & { _hidden?: boolean })._hidden).map(commandTree),
  };
}

/** The names of one kind, one a line; nothing at all (exit 0) when the API cannot tell: completion stays quiet. */
async function printNames(ctx: CommandContext, kind: string): Promise<void> {
  const source = (NAME_SOURCES as Record<string, (typeof NAME_SOURCES)[NameKind] | undefined>)[kind];
  if (!source) return;
  try {
    const client = await ctx.client({ timeoutMs: COMPLETE_TIMEOUT_MS });
    const rows = listOf<Record<string, unknown>>(await client.get(source.path), source.key);
    const names = [...new Set(rows.map((r) => r[source.field] ?? r.id).filter((n): n is string => typeof n === 'string'))].sort();
    if (names.length) ctx.out.write(`${names.slice(0, COMPLETE_MAX_NAMES).join('\n')}\n`);
  } catch {
    // no context, unreachable, refused: no names
  }
}

export function registerCompletion(program: Command, ctx: CommandContext): void {
  program
    .command('completion <shell>')
    .description('print a shell completion script: bash (source <(ectl completion bash)), zsh (same), fish (ectl completion fish | source)')
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) throw new CliError('usage', `unknown shell "${shell}": use ${SHELLS.join(', ')}`);
      ctx.out.write(completionScript(shell as Shell, commandTree(program)));
    });
  program
    .command('__complete <kind>', { hidden: true })
    .description(`names for the completion scripts: ${Object.keys(NAME_SOURCES).join(', ')}`)
    .action((kind: string) => printNames(ctx, kind));
}
