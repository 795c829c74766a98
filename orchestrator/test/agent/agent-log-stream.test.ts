// Followed logs and stdin through the real agent API on the real Docker engine:
// lines the server writes after the request starts arrive (stdout and stderr),
// a client that leaves closes the engine's log stream, the stream ends when
// the container stops, and stdin still takes lines after an agent restart.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStream, type StreamAnswer } from '../../src/shared/http-stream.js';
import {
  createTestAgent,
  randomPortRange,
  removeNetwork,
  startFakeOrchestrator,
  type FakeOrchestrator,
  type TestAgent,
} from '../support/agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { busyboxImage, ensureImage } from '../support/images.js';

const RUN = uniqueId('logstream');
const NETWORK = `ec-${RUN}`;
const AGENT_ID = `${RUN}-a`;
const portRange = randomPortRange(4);

let orch: FakeOrchestrator;
let agent: TestAgent;
let agentUrl: string;
let image: string;
const ID = `i-${RUN}`;

// A console on stdin: each line is echoed on stdout and on stderr.
const CONSOLE = 'echo started; while read -r line; do echo "out: $line"; echo "err: $line" >&2; done; echo "stdin closed"';

async function call(a: TestAgent, method: 'GET' | 'PUT' | 'POST', url: string, payload?: Record<string, unknown>) {
  const res = await a.app.inject({ method, url: `/api/v1${url}`, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

function follow(tail = 10): Promise<StreamAnswer> {
  return openStream(new URL(`${agentUrl}/api/v1/instances/${ID}/logs?follow=true&tail=${tail}`), { headers: {}, headTimeoutMs: 5000 });
}

/** Reads the stream until `until` matches what arrived (bounded). */
async function readUntil(answer: StreamAnswer, until: RegExp, timeoutMs = 10_000): Promise<string> {
  let text = '';
  const deadline = Date.now() + timeoutMs;
  answer.body.setEncoding('utf8');
  for await (const chunk of answer.body) {
    text += chunk as string;
    if (until.test(text)) return text;
    if (Date.now() > deadline) break;
  }
  throw new Error(`stream ended or timed out before ${until}: ${JSON.stringify(text)}`);
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  image = await ensureImage(busyboxImage);
  orch = await startFakeOrchestrator();
  agent = await createTestAgent({ agentId: AGENT_ID, orchestratorUrl: orch.url, portRange, network: NETWORK, leaderEpoch: 1 });
  agentUrl = await agent.app.listen({ host: '127.0.0.1', port: 0 });
  const created = await call(agent, 'PUT', `/instances/${ID}`, {
    groupId: 'g',
    variantId: 'v',
    image,
    layers: [],
    resources: { memoryMb: 64 },
    command: ['sh', '-c', CONSOLE],
    openStdin: true,
    stopSignal: 'SIGKILL',
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
});

afterAll(async () => {
  await removeContainersByLabel({ 'orchestrator.host': AGENT_ID });
  await agent?.close();
  await orch?.close();
  await removeNetwork(NETWORK);
});

describe('agent: followed logs and stdin on Docker', () => {
  it('the managed container is created with an open stdin that stays open (OpenStdin, not StdinOnce)', async () => {
    const [c] = await docker().listContainers({ all: true, filters: { label: [`orchestrator.instance=${ID}`] } });
    const info = await docker().getContainer(c!.Id).inspect();
    expect(info.Config.OpenStdin).toBe(true);
    expect(info.Config.StdinOnce).toBe(false);
  });

  it('streams chunked text/plain: the tail first, then lines written after the request started, stdout and stderr', async () => {
    const answer = await follow();
    expect(answer.status).toBe(200);
    expect(answer.contentType).toBe('text/plain; charset=utf-8');
    expect(answer.body.headers['transfer-encoding']).toBe('chunked');
    let text = '';
    answer.body.setEncoding('utf8');
    answer.body.on('data', (c: string) => void (text += c));
    await waitFor(() => text.includes('started'), 'the tail');
    for (const word of ['alpha', 'beta']) {
      expect((await call(agent, 'POST', `/instances/${ID}/stdin`, { line: word })).status).toBe(200);
      await waitFor(() => text.includes(`out: ${word}\n`) && text.includes(`err: ${word}\n`), `the lines for ${word}`);
    }
    expect(text.indexOf('started')).toBeLessThan(text.indexOf('out: alpha'));
    expect(agent.runtime.openLogFollows).toBe(1);
    answer.body.destroy();
  });

  it('a client that disconnects closes the engine log stream (nothing left open)', async () => {
    await waitFor(() => agent.runtime.openLogFollows === 0, 'the previous stream to close');
    const streams = await Promise.all([follow(), follow(), follow()]);
    await Promise.all(streams.map((s) => readUntil(s, /started/)));
    expect(agent.runtime.openLogFollows).toBe(3);
    for (const s of streams) s.body.destroy();
    await waitFor(() => agent.runtime.openLogFollows === 0, 'every engine stream to close');
  });

  it('stdin takes lines after an agent restart (a new agent process attaches anew)', async () => {
    const restarted = await createTestAgent({ agentId: AGENT_ID, orchestratorUrl: orch.url, portRange, network: NETWORK, leaderEpoch: 1 });
    try {
      expect((await call(restarted, 'POST', `/instances/${ID}/stdin`, { line: 'after restart' })).status).toBe(200);
      await waitFor(
        async () => (await restarted.app.inject({ url: `/api/v1/instances/${ID}/logs?tail=5` })).body.includes('out: after restart'),
        'the line in the log',
      );
    } finally {
      await restarted.close();
    }
  });

  it('the stream ends when the container stops', async () => {
    const answer = await follow(1);
    const done = new Promise<string>((resolve, reject) => {
      let text = '';
      answer.body.setEncoding('utf8');
      answer.body.on('data', (c: string) => void (text += c));
      answer.body.on('end', () => resolve(text));
      answer.body.on('error', reject);
    });
    await waitFor(() => agent.runtime.openLogFollows === 1, 'the stream to open');
    expect((await call(agent, 'POST', `/instances/${ID}/stop`, { timeoutSeconds: 1 })).status).toBe(200);
    await expect(done).resolves.toEqual(expect.any(String));
    await waitFor(() => agent.runtime.openLogFollows === 0, 'the engine stream to close');
    // Following a stopped container answers its tail and ends at once.
    const stopped = await follow(3);
    stopped.body.setEncoding('utf8');
    let rest = '';
    for await (const c of stopped.body) rest += c as string;
    expect(rest).toContain('out: after restart');
  });
});
