#!/usr/bin/env node
// Builds ectl into one ES module (dist/ectl.mjs) with esbuild, so a call costs
// one file load instead of a TypeScript transpile. Run by `npm run build:ectl`
// and by npm's `prepare` (so `npm ci` builds it). Dependencies are bundled too:
// resolving dozens of packages at start-up is most of what a CLI pays.
// `--if-available` (prepare): a production install (`npm ci --omit=dev`, the
// image) has no esbuild; it skips with one line instead of failing the install.
import { readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import process from 'node:process';
import { URL } from 'node:url';

async function loadEsbuild() {
  try {
    return await import('esbuild');
  } catch (err) {
    if (process.argv.includes('--if-available') && err?.code === 'ERR_MODULE_NOT_FOUND') {
      process.stderr.write('ectl: esbuild is not installed (a production install): dist/ectl.mjs not built\n');
      process.exit(0);
    }
    throw err;
  }
}
const { build } = await loadEsbuild();

const root = new URL('..', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const outArg = process.argv.slice(2).find((a) => !a.startsWith('--'));
const outfile = outArg ?? new URL('dist/ectl.mjs', root).pathname;
// Code splitting: what only some commands need (the YAML parser, the catalog schemas, the tar packer:
// dynamic imports inside those commands) goes into chunks beside the entry, loaded when such a command
// runs, so every command's start evaluates only the command tree (docs/bench.md, bench:ectl).
const outdir = dirname(outfile);
const chunkDir = `${basename(outfile, '.mjs')}-chunks`;
rmSync(join(outdir, chunkDir), { recursive: true, force: true });

await build({
  entryPoints: { [basename(outfile, '.mjs')]: new URL('src/cli/index.ts', root).pathname },
  outdir,
  outExtension: { '.js': '.mjs' },
  splitting: true,
  chunkNames: `${chunkDir}/[name]-[hash]`,
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
