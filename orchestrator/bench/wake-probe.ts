// What the wake benches (bench:fleet parts (c) and (d), bench:router's wake line)
// share: a minecraft-protocol login timed from its TCP connect to Login Success,
// the "empty and idle" wait before a pause or stop, the orchestrated sleep (pause
// or stop through the API) and login through the router, and the raw baselines: a
// plain container of the same image paused and unpaused, or stopped and started,
// straight through Docker, then pinged or logged in to.

import mc from 'minecraft-protocol';
import { docker } from '../test/support/docker.js';
import { DEFAULT_VERSION, pingStatus, startMcServerContainer, waitForStatus, type McServerContainer } from '../test/support/mc-server.js';
import { until, type Stack, type StackRouter } from '../test/support/router-stack.js';
import { pingServer } from '../src/protocol/status-client.js';
import { minecraftStatusReady } from '../src/lifecycle/readiness.js';

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
  await until(
    'the world empty and answering',
    () =>
      pingStatus(host, port, 2000).then(
        (st) => st.online === 0,
        () => false,
      ),
    20_000,
    20,
  );
}

type Endpoint = { host: string; port: number };

/** How a world sleeps before a measured login: paused (a wake) or stopped (a cold start). */
const SLEEPS = {
  pause: { state: 'paused', registry: 'Paused' },
  stop: { state: 'stopped', registry: 'Stopped' },
} as const;

/**
 * One measured wake (`pause`) or cold start (`stop`): the instance, empty and idle, is paused
 * or stopped through the API, and once the router's registry shows it Paused / Stopped a player
 * logs in through the router. `runningAt` is when the router's registry showed it Running again,
 * `feedRunningAt` when the orchestrator's registry feed announced it (performance.now()); `endpoint` is the instance's once online again (a start may move it).
 */
export async function asleepLogin(
  stack: Stack,
  router: StackRouter,
  instanceId: string,
  endpoint: Endpoint,
  username: string,
  how: keyof typeof SLEEPS = 'pause',
): Promise<{ ms: number; connectedAt: number; runningAt: number; feedRunningAt: number; endpoint: Endpoint }> {
  const sleepAs = SLEEPS[how];
  await emptyAndIdle(endpoint.host, endpoint.port);
  const r = await stack.api('POST', `/api/v1/instances/${instanceId}/${how}`);
  if (r.status !== 202 && r.status !== 200) throw new Error(`${how} answered ${r.status}: ${JSON.stringify(r.body)}`);
  await stack.waitForState(instanceId, sleepAs.state);
  const registry = router.parts.registry!;
  await until(`router sees ${sleepAs.registry}`, () => registry.get(instanceId)?.status === sleepAs.registry, 5000);
  let runningAt = Number.NaN;
  let feedRunningAt = Number.NaN;
  const unsubscribe = registry.subscribe(() => {
    if (Number.isNaN(runningAt) && registry.get(instanceId)?.status === 'Running') runningAt = performance.now();
  });
  // The orchestrator's side of the same push: its registry feed's upsert, before the SSE stream carries it.
  const unsubscribeFeed = stack.orchestrator.ctx.registry.subscribe((e) => {
    if (Number.isNaN(feedRunningAt) && e.kind === 'upsert' && e.backend.instanceId === instanceId && e.backend.status === 'Running')
      feedRunningAt = performance.now();
  });
  try {
    const login = await loginSuccessMs(router.port, username, 25_000);
    const online = await stack.waitForState(instanceId, 'online');
    return { ...login, runningAt, feedRunningAt, endpoint: (online.endpoint as Endpoint | null) ?? endpoint };
  } finally {
    unsubscribe();
    unsubscribeFeed();
  }
}

/** asleepLogin of a paused world (bench:router's wake line). */
export const pausedLogin = (stack: Stack, router: StackRouter, instanceId: string, endpoint: Endpoint, username: string) =>
  asleepLogin(stack, router, instanceId, endpoint, username, 'pause');

/** The same login to the now Running instance (once it is empty and idle again): what the backend's own login costs. */
export async function runningLogin(router: StackRouter, endpoint: { host: string; port: number }, username: string): Promise<number> {
  await emptyAndIdle(endpoint.host, endpoint.port);
  return (await loginSuccessMs(router.port, username, 25_000)).ms;
}

/** Where a raw round's time goes, ms after the Docker call was sent. */
export interface RawStages {
  /** The engine answered the unpause / start. */
  answered: number;
  /** The server answered a ready status ping (for an unpause: = answered, no ping is sent). */
  up: number;
  /** Login Success of the login straight to the container (its own connect → success added to `up`). */
  loginSuccess: number;
}

/** The raw baselines: a container of the same image outside the orchestrator (whose supervisor would react to a pause it did not ask for). */
export interface RawWake {
  /** Pause, 300 ms, then unpause + first status ping: the ms of the last part (bench:router). */
  round(): Promise<number>;
  /** Once empty and idle: pause, 300 ms, then unpause + a login straight to it (bench:fleet (c)). */
  unpauseLogin(username: string): Promise<RawStages>;
  /**
   * Once empty and idle: `docker stop`, then `docker start` + a ready status ping every 5 ms
   * (the orchestrator's own probe, src/protocol/status-client.ts) + a login (bench:fleet (d)).
   */
  startLogin(username: string): Promise<RawStages>;
  remove(): Promise<void>;
}

const RAW_PROBE_MS = 5;

export async function startRawWake(labels: Record<string, string>): Promise<RawWake> {
  const plain: McServerContainer = await startMcServerContainer({ labels });
  try {
    await waitForStatus(plain.host, plain.hostPort, (st) => st.max > 0, 30_000);
  } catch (err) {
    await plain.remove();
    throw err;
  }
  const c = docker().getContainer(plain.id);
  // The client's own start-up (before its connect) is left out, as in the routed login: the
  // login's connect → Login Success is added to the moment the server was known to be up.
  const login = async (t0: number, answeredAt: number, upAt: number, username: string): Promise<RawStages> => {
    const { ms } = await loginSuccessMs(plain.hostPort, username, 20_000);
    return { answered: answeredAt - t0, up: upAt - t0, loginSuccess: upAt - t0 + ms };
  };
  return {
    async round() {
      await c.pause();
      await sleep(300);
      const t0 = performance.now();
      await c.unpause();
      await until(
        'first ping after unpause',
        () =>
          pingStatus(plain.host, plain.hostPort, 2000).then(
            () => true,
            () => false,
          ),
        20_000,
        5,
      );
      return performance.now() - t0;
    },
    async unpauseLogin(username) {
      await emptyAndIdle(plain.host, plain.hostPort);
      await c.pause();
      await sleep(300);
      const t0 = performance.now();
      await c.unpause();
      const answeredAt = performance.now();
      return login(t0, answeredAt, answeredAt, username);
    },
    async startLogin(username) {
      await emptyAndIdle(plain.host, plain.hostPort);
      await c.stop({ t: 10 });
      const t0 = performance.now();
      await c.start();
      const answeredAt = performance.now();
      await until(
        'a ready ping after docker start',
        () =>
          pingServer(plain.host, plain.hostPort, { timeoutMs: 1000 }).then(
            (r) => minecraftStatusReady(r.status),
            () => false,
          ),
        30_000,
        RAW_PROBE_MS,
      );
      return login(t0, answeredAt, performance.now(), username);
    },
    remove: () => plain.remove(),
  };
}
