// A command started with `detached: true` (its own process group: npm and the
// processes it starts), stopped as a whole: SIGTERM to the group, a bounded
// wait until every member is gone, then SIGKILL for what is left.

import type { ChildProcess } from 'node:child_process';

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function stopGroup(child: ChildProcess, boundMs = 20_000): Promise<void> {
  const pgid = child.pid;
  if (!pgid) return;
  if (groupAlive(pgid)) process.kill(-pgid, 'SIGTERM');
  const deadline = Date.now() + boundMs;
  while (groupAlive(pgid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
}
