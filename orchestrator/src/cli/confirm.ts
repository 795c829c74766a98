// Typed-name confirmation for what cannot be undone (delete, restore) and a
// yes/no for plans (update): asked on a terminal; in scripts the flag answers
// (--confirm NAME, --yes), and without it ectl refuses before calling the API.

import { CliError } from './errors.js';
import type { Prompt } from './prompt.js';

/** Pure: checks a --confirm value against the instance name. */
export function checkConfirmFlag(given: string, name: string): void {
  if (given !== name)
    throw new CliError(
      'runtime',
      `--confirm ${JSON.stringify(given)} does not match the instance name ${JSON.stringify(name)}: nothing was done`,
    );
}

/** Returns the confirmed name, or throws (nothing has been sent yet). */
export async function confirmTypedName(prompt: Prompt, name: string, what: string, given: string | undefined): Promise<string> {
  if (given !== undefined) {
    checkConfirmFlag(given, name);
    return name;
  }
  if (!prompt.interactive) throw new CliError('usage', `${what} needs confirmation: pass --confirm ${name} (no terminal to ask on)`);
  const typed = await prompt.ask(`${what}: type the instance name (${name}) to confirm: `);
  if (typed !== name) throw new CliError('runtime', `"${typed}" is not ${JSON.stringify(name)}: nothing was done`);
  return name;
}

export async function confirmYes(prompt: Prompt, question: string, yes: boolean | undefined): Promise<void> {
  if (yes) return;
  if (!prompt.interactive) throw new CliError('usage', `${question} needs confirmation: pass --yes (no terminal to ask on)`);
  const answer = (await prompt.ask(`${question} [y/N] `)).toLowerCase();
  if (answer !== 'y' && answer !== 'yes') throw new CliError('runtime', 'not confirmed: nothing was done');
}
