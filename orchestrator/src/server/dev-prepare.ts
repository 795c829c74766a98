// What `npm start` prepares so that the next steps it prints work as printed,
// with no internet: the example network's server image (built on the local
// Docker engine once per content, tagged endercloud/mc-server:local), and the
// built ectl (bin/ectl.js runs dist/ectl.mjs; rebuilt when src/ is newer).

import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureImage } from '../shared/local-image.js';
import { MC_SERVER_LOCAL_TAG, mcServerImage } from '../../test-images/mc-server/image.js';

const ORCHESTRATOR_DIR = fileURLToPath(new URL('../../', import.meta.url));

/** Builds the example server image unless its content tag exists; never throws (the stack runs without it, the banner says why). */
export async function prepareExampleImage(socketPath: string, say: (line: string) => void): Promise<{ tag: string } | { problem: string }> {
  try {
    await ensureImage(mcServerImage, {
      socketPath,
      alias: MC_SERVER_LOCAL_TAG,
      onBuild: (tag) =>
        say(`building the example network's server image ${MC_SERVER_LOCAL_TAG} (${tag}; once per content, about a minute)…`),
    });
    return { tag: MC_SERVER_LOCAL_TAG };
  } catch (err) {
    return {
      problem: `${MC_SERVER_LOCAL_TAG} could not be built (${err instanceof Error ? err.message.split('\n')[0] : String(err)}); examples/network.yml needs it`,
    };
  }
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** `bin/ectl.js` as the banner prints it; builds dist/ectl.mjs when missing or older than src/. Returns a problem line, if any. */
export function prepareEctl(say: (line: string) => void): string | undefined {
  const built = path.join(ORCHESTRATOR_DIR, 'dist', 'ectl.mjs');
  let builtAt = 0;
  try {
    builtAt = statSync(built).mtimeMs;
  } catch {
    // not built yet
  }
  if (builtAt > newestMtime(path.join(ORCHESTRATOR_DIR, 'src'))) return undefined;
  say(builtAt ? 'rebuilding ectl (src/ changed since dist/ectl.mjs was built)…' : 'building ectl (dist/ectl.mjs)…');
  const r = spawnSync(process.execPath, [path.join(ORCHESTRATOR_DIR, 'bin', 'build-ectl.mjs')], {
    cwd: ORCHESTRATOR_DIR,
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  });
  return r.status === 0
    ? undefined
    : `ectl could not be built (${r.stderr.trim().split('\n')[0] ?? `exit ${r.status}`}): use npx --no-install ectl`;
}
