// Pure-ish inspection of an extracted (already validated) import tree: does it
// look like a Minecraft world, and how sure are we. Reads only the tree's top two
// levels and server.properties; never follows links (extractTarGz made none).

import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';

export interface ImportInspection {
  detected: { world: boolean; levelFile: string | null; serverProperties: boolean };
  confidence: 'high' | 'medium' | 'low';
  notes: string[];
}

const LEVEL_FILES = ['level.dat', 'level.json'];
const MAX_PROPERTIES_BYTES = 64 * 1024;

async function list(dir: string): Promise<{ files: Set<string>; dirs: Set<string> }> {
  const files = new Set<string>();
  const dirs = new Set<string>();
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (e.isDirectory()) dirs.add(e.name);
    else if (e.isFile()) files.add(e.name);
  }
  return { files, dirs };
}

/** `level-name` of a server.properties text (undefined when absent). */
export function levelNameOf(text: string): string | undefined {
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*level-name\s*[=:]\s*(.*?)\s*$/.exec(line);
    if (m) return m[1];
  }
  return undefined;
}

export async function inspectWorldTree(root: string): Promise<ImportInspection> {
  const notes: string[] = [];
  const top = await list(root);
  const propsAt = top.files.has('server.properties')
    ? ''
    : top.dirs.size === 1 && top.files.size === 0
      ? ([...top.dirs][0] as string)
      : undefined;
  let serverProperties = false;
  let levelName: string | undefined;
  if (propsAt !== undefined) {
    const file = path.join(root, propsAt, 'server.properties');
    const text = await readFile(file, 'utf8').then(
      (t) => t.slice(0, MAX_PROPERTIES_BYTES),
      () => undefined,
    );
    if (text !== undefined) {
      serverProperties = true;
      levelName = levelNameOf(text);
      notes.push(
        levelName
          ? `server.properties names level ${JSON.stringify(levelName)}`
          : 'server.properties has no level-name (the server default is "world")',
      );
    }
  }
  // The world folder: the root itself, or one top-level folder holding a level file.
  const candidates = ['', ...[...top.dirs].sort()];
  if (propsAt) candidates.push(...[...(await list(path.join(root, propsAt))).dirs].sort().map((d) => `${propsAt}/${d}`));
  let levelFile: string | null = null;
  let worldDir: string | undefined;
  for (const c of candidates) {
    const { files, dirs } = await list(path.join(root, c));
    const found = LEVEL_FILES.find((f) => files.has(f));
    if (found) {
      levelFile = c === '' ? found : `${c}/${found}`;
      worldDir = c;
      if (dirs.has('region')) break; // prefer a folder that also has region data
    }
  }
  let region = false;
  if (worldDir !== undefined) {
    const { dirs } = await list(path.join(root, worldDir));
    region = dirs.has('region') || dirs.has('DIM-1') || dirs.has('DIM1');
    notes.push(`level file found at ${levelFile}`);
    notes.push(region ? 'region data present' : 'no region/ folder next to the level file');
    if (levelName && worldDir !== '' && path.basename(worldDir) !== levelName)
      notes.push(`the world folder ${JSON.stringify(worldDir)} differs from level-name ${JSON.stringify(levelName)}`);
  } else {
    region = top.dirs.has('region');
    notes.push('no level.dat or level.json at the root or in a top-level folder');
    if (region) notes.push('a region/ folder is present without a level file');
  }
  const world = levelFile !== null;
  const confidence = world && region ? 'high' : world || region || (serverProperties && levelName !== undefined) ? 'medium' : 'low';
  return { detected: { world, levelFile, serverProperties }, confidence, notes };
}
