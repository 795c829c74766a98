#!/usr/bin/env node
// Builds ectl into one ES module (dist/ectl.mjs) with esbuild, so a call costs
// one file load instead of a TypeScript transpile. Run by `npm run build:ectl`
// and by npm's `prepare` (so `npm ci` builds it). Dependencies are bundled too:
// resolving dozens of packages at start-up is most of what a CLI pays.
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const outfile = process.argv[2] ?? new URL('dist/ectl.mjs', root).pathname;

await build({
  entryPoints: [new URL('src/cli/index.ts', root).pathname],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  define: { __ECTL_VERSION__: JSON.stringify(pkg.version) },
  // Bundled CommonJS packages call require() on Node built-ins.
  banner: { js: "import { createRequire as __ectlRequire } from 'node:module'; const require = __ectlRequire(import.meta.url);" },
});
