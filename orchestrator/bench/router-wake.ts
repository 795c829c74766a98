// Wake latency for `npm run bench:router`: from a paused instance (connect →
// Login Success packet through the router, on the real orchestrator stack and
// Docker engine) vs the raw `docker unpause` + first ping of the same image, in
// alternating rounds; each pause is of an empty world that has worked through
// its previous logins (bench/wake-probe.ts says why).

import mc from 'minecraft-protocol';
import { DEFAULT_VERSION } from '../test/support/mc-server.js';
import { startStack } from '../test/support/router-stack.js';
import type { Cleanup } from './router-procs.js';
import { pausedLogin, runningLogin, startRawWake } from './wake-probe.js';

/** Status-ping round trips (ms) against host:port, one at a time. */
export async function pingTimes(port: number, pings: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < pings; i++) {
    const t0 = performance.now();
    await mc.ping({ host: '127.0.0.1', port, version: DEFAULT_VERSION, closeTimeout: 3000, noPongTimeout: 3000 });
    out.push(performance.now() - t0);
  }
  return out;
}

export async function wakeLatency(
  cleanups: Cleanup[],
  WAKES: number,
): Promise<{ routed: number[]; warm: number[]; seen: number[]; raw: number[] }> {
  const stack = await startStack('bench-rtr');
  cleanups.push(() => stack.close());
  const inst = await stack.createInstance(`${stack.run}-sleepy`);
  const endpoint = inst.endpoint;
  if (!endpoint) throw new Error('the bench instance has no endpoint');
  const router = await stack.startRouter(`try = ["s"]\n[servers]\ns = "instance:${inst.id}"\n`);
  const rawWake = await startRawWake({ 'endercloud.bench': stack.run });
  cleanups.push(() => rawWake.remove());
  const routed: number[] = [];
  const warm: number[] = [];
  const seen: number[] = [];
  const raw: number[] = [];
  // One unmeasured round first: the first login into a fresh container pays its warm-up.
  for (let i = 0; i <= WAKES; i++) {
    const woke = await pausedLogin(stack, router, inst.id, endpoint, `Waker${i}`);
    const plain = await runningLogin(router, endpoint, `Warm${i}`);
    const rawMs = await rawWake.round();
    if (i > 0) {
      routed.push(woke.ms);
      warm.push(plain);
      seen.push(woke.runningAt - woke.connectedAt);
      raw.push(rawMs);
    }
  }
  return { routed, warm, seen, raw };
}
