// What the wake benches (bench:fleet part (c), bench:router's wake line) share:
// a minecraft-protocol login timed from its TCP connect to Login Success, the
// "empty and idle" wait before a pause, and the raw baseline (a plain container
// of the same image paused and unpaused straight through Docker, then pinged).

import mc from 'minecraft-protocol';
import { docker } from '../test/support/docker.js';
import { DEFAULT_VERSION, pingStatus, startMcServerContainer, waitForStatus, type McServerContainer } from '../test/support/mc-server.js';
import { until, type Stack, type StackRouter } from '../test/support/router-stack.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Milliseconds from the TCP connect to the Login Success packet (the end of the
 * login state), and when the connect happened (performance.now()). Timed from the
 * connect, not from createClient: the client's own start-up (loading its protocol
 * data, hundreds of ms on a busy machine) is no part of the server side measured.
 */
export async function loginSuccessMs(port: number, username: string, timeoutMs: number): Promise<{ ms: number; connectedAt: number }> {
  let t0 = performance.now();
  const client = mc.createClient({ host: '127.0.0.1', port, username, version: DEFAULT_VERSION, auth: 'offline', hideErrors: true });
  client.on('error', () => undefined);
  client.on('connect', () => {
    t0 = performance.now();
  });
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
    return { ms: performance.now() - t0, connectedAt: t0 };
  } finally {
    client.end();
  }
}

/**
 * Resolves once the server at host:port answers a status ping with nobody online: the
 * previous logins have left and it has worked through them. Worlds are paused when empty
 * (the idle tiers); freezing one in the middle of a login's work (the test server spends
 * 100+ ms of CPU per login) would bill that work to the next wake, not measure the wake.
 */
export async function emptyAndIdle(host: string, port: number): Promise<void> {
  await until('the world empty and answering', () => pingStatus(host, port, 2000).then((st) => st.online === 0, () => false), 20_000, 20);
}

/**
 * One measured wake: the instance (empty and idle) is paused through the API, and once the
 * router's registry shows it Paused a player logs in through the router. `runningAt` is when
 * the router's registry showed it Running again (performance.now()).
 */
export async function pausedLogin(stack: Stack, router: StackRouter, instanceId: string, endpoint: { host: string; port: number }, username: string): Promise<{ ms: number; connectedAt: number; runningAt: number }> {
  await emptyAndIdle(endpoint.host, endpoint.port);
  const r = await stack.api('POST', `/api/v1/instances/${instanceId}/pause`);
  if (r.status !== 202 && r.status !== 200) throw new Error(`pause answered ${r.status}: ${JSON.stringify(r.body)}`);
  await stack.waitForState(instanceId, 'paused');
  const registry = router.parts.registry!;
  await until('router sees Paused', () => registry.get(instanceId)?.status === 'Paused', 5000);
  let runningAt = Number.NaN;
  const unsubscribe = registry.subscribe(() => {
    if (Number.isNaN(runningAt) && registry.get(instanceId)?.status === 'Running') runningAt = performance.now();
  });
  try {
    const login = await loginSuccessMs(router.port, username, 25_000);
    await stack.waitForState(instanceId, 'online');
    return { ...login, runningAt };
  } finally {
    unsubscribe();
  }
}

/** The same login to the now Running instance (once it is empty and idle again): what the backend's own login costs. */
export async function runningLogin(router: StackRouter, endpoint: { host: string; port: number }, username: string): Promise<number> {
  await emptyAndIdle(endpoint.host, endpoint.port);
  return (await loginSuccessMs(router.port, username, 25_000)).ms;
}

/** The raw baseline: a container of the same image outside the orchestrator (whose supervisor would react to a pause it did not ask for). */
export interface RawWake {
  /** Pause, 300 ms, then unpause + first status ping: the ms of the last part. */
  round(): Promise<number>;
  remove(): Promise<void>;
}

export async function startRawWake(labels: Record<string, string>): Promise<RawWake> {
  const plain: McServerContainer = await startMcServerContainer({ labels });
  try {
    await waitForStatus(plain.host, plain.hostPort, (st) => st.max > 0, 30_000);
  } catch (err) {
    await plain.remove();
    throw err;
  }
  const c = docker().getContainer(plain.id);
  return {
    async round() {
      await c.pause();
      await sleep(300);
      const t0 = performance.now();
      await c.unpause();
      await until('first ping after unpause', () => pingStatus(plain.host, plain.hostPort, 2000).then(() => true, () => false), 20_000, 5);
      return performance.now() - t0;
    },
    remove: () => plain.remove(),
  };
}
