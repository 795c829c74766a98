// Heartbeat timing against a real (deliberately slow or failing) HTTP
// orchestrator on 127.0.0.1, plus scheduling checked with injected timers.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Heartbeater, readResources, type HeartbeatBody } from '../../src/agent/heartbeat.js';
import { realTimers, type Timers } from '../../src/shared/timers.js';

const silent = pino({ level: 'silent' });

interface Beat {
  at: number;
  body: HeartbeatBody;
  authorization: string | undefined;
  url: string;
}

interface TestOrchestrator {
  url: string;
  beats: Beat[];
  maxConcurrent: number;
  close(): Promise<void>;
}

async function startOrchestrator(
  handle: (n: number, req: IncomingMessage, res: ServerResponse) => Promise<void> | void,
): Promise<TestOrchestrator> {
  const state = { beats: [] as Beat[], concurrent: 0, maxConcurrent: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      state.concurrent++;
      state.maxConcurrent = Math.max(state.maxConcurrent, state.concurrent);
      const done = () => {
        state.concurrent--;
      };
      res.on('close', done);
      state.beats.push({
        at: Date.now(),
        body: JSON.parse(Buffer.concat(chunks).toString()),
        authorization: req.headers.authorization,
        url: req.url ?? '',
      });
      void Promise.resolve(handle(state.beats.length, req, res)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get beats() {
      return state.beats;
    },
    get maxConcurrent() {
      return state.maxConcurrent;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const body = async (): Promise<HeartbeatBody> => ({
  controlUrl: 'http://127.0.0.1:1',
  gameAddress: '127.0.0.1',
  version: 'test',
  resources: await readResources('/tmp'),
  portRange: { first: 30000, last: 30009 },
  heartbeatIntervalMs: 100,
});

function heartbeater(url: string, intervalMs: number, token?: string): Heartbeater {
  return new Heartbeater({
    orchestratorUrl: url,
    agentId: 'hb-agent',
    token,
    intervalMs,
    body,
    fetch,
    timers: realTimers,
    now: () => Date.now(),
    logger: silent,
  });
}

async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('Heartbeater against a real HTTP orchestrator', () => {
  it('sends the first beat right after start, with the documented body and the bearer token', async () => {
    const orch = await startOrchestrator((_n, _req, res) => void res.writeHead(204).end());
    cleanups.push(orch.close);
    const hb = heartbeater(orch.url, 60_000, 'tok-1');
    cleanups.push(() => hb.stop());
    const startedAt = Date.now();
    hb.start();
    await waitFor(() => orch.beats.length === 1, 1000);
    expect(orch.beats[0]!.at - startedAt).toBeLessThan(500);
    expect(orch.beats[0]!.url).toBe('/api/v1/agents/hb-agent/heartbeat');
    expect(orch.beats[0]!.authorization).toBe('Bearer tok-1');
    const b = orch.beats[0]!.body;
    expect(b).toMatchObject({
      controlUrl: 'http://127.0.0.1:1',
      gameAddress: '127.0.0.1',
      version: 'test',
      portRange: { first: 30000, last: 30009 },
      heartbeatIntervalMs: 100,
    });
    expect(b.resources.cpuCount).toBeGreaterThan(0);
    expect(b.resources.memoryTotalBytes).toBeGreaterThan(b.resources.memoryAvailableBytes);
    expect(b.resources.diskFreeBytes).toBeGreaterThan(0);
  });

  it('sends no Authorization header when no token is set', async () => {
    const orch = await startOrchestrator((_n, _req, res) => void res.writeHead(204).end());
    cleanups.push(orch.close);
    const hb = heartbeater(orch.url, 60_000);
    expect(await hb.beat()).toBe(true);
    expect(orch.beats[0]!.authorization).toBeUndefined();
  });

  it('never overlaps beats against a slow orchestrator', async () => {
    // Each answer takes 80 ms; the interval is 100 ms (timeout 100 ms).
    const orch = await startOrchestrator(async (_n, _req, res) => {
      await new Promise((r) => setTimeout(r, 80));
      res.writeHead(204).end();
    });
    cleanups.push(orch.close);
    const hb = heartbeater(orch.url, 100);
    cleanups.push(() => hb.stop());
    hb.start();
    await waitFor(() => orch.beats.length >= 5, 3000);
    await hb.stop();
    expect(orch.maxConcurrent).toBe(1);
    // Beats are scheduled start-to-start every 100 ms; arrival times also carry the time to build
    // each body, which varies under load, so the rate is checked over the run, not per gap.
    const beats = orch.beats;
    expect((beats[beats.length - 1]!.at - beats[0]!.at) / (beats.length - 1)).toBeGreaterThanOrEqual(80);
  });

  it('gives up on a beat after min(3 s, interval) and keeps beating', async () => {
    // The orchestrator never answers.
    const orch = await startOrchestrator(() => undefined);
    cleanups.push(orch.close);
    const hb = heartbeater(orch.url, 150);
    const t0 = Date.now();
    expect(await hb.beat()).toBe(false);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(140);
    expect(took).toBeLessThan(1000);
    hb.start();
    cleanups.push(() => hb.stop());
    await waitFor(() => orch.beats.length >= 3, 3000);
  });

  it('survives refusals and an unreachable orchestrator', async () => {
    const orch = await startOrchestrator((n, _req, res) => void res.writeHead(n <= 2 ? 500 : 204).end());
    cleanups.push(orch.close);
    const hb = heartbeater(orch.url, 30);
    cleanups.push(() => hb.stop());
    hb.start();
    await waitFor(() => orch.beats.length >= 4, 3000);
    // Nothing listens on port 9 of 127.0.0.1: connection refused, still no throw.
    const down = heartbeater('http://127.0.0.1:9', 30);
    expect(await down.beat()).toBe(false);
  });
});

describe('Heartbeater scheduling (injected timers)', () => {
  it('schedules the next beat only after the previous one finished, keeping the cadence', async () => {
    let now = 0;
    const scheduled: { fn: () => void; ms: number; cleared: boolean }[] = [];
    const timers: Timers = {
      setTimeout: (fn, ms) => {
        const t = { fn, ms, cleared: false };
        scheduled.push(t);
        return t;
      },
      clearTimeout: (h) => {
        (h as { cleared: boolean }).cleared = true;
      },
    };
    let release: (() => void) | undefined;
    let calls = 0;
    const fakeFetch = (async () => {
      calls++;
      await new Promise<void>((r) => (release = r));
      return new Response(null, { status: 204 });
    }) as unknown as typeof fetch;
    const hb = new Heartbeater({
      orchestratorUrl: 'http://o',
      agentId: 'a',
      token: undefined,
      intervalMs: 10_000,
      body,
      fetch: fakeFetch,
      timers,
      now: () => now,
      logger: silent,
    });
    hb.start();
    await waitFor(() => calls === 1, 1000);
    // Only the request timeout is pending: min(3 s, 10 s).
    expect(scheduled.map((t) => t.ms)).toEqual([3000]);
    now = 1200;
    release!();
    await waitFor(() => scheduled.length === 2, 1000);
    expect(scheduled[0]!.cleared).toBe(true);
    expect(scheduled[1]!.ms).toBe(8800);
    scheduled[1]!.fn();
    await waitFor(() => calls === 2, 1000);
    release!();
    await hb.stop();
  });
});
