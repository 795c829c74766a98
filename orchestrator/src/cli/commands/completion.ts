// `ectl completion bash|zsh|fish`: prints the completion script for a shell.

import type { Command } from 'commander';
import { completionScript, SHELLS, type CommandNode, type Shell } from '../completion.js';
import { CliError } from '../errors.js';
import type { CommandContext } from '../program.js';

/** The commander tree as plain data (long options only; -h/--help is added by the generator). */
export function commandTree(cmd: Command): CommandNode {
  return {
    name: cmd.name(),
    aliases: cmd.aliases(),
    description: cmd.description(),
    options: cmd.options.filter((o) => o.long && o.long !== '--help' && !o.hidden).map((o) => ({ flag: o.long!, description: o.description })),
    commands: cmd.commands.map(commandTree),
  };
}

export function registerCompletion(program: Command, ctx: CommandContext): void {
  program
    .command('completion <shell>')
    .description('print a shell completion script: bash (source <(ectl completion bash)), zsh (same), fish (ectl completion fish | source)')
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) throw new CliError('usage', `unknown shell "${shell}": use ${SHELLS.join(', ')}`);
      ctx.out.write(completionScript(shell as Shell, commandTree(program)));
    });
}
