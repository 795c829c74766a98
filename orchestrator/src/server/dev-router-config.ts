// The router config of `npm start` (data/router.toml): every group of the
// registry gets a `[servers]` entry `group:<id>` and a forced host
// `<id>.localhost` (most systems resolve *.localhost to 127.0.0.1), and plain
// `localhost` goes to `lobby` (else the first group). The router's routes stay
// an explicit list (docs/router.md, "Routing model"), so the dev stack rewrites
// this file whenever a group is created or deleted; the router reloads it.
// Once the operator deletes the marker line, the file is theirs and is left alone.

import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChangePort } from './changes/change-port.js';

export const GENERATED_MARKER = '# Written by `npm start`, which rewrites it whenever a group is created or deleted.';

/** The forced host of a group on the dev stack. */
export const groupHost = (groupId: string): string => `${groupId.toLowerCase()}.localhost`;

/** The generated file for these groups (sorted; `lobby` first in `try` when it exists). */
export function devRouterToml(bind: string, groupIds: readonly string[]): string {
  const hosts = new Map<string, string>();
  for (const id of [...groupIds].sort()) if (!hosts.has(groupHost(id))) hosts.set(groupHost(id), id);
  const ids = [...hosts.values()];
  const first = ids.includes('lobby') ? 'lobby' : ids[0];
  return [
    GENERATED_MARKER,
    '# Every group: [servers] <id> = "group:<id>" and a forced host <id>.localhost; plain localhost',
    '# goes to lobby (else the first group). To edit by hand, delete the first line: npm start',
    '# then leaves this file alone (the router reloads it on save). Format: docs/router.md.',
    `bind = "${bind}"`,
    `try = [${first ? `"${first}"` : ''}]`,
    '',
    '[servers]',
    '# A group target takes a Ready instance of the group (waking or spawning one within its caps).',
    ...ids.map((id) => `"${id}" = "group:${id}"`),
    '',
    '[forced-hosts]',
    ...[...hosts].map(([host, id]) => `"${host}" = ["${id}"]`),
    '',
  ].join('\n');
}

/** What `npm start` wrote before it followed the groups: still its own, so it is regenerated. */
function isOldDefault(text: string): boolean {
  return text.startsWith('# Written by `npm start` on its first run; edit freely') && /\nlobby = "group:lobby"\n$/.test(text);
}

export interface DevRouterFile {
  file: string;
  bind: string;
  /** False once the operator took the file over (no marker line): it is not rewritten. */
  generated: boolean;
}

/** Reads the file's state: an existing file keeps its bind; a missing one is ours with `defaultBind`. */
export async function inspectRouterConfig(dataDir: string, defaultBind: string): Promise<DevRouterFile> {
  const file = path.join(dataDir, 'router.toml');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return { file, bind: defaultBind, generated: true };
  }
  // An existing file is in force: the banner shows its bind, not the default.
  const bind = /^bind\s*=\s*"([^"]+)"/m.exec(text)?.[1] ?? defaultBind;
  return { file, bind, generated: text.startsWith(GENERATED_MARKER) || isOldDefault(text) };
}

/** Rewrites a generated file for these groups when its content changes (by rename: the router never reads half a file). */
export async function writeRouterConfig(target: DevRouterFile, groupIds: readonly string[]): Promise<boolean> {
  if (!target.generated) return false;
  const text = devRouterToml(target.bind, groupIds);
  const current = await readFile(target.file, 'utf8').catch(() => undefined);
  if (current === text) return false;
  const tmp = `${target.file}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, text, { mode: 0o644 });
  await rename(tmp, target.file);
  return true;
}

export interface GroupFollower {
  /** Resolves once every rewrite asked so far is done. */
  settled(): Promise<void>;
  stop(): void;
}

/** Writes the config for the registry's groups now and after every group change, one write at a time. */
export async function followGroups(
  source: { groupIds(): Promise<string[]>; changes: ChangePort },
  target: DevRouterFile,
  onError: (err: Error) => void,
): Promise<GroupFollower> {
  let chain = Promise.resolve();
  const sync = () => {
    chain = chain
      .then(async () => void (await writeRouterConfig(target, await source.groupIds())))
      .catch((err: unknown) => onError(err instanceof Error ? err : new Error(String(err))));
  };
  sync();
  await chain;
  const stop = target.generated ? source.changes.subscribe((c) => c.kind === 'group' && sync()) : () => undefined;
  return { settled: () => chain, stop: () => void stop() };
}
