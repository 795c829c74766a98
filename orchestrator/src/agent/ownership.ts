// Gives freshly extracted trees (restore output, imported data) to the
// container user. Only ever used on files the agent has just written: existing
// player data is never re-owned.

import { lchown, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export type Owner = { uid: number; gid: number };

/** lchowns a tree the agent just extracted (links are never followed). */
export async function giveTree(root: string, owner: Owner): Promise<void> {
  await lchown(root, owner.uid, owner.gid);
  for (const entry of await readdir(root, { withFileTypes: true })) {
    const abs = join(root, entry.name);
    if (entry.isDirectory()) await giveTree(abs, owner);
    else await lchown(abs, owner.uid, owner.gid);
  }
}
