// Small filesystem helpers shared by the agent's directory code.

import { lstat, rename, rm } from 'node:fs/promises';
import type { Stats } from 'node:fs';

/** The errno code of a Node filesystem error (ENOENT, EEXIST, …), if any. */
export function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** lstat that answers undefined for a missing path (links are never followed). */
export async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Puts `replacement` at `target` by rename: an existing target is moved to
 * `aside` first and put back if the swap fails, then removed. Never a moment
 * without either the old or the new tree at `target`'s parent.
 */
export async function swapDirectory(target: string, replacement: string, aside: string, targetExists: boolean): Promise<void> {
  if (targetExists) await rename(target, aside);
  try {
    await rename(replacement, target);
  } catch (err) {
    if (targetExists) await rename(aside, target);
    throw err;
  }
  if (targetExists) await rm(aside, { recursive: true, force: true });
}
