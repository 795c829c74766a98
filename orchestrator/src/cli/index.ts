// Entry point of `ectl`: runs the command tree against the real process
// (stdout/stderr, env, fetch) and exits with its code.

import { readFileSync } from 'node:fs';
import { cliEnvironment } from './config.js';
import { processOutput } from './output.js';
import { runCli } from './program.js';

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

const code = await runCli(process.argv.slice(2), { output: processOutput(), env: cliEnvironment(), version: packageVersion() });
process.exitCode = code;
