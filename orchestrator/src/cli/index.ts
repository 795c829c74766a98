// Entry point of `ectl`: runs the command tree against the real process
// (stdout/stderr, env, fetch, stdin prompts) and exits with its code. Built
// into dist/ectl.mjs by bin/build-ectl.mjs; `npm run ectl` runs it through tsx.

import { readFileSync } from 'node:fs';
import { cliEnvironment } from './config.js';
import { processOutput } from './output.js';
import { runCli } from './program.js';
import { terminalPrompt } from './prompt.js';

/** Replaced by the build with the package version; undefined under tsx. */
declare const __ECTL_VERSION__: string | undefined;

function packageVersion(): string {
  if (typeof __ECTL_VERSION__ === 'string') return __ECTL_VERSION__;
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

const env = cliEnvironment();
// Under `npm run ectl` npm starts us in the package root: work from the caller's
// directory instead, so every relative path (apply -f, layers push) means what it says.
if (env.cwd && env.cwd !== process.cwd()) process.chdir(env.cwd);
const code = await runCli(process.argv.slice(2), { output: processOutput(), env, version: packageVersion(), prompt: terminalPrompt() });
process.exitCode = code;
