// `ectl apply -f FILE [--dry-run]`: the command's options. Its work (apply-run.ts)
// is imported when it runs, so every other command starts without the YAML
// parser and the catalog schemas it needs (docs/bench.md, bench:ectl).

import type { Command } from 'commander';
import type { CommandContext } from '../program.js';

export interface ApplyOptions {
  file: string;
  dryRun?: boolean;
  json?: boolean;
}

export function registerApply(program: Command, ctx: CommandContext): void {
  program
    .command('apply')
    .description('create or update templates and groups from a declarative YAML file (idempotent)')
    .requiredOption('-f, --file <file>', 'the YAML file (see docs/cli.md for the format)')
    .option('--dry-run', 'only show the preview')
    .option('--json', 'print the preview (and result) as JSON')
    .action(async (opts: ApplyOptions) => (await import('./apply-run.js')).runApply(ctx, opts));
}
