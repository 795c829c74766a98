// The one refusal for commands whose orchestrator endpoint does not exist yet:
// ectl never fakes them (e.g. by polling, or by calling other endpoints) and
// says in one line what is missing.

import { CliError } from '../errors.js';

export function notOffered(command: string, what: string): CliError {
  return new CliError('runtime', `ectl ${command}: the orchestrator does not offer ${what} yet`);
}
