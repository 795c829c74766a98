// Builds the ectl command tree over injected dependencies and runs it, turning
// every failure into a message on stderr and an exit code (1 API/runtime, 2 usage).

import { Command, CommanderError } from 'commander';
import { ApiClient, type FetchFn } from './api-client.js';
import { registerApply } from './commands/apply.js';
import { registerCommands } from './commands/commands.js';
import { registerContext } from './commands/context.js';
import { registerHosts } from './commands/hosts.js';
import { registerInstances } from './commands/instances.js';
import { registerLayers } from './commands/layers.js';
import { readConfigFile, resolveTarget, type CliEnvironment } from './config.js';
import { ApiError, CliError } from './errors.js';
import type { Output } from './output.js';

export interface CliDeps {
  output: Output;
  env: CliEnvironment;
  fetch?: FetchFn;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  version?: string;
}

/** What every command gets: output, clock, and an API client for the selected context. */
export interface CommandContext {
  out: Output;
  env: CliEnvironment;
  fetch: FetchFn;
  now(): number;
  sleep(ms: number): Promise<void>;
  client(): Promise<ApiClient>;
}

export function buildProgram(deps: CliDeps): Command {
  const program = new Command('ectl')
    .description('EnderCloud operator CLI over the orchestrator API')
    .version(deps.version ?? '0.0.0')
    .option('--context <name>', 'use this context instead of the current one')
    .showHelpAfterError('(run ectl --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => deps.output.write(s),
      writeErr: (s) => deps.output.status(s),
      outputError: (s, write) => write(s),
    });
  const fetchFn = deps.fetch ?? globalThis.fetch;
  const ctx: CommandContext = {
    out: deps.output,
    env: deps.env,
    fetch: fetchFn,
    now: deps.now ?? Date.now,
    sleep: deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
    async client() {
      const config = await readConfigFile(deps.env.configPath);
      const target = resolveTarget(config, deps.env, program.opts<{ context?: string }>().context);
      return new ApiClient({ url: target.url, token: target.token, fetch: fetchFn });
    },
  };
  registerContext(program, ctx);
  registerHosts(program, ctx);
  registerLayers(program, ctx);
  registerApply(program, ctx);
  registerInstances(program, ctx);
  registerCommands(program, ctx);
  // Sub-commands inherit exitOverride and output routing.
  for (const sub of program.commands) sub.exitOverride().configureOutput(program.configureOutput());
  return program;
}

/** Runs ectl with user arguments (no node/script prefix) and returns the exit code. */
export async function runCli(argv: readonly string[], deps: CliDeps): Promise<number> {
  const program = buildProgram(deps);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      // Commander already printed the message (or the help, for a missing sub-command).
      return 2;
    }
    if (err instanceof ApiError) {
      deps.output.error(`error: ${err.code}: ${err.apiMessage || '(no message)'} (HTTP ${err.status})`);
      return err.exitCode;
    }
    if (err instanceof CliError) {
      deps.output.error(`error: ${err.message}`);
      return err.exitCode;
    }
    deps.output.error(`error: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}
