// The orchestrator's request log at `info` (src/shared/request-log.ts): what
// repeats every few seconds (agent heartbeats, the router's registry reads and
// session reports, the panel's and ectl's reads) is debug; mutating calls and
// every refusal or error stay at info.

import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator, type FakeAgent, type TestOrchestrator } from './support.js';

interface Line {
  level: number;
  msg: string;
  req?: { method: string; url: string };
  res?: { statusCode: number };
}

let t: TestOrchestrator | undefined;
let agent: FakeAgent | undefined;
afterEach(async () => {
  await t?.close();
  await agent?.close();
  t = undefined;
  agent = undefined;
});

async function orchestratorLoggingAt(level: 'info' | 'debug') {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Line);
      done();
    },
  });
  agent = await startFakeAgent();
  t = await testOrchestrator({ deps: { logger: pino({ level }, sink) } });
  return lines;
}

/** The request-log lines of requests whose URL contains `part`, incoming and completed. */
const requestLines = (lines: Line[], ids: Map<string, string>, part: string) =>
  lines.filter(
    (l) =>
      (l.msg === 'incoming request' || l.msg === 'request completed') &&
      ids.get((l as { requestId?: string }).requestId ?? '')?.includes(part),
  );

async function periodicCalls(tt: TestOrchestrator, a: FakeAgent): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const call = async (method: string, url: string, opts: Parameters<TestOrchestrator['call']>[2] = {}) => {
    const res = await tt.call(method, url, opts);
    ids.set(String(res.headers['x-request-id']), `${method} ${url} ${res.status}`);
    return res;
  };
  expect((await call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN })).status).toBe(200);
  await tt.o.ctx.hosts.whenIdle();
  expect((await call('GET', '/api/v1/registry')).status).toBe(200);
  expect((await call('POST', '/api/v1/router/sessions', { body: { routerId: 'edge', events: [] } })).status).toBe(204);
  expect((await call('GET', '/api/v1/instances')).status).toBe(200);
  expect((await call('GET', '/api/v1/hosts/host-a')).status).toBe(200);
  // A mutating call and two failures, which stay at info.
  expect((await call('PUT', '/api/v1/templates/mc/versions/1', { body: { image: 'mc:1', resources: { memoryMb: 256 } } })).status).toBe(
    201,
  );
  expect((await call('GET', '/api/v1/instances/nope')).status).toBe(404);
  expect((await call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: null })).status).toBe(401);
  return ids;
}

describe('request log levels', () => {
  it('at info: no line for a heartbeat, a registry read, a session report or a read; a mutation and each failure are logged', async () => {
    const lines = await orchestratorLoggingAt('info');
    const ids = await periodicCalls(t!, agent!);
    for (const quiet of [
      'heartbeat 200',
      'GET /api/v1/registry',
      '/router/sessions',
      'GET /api/v1/instances 200',
      'GET /api/v1/hosts/host-a',
    ]) {
      expect(requestLines(lines, ids, quiet), quiet).toEqual([]);
    }
    expect(requestLines(lines, ids, 'PUT /api/v1/templates').map((l) => l.msg)).toEqual(['incoming request', 'request completed']);
    expect(
      requestLines(lines, ids, 'nope 404')
        .filter((l) => l.msg === 'request completed')
        .map((l) => l.res?.statusCode),
    ).toEqual([404]);
    expect(
      requestLines(lines, ids, 'heartbeat 401')
        .filter((l) => l.msg === 'request completed')
        .map((l) => l.res?.statusCode),
    ).toEqual([401]);
  });

  it('at debug: the quiet requests are all there', async () => {
    const lines = await orchestratorLoggingAt('debug');
    const ids = await periodicCalls(t!, agent!);
    for (const quiet of ['heartbeat 200', 'GET /api/v1/registry', '/router/sessions', 'GET /api/v1/instances 200']) {
      expect(
        requestLines(lines, ids, quiet).map((l) => [l.level, l.msg]),
        quiet,
      ).toEqual([
        [20, 'incoming request'],
        [20, 'request completed'],
      ]);
    }
  });
});
