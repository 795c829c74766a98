#!/usr/bin/env node
// Runs the built ectl (dist/ectl.mjs, one bundled ES module: no TypeScript
// transpile per call). `npm ci` builds it through the `prepare` script.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const built = new URL('../dist/ectl.mjs', import.meta.url);
if (!existsSync(built)) {
  process.stderr.write(
    `error: ectl is not built (${built.pathname} is missing): run npm run build:ectl (or npm ci) in the orchestrator directory\n`,
  );
  process.exit(1);
}
await import(built.href);
