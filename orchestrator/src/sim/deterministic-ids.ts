// SIMULATION: ids the orchestrator draws at random (instance ids, command ids,
// token ids) come from the run's seed instead, so one seed replays the same
// run: ties between instances are broken by id in ranking and planning. The
// sync forms of node:crypto's randomUUID and randomBytes are swapped for the
// run's generator (module.syncBuiltinESMExports makes ES imports see it) and
// put back by the returned function. Only the simulation calls this.

import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';

export function deterministicIds(random: () => number): () => void {
  const { randomUUID, randomBytes } = crypto;
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
  const patched = crypto as unknown as { randomUUID: () => string; randomBytes: (n: number, cb?: unknown) => Buffer };
  patched.randomUUID = () => {
    const h = bytes(16).toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  patched.randomBytes = ((n: number, cb?: unknown) =>
    typeof cb === 'function' ? (randomBytes as (n: number, cb: unknown) => void)(n, cb) : bytes(n)) as typeof patched.randomBytes;
  syncBuiltinESMExports();
  return () => {
    patched.randomUUID = randomUUID;
    patched.randomBytes = randomBytes as unknown as typeof patched.randomBytes;
    syncBuiltinESMExports();
  };
}
