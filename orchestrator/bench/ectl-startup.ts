// `npm run bench:ectl`: how long `ectl --version` takes, whole process, against
// `node -e 0` (the floor any Node CLI pays), in one process run: the two are
// started in turn (A B A B ...) so a drifting machine moves both, and the
// ratio of the medians is printed (goal: at most 3×). Builds dist/ectl.mjs
// first, so it measures the current source. `--runs N` (default 20);
// `--with-tsx` adds a few runs of the transpile-per-call entry for comparison.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const runsArg = args.indexOf('--runs');
const RUNS = runsArg >= 0 ? Number(args[runsArg + 1]) : 20;
if (!Number.isInteger(RUNS) || RUNS < 3 || RUNS > 200) throw new Error('--runs must be an integer from 3 to 200');
const GOAL = 3;

function timeOnce(cmd: string, argv: string[]): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, argv, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} exited ${r.status}: ${r.stderr.toString().trim()}`);
  return ms;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const row = (label: string, xs: number[]): string =>
  `${label.padEnd(34)} median ${median(xs).toFixed(1).padStart(7)} ms   min ${Math.min(...xs)
    .toFixed(1)
    .padStart(7)}   max ${Math.max(...xs)
    .toFixed(1)
    .padStart(7)}`;

const build = spawnSync(process.execPath, ['bin/build-ectl.mjs'], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) throw new Error('building dist/ectl.mjs failed');

const ectl = ['bin/ectl.js', '--version'];
const floor = ['-e', '0'];
// One warm-up each: the first start pays for a cold file cache.
timeOnce(process.execPath, ectl);
timeOnce(process.execPath, floor);
const a: number[] = [];
const b: number[] = [];
for (let i = 0; i < RUNS; i++) {
  a.push(timeOnce(process.execPath, ectl));
  b.push(timeOnce(process.execPath, floor));
}
console.log(`ectl start-up, ${RUNS} runs each, alternating (wall time per whole process)`);
console.log(row('node bin/ectl.js --version', a));
console.log(row('node -e 0', b));
if (args.includes('--with-tsx')) {
  const tsx = [fileURLToPath(new URL('../node_modules/tsx/dist/cli.mjs', import.meta.url)), 'src/cli/index.ts', '--version'];
  const t = [0, 1, 2].map(() => timeOnce(process.execPath, tsx));
  console.log(row('tsx src/cli/index.ts --version', t));
}
const ratio = median(a) / median(b);
console.log(`ratio ectl / node -e 0: ${ratio.toFixed(2)}× (goal ≤ ${GOAL}×: ${ratio <= GOAL ? 'met' : 'NOT met'})`);
