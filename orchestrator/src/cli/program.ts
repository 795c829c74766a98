// Builds the ectl command tree over injected dependencies and runs it, turning
// every failure into a message on stderr and an exit code (1 API/runtime, 2 usage).

import { isAbsolute, resolve } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { ApiClient, type FetchFn } from './api-client.js';
import { apiErrorLine } from './api-hints.js';
import { registerApply } from './commands/apply.js';
import { registerAudit } from './commands/audit.js';
import { registerBackupTransfers } from './commands/backups.js';
import { registerCatalog } from './commands/catalog.js';
import { registerEggs } from './commands/eggs.js';
import { registerCommands } from './commands/commands.js';
import { registerCompletion } from './commands/completion.js';
import { registerContext } from './commands/context.js';
import { registerFleet } from './commands/fleet.js';
import { registerHosts } from './commands/hosts.js';
import { registerImports } from './commands/imports.js';
import { registerInstanceActions } from './commands/instance-actions.js';
import { registerInstanceInfo } from './commands/instance-info.js';
import { registerInstanceStreams } from './commands/instance-streams.js';
import { registerInstances } from './commands/instances.js';
import { registerKeptData } from './commands/kept-data.js';
import { registerLayers } from './commands/layers.js';
import { registerRequests } from './commands/requests.js';
import { registerSchedules } from './commands/schedules.js';
import { registerSystem } from './commands/system.js';
import { registerTokens } from './commands/tokens.js';
import { registerTransfers } from './commands/transfers.js';
import { readConfigFile, resolveTarget, type CliEnvironment } from './config.js';
import { ApiError, CliError } from './errors.js';
import type { Output } from './output.js';
import { noPrompt, type Prompt } from './prompt.js';

export interface CliDeps {
  output: Output;
  env: CliEnvironment;
  fetch?: FetchFn;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  version?: string;
  /** Typed confirmations; default: none (flags must answer). */
  prompt?: Prompt;
  /** Lines for `instances console`; default process.stdin (asked for only by that command). */
  input?: () => NodeJS.ReadableStream;
  /** Ctrl-C for streaming commands; default SIGINT/SIGTERM of this process (caught only while they run). */
  interrupt?: () => Interrupt;
}

/** An interruption a streaming command waits for; `dispose` gives the signals back. */
export interface Interrupt {
  signal: AbortSignal;
  dispose(): void;
}

function processInterrupt(): Interrupt {
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  // once: a second Ctrl-C while the command winds down ends the process the usual way.
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return { signal: controller.signal, dispose: () => void process.off('SIGINT', stop).off('SIGTERM', stop) };
}

/** What every command gets: output, clock, and an API client for the selected context. */
export interface CommandContext {
  out: Output;
  env: CliEnvironment;
  fetch: FetchFn;
  now(): number;
  sleep(ms: number): Promise<void>;
  prompt: Prompt;
  /** What the user types (instances console). */
  input(): NodeJS.ReadableStream;
  /** Starts catching Ctrl-C until `dispose` (streaming commands end cleanly on it). */
  interrupt(): Interrupt;
  /** A user-given path, resolved against the caller's directory. */
  resolvePath(path: string): string;
  /** `timeoutMs` bounds each call (default 30 s; completion uses a short one). */
  client(opts?: { timeoutMs?: number }): Promise<ApiClient>;
}

const CONTEXT_HELP = 'use this context instead of the current one';

export function buildProgram(deps: CliDeps): Command {
  // --context may also come after the command (`ectl instances ls --context prod`): every leaf takes it too.
  let context: string | undefined;
  const program = new Command('ectl')
    .description('EnderCloud operator CLI over the orchestrator API')
    .version(deps.version ?? '0.0.0')
    .option('--context <name>', CONTEXT_HELP)
    // Program options only before the sub-command: `ectl --version` prints ectl's version,
    // `ectl templates import-egg … --version 2` is the sub-command's own flag.
    .enablePositionalOptions()
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
    prompt: deps.prompt ?? noPrompt,
    input: deps.input ?? (() => process.stdin),
    interrupt: deps.interrupt ?? processInterrupt,
    resolvePath: (path) => (isAbsolute(path) ? path : resolve(deps.env.cwd ?? process.cwd(), path)),
    async client(opts = {}) {
      const config = await readConfigFile(deps.env.configPath);
      const target = resolveTarget(config, deps.env, context ?? program.opts<{ context?: string }>().context);
      return new ApiClient({
        url: target.url,
        token: target.token,
        fetch: fetchFn,
        ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      });
    },
  };
  registerContext(program, ctx);
  registerHosts(program, ctx);
  registerKeptData(program, ctx);
  registerSchedules(program, ctx);
  registerLayers(program, ctx);
  registerApply(program, ctx);
  const instances = registerInstances(program, ctx);
  registerInstanceActions(instances, program, ctx);
  registerBackupTransfers(instances, ctx);
  registerInstanceInfo(instances, ctx);
  registerInstanceStreams(instances, ctx);
  registerCatalog(program, ctx);
  registerEggs(program, ctx);
  registerTransfers(program, ctx);
  registerFleet(program, ctx);
  registerImports(program, ctx);
  registerRequests(program, ctx);
  registerTokens(program, ctx);
  registerAudit(program, ctx);
  registerSystem(program, ctx);
  registerCommands(program, ctx);
  registerCompletion(program, ctx);
  // Every sub-command (at any depth) inherits exitOverride and output routing.
  const inherit = (cmd: Command): void => {
    for (const sub of cmd.commands) {
      sub.exitOverride().configureOutput(program.configureOutput());
      // Hidden: the help and the completion show it once, as the global option.
      if (sub.commands.length === 0 && !sub.options.some((o) => o.long === '--context'))
        sub.addOption(new Option('--context <name>', CONTEXT_HELP).hideHelp());
      inherit(sub);
    }
  };
  inherit(program);
  program.hook('preAction', (_program, action) => {
    context = action.opts<{ context?: string }>().context;
  });
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
      deps.output.error(apiErrorLine(err));
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
