// Wake latency for `npm run bench:router`: from a paused instance (connect →
// Login Success packet through the router, on the real orchestrator stack and
// Docker engine) vs the raw `docker unpause` + first ping of the same image.

import mc from 'minecraft-protocol';
import { docker } from '../test/support/docker.js';
import { DEFAULT_VERSION, pingStatus, startMcServerContainer, waitForStatus } from '../test/support/mc-server.js';
import { startStack, until } from '../test/support/router-stack.js';
import type { Cleanup } from './router-procs.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/** Milliseconds from connecting to the Login Success packet (the end of the login state). */
async function loginSuccessMs(host: string, port: number, username: string, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  const client = mc.createClient({ host, port, username, version: DEFAULT_VERSION, auth: 'offline', hideErrors: true });
  client.on('error', () => undefined);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${username}: no Login Success within ${timeoutMs} ms`)), timeoutMs);
      let refusal = '';
      client.on('packet', (data: { reason?: unknown }, meta: mc.PacketMeta) => {
        if (meta.name === 'disconnect') refusal = ` (${JSON.stringify(data.reason)})`;
        if (meta.state === 'login' && meta.name === 'success') {
          clearTimeout(timer);
          resolve();
        }
      });
      client.once('end', (reason: string) => {
        clearTimeout(timer);
        reject(new Error(`${username} ended before Login Success: ${String(reason)}${refusal}`));
      });
    });
    return performance.now() - t0;
  } finally {
    client.end();
  }
}

export async function wakeLatency(cleanups: Cleanup[], WAKES: number): Promise<{ routed: number[]; warm: number[]; seen: number[]; raw: number[] }> {
  const stack = await startStack('bench-rtr');
  cleanups.push(() => stack.close());
  const inst = await stack.createInstance(`${stack.run}-sleepy`);
  const router = await stack.startRouter(`try = ["s"]\n[servers]\ns = "instance:${inst.id}"\n`);
  const routed: number[] = [];
  const warm: number[] = [];
  const seen: number[] = [];
  const raw: number[] = [];
  const pause = async () => {
    const r = await stack.api('POST', `/api/v1/instances/${inst.id}/pause`);
    if (r.status !== 202 && r.status !== 200) throw new Error(`pause answered ${r.status}: ${JSON.stringify(r.body)}`);
    await stack.waitForState(inst.id, 'paused');
    await until('router sees Paused', () => router.parts.registry!.get(inst.id)?.status === 'Paused', 5000);
  };
  // One unmeasured round first: the first login into a fresh container pays its warm-up.
  for (let i = 0; i <= WAKES; i++) {
    await pause();
    const registry = router.parts.registry!;
    const t0 = performance.now();
    let runningAfter = Number.NaN;
    const unsubscribe = registry.subscribe(() => {
      if (Number.isNaN(runningAfter) && registry.get(inst.id)?.status === 'Running') runningAfter = performance.now() - t0;
    });
    const woke = await loginSuccessMs('127.0.0.1', router.port, `Waker${i}`, 25_000);
    unsubscribe();
    // The same login to the now Running instance: what the backend itself costs, for reference.
    const plain = await loginSuccessMs('127.0.0.1', router.port, `Warm${i}`, 25_000);
    if (i > 0) {
      routed.push(woke);
      warm.push(plain);
      seen.push(runningAfter);
    }
  }
  // Raw: a container of the same image outside the orchestrator (whose supervisor would react to a
  // pause it did not ask for), paused and unpaused straight through Docker, then pinged directly.
  const plain = await startMcServerContainer({ labels: { 'endercloud.bench': stack.run } });
  cleanups.push(() => plain.remove());
  await waitForStatus(plain.host, plain.hostPort, (st) => st.max > 0, 30_000);
  const c = docker().getContainer(plain.id);
  for (let i = 0; i < WAKES; i++) {
    await c.pause();
    await sleep(300);
    const t0 = performance.now();
    await c.unpause();
    await until('first ping after unpause', () => pingStatus(plain.host, plain.hostPort, 2000).then(() => true, () => false), 20_000, 5);
    raw.push(performance.now() - t0);
  }
  return { routed, warm, seen, raw };
}
