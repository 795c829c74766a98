#!/usr/bin/env node
// Builds the web panel (../web) to ../web/dist, the static files the
// orchestrator serves at /. Run by `npm run build:web` (always builds) and by
// npm's `prepare` with `--if-stale`: there it builds only when ../web exists and
// its dist is missing or older than the panel's sources, so `npm ci` on a fresh
// clone builds the panel, while a later install (or `npx ectl`, which installs
// this package into npm's cache and runs `prepare` again, possibly offline)
// finds it up to date and does nothing.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

const web = fileURLToPath(new URL('../../web', import.meta.url));
if (!existsSync(join(web, 'package.json'))) process.exit(0);

/** Newest modification time under `path` (files only; node_modules and dist skipped). */
function newest(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = 0;
  for (const name of readdirSync(path)) {
    if (name === 'node_modules' || name === 'dist') continue;
    max = Math.max(max, newest(join(path, name)));
  }
  return max;
}

const built = join(web, 'dist', 'index.html');
if (process.argv.includes('--if-stale') && existsSync(built) && statSync(built).mtimeMs >= newest(web)) {
  process.stderr.write('web panel: ../web/dist is up to date\n');
  process.exit(0);
}
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
execFileSync(npm, ['ci', '--include=dev', '--no-audit', '--no-fund'], { cwd: web, stdio: 'inherit' });
execFileSync(npm, ['run', 'build'], { cwd: web, stdio: 'inherit' });
