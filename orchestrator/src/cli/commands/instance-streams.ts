// Interactive instance access: `exec NAME -- <command>` (one RCON command) and
// `console NAME` (follow the log, send each typed line). The orchestrator has
// no RCON or streamed-log endpoint yet, so both refuse in one line rather than
// faking it with polling.

import type { Command } from 'commander';
import type { CommandContext } from '../program.js';
import { notOffered } from './not-offered.js';

export function registerInstanceStreams(instances: Command, _ctx: CommandContext): void {
  instances
    .command('exec <name> [command...]')
    .description('run one server console command over RCON: ectl instances exec NAME -- say hi (not offered by the orchestrator yet)')
    .action(async () => {
      throw notOffered('instances exec', 'RCON commands');
    });
  instances
    .command('console <name>')
    .description('follow the log and send each typed line as a command (not offered by the orchestrator yet)')
    .action(async () => {
      throw notOffered('instances console', 'a console (streamed logs and RCON commands)');
    });
}
