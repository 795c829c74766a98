// Small filesystem helpers shared by the agent's directory code.

import { lstat } from 'node:fs/promises';
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
