// Failures that say what happened, on the real engine: a create whose image
// cannot be pulled stays `error` with the agent's reason (never flips to
// `unknown`), and drift made by hand with the Docker API is brought back to the
// desired state with a history entry, or handed to an operator
// (docs/lifecycle.md "Drift"). Each transition is one info log line.

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orchestrator } from '../../src/server/orchestrator.js';
import type { TestAgent } from '../support/agent-harness.js';
import { docker, uniqueId } from '../support/docker.js';
import { mcServerImageTag } from '../support/mc-server.js';
import { startRealAgentStack, waitFor, type RealAgentStack } from '../support/real-agent-stack.js';
import { startRegistry, type LocalRegistry } from '../support/registry.js';
import type { Loose } from './support.js';

const RUN = uniqueId('drift');
const AGENT_ID = `${RUN}-host`;

let stack: RealAgentStack;
let agent: TestAgent;
let registry: LocalRegistry;
let o: Orchestrator;
let call: RealAgentStack['call'];
const lines: Loose[] = [];
const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });

const get = async (id: string): Promise<Loose> => (await call('GET', `/instances/${id}`)).body;
const history = async (id: string): Promise<Loose[]> => (await call('GET', `/instances/${id}/history?limit=200`)).body.history;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitState(id: string, state: string, timeoutMs = 20_000): Promise<Loose> {
  let last: Loose;
  try {
    return await waitFor(`state ${state}`, async () => ((last = await get(id)).state === state ? last : undefined), timeoutMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}; last ${last?.state} (${last?.stateReason})`);
  }
}

async function container(id: string) {
  const [c] = await docker().listContainers({
    all: true,
    filters: { label: [`orchestrator.instance=${id}`, `orchestrator.host=${AGENT_ID}`] },
  });
  return docker().getContainer(c!.Id);
}
const dockerState = async (id: string): Promise<string> => (await (await container(id)).inspect()).State.Status;

async function create(name: string, variant = 'plain'): Promise<string> {
  const res = await call('POST', '/instances', { groupId: 'drift', variantId: variant, name });
  expect(res.status).toBe(202);
  return res.body.id as string;
}

const template = (image: string) => ({
  image,
  resources: { memoryMb: 256 },
  containerPort: 25565,
  restartPolicy: 'never',
  readiness: { kind: 'minecraft', startupTimeoutMs: 20_000, intervalMs: 150, probeTimeoutMs: 1000 },
  stop: { signal: 'SIGTERM', timeoutMs: 2000 },
});

beforeAll(async () => {
  registry = await startRegistry();
  stack = await startRealAgentStack({
    agentId: AGENT_ID,
    env: {
      ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms',
      ENDERCLOUD_COMMAND_RETRY_MAX: '500ms',
      ENDERCLOUD_COMMAND_LEASE: '2s',
      ENDERCLOUD_UNKNOWN_GRACE: '10m',
    },
    deps: { logger },
  });
  ({ agent, o, call } = stack);
  expect((await call('PUT', '/templates/drift/versions/1', template(mcServerImageTag()))).status).toBe(201);
  // In no registry: the local registry answers "manifest unknown" for it.
  expect(
    (await call('PUT', '/templates/drift-missing/versions/1', template(`${registry.address}/endercloud/${RUN}-missing:1`))).status,
  ).toBe(201);
  expect(
    (
      await call('PUT', '/groups/drift', {
        kind: 'persistent',
        variants: [
          { id: 'plain', template: { name: 'drift', version: '1' } },
          { id: 'missing', template: { name: 'drift-missing', version: '1' } },
        ],
      })
    ).status,
  ).toBe(201);
}, 60_000);

afterAll(async () => {
  try {
    await stack?.close();
  } finally {
    await registry?.stop();
  }
});

describe('failures say what happened (real engine)', () => {
  it('a create whose image cannot be pulled stays error with the agent reason, through many supervisor ticks', async () => {
    const id = await create('drift-missing', 'missing');
    const failed = await waitState(id, 'error');
    expect(failed.stateReason).toContain(`${RUN}-missing`);
    await sleep(1500); // ten supervisor ticks
    const later = await get(id);
    expect(later).toMatchObject({ state: 'error', stateReason: failed.stateReason });
    expect((await history(id)).map((h) => h.to)).not.toContain('unknown');
  });

  it('stopped, but started outside EnderCloud → stopped again, with a history entry saying so', async () => {
    const id = await create('drift-stopped');
    await waitState(id, 'online');
    expect((await call('POST', `/instances/${id}/stop`)).status).toBe(202);
    await waitState(id, 'stopped');
    await (await container(id)).start();
    const entry = await waitFor('drift entry', async () => (await history(id)).find((h) => h.details?.event === 'drift_corrected'));
    expect(entry).toMatchObject({ from: 'stopped', to: 'stopped', actor: 'system', details: { action: 'stop' } });
    expect(entry.reason).toMatch(/started outside EnderCloud/);
    await waitFor('container exited', async () => (await dockerState(id)) === 'exited');
    expect((await get(id)).state).toBe('stopped');
    // Each lifecycle transition was one info line naming instance, from, to and reason.
    const moves = lines.filter((l) => l.component === 'lifecycle' && l.instanceId === id);
    expect(moves.map((l) => `${l.from}>${l.to}`)).toEqual([
      'installing>stopped',
      'stopped>starting',
      'starting>online',
      'online>stopping',
      'stopping>stopped',
    ]);
    expect(moves.every((l) => l.level === 30 && typeof l.reason === 'string')).toBe(true);
  });

  it('paused, but unpaused outside EnderCloud → paused again, with a history entry', async () => {
    const id = await create('drift-paused');
    await waitState(id, 'online');
    expect((await call('POST', `/instances/${id}/pause`)).status).toBe(202);
    await waitState(id, 'paused');
    await (await container(id)).unpause();
    const entry = await waitFor('drift entry', async () => (await history(id)).find((h) => h.details?.event === 'drift_corrected'));
    expect(entry).toMatchObject({ from: 'paused', to: 'paused', details: { action: 'pause' } });
    await waitFor('container paused', async () => (await dockerState(id)) === 'paused');
    expect((await get(id)).state).toBe('paused');
  });

  it('online, but paused outside EnderCloud → resumed, with a history entry', async () => {
    const id = await create('drift-online');
    await waitState(id, 'online');
    await (await container(id)).pause();
    const entry = await waitFor('drift entry', async () => (await history(id)).find((h) => h.details?.event === 'drift_corrected'));
    expect(entry).toMatchObject({ from: 'online', to: 'online', details: { action: 'resume' } });
    await waitFor('container running', async () => (await dockerState(id)) === 'running');
    await waitState(id, 'online');
  });

  it("the supervisor's inventory polls are logged at debug by the agent (they were half of all lines)", () => {
    const polls = agent.logLines.filter(
      (l) => l.msg === 'incoming request' && (l.req as Loose)?.method === 'GET' && (l.req as Loose)?.url === '/api/v1/instances',
    );
    expect(polls.length).toBeGreaterThan(10);
    expect(polls.every((l) => l.level === 20)).toBe(true);
    const inspect = agent.logLines.filter((l) => l.msg === 'incoming request' && (l.req as Loose)?.method === 'POST');
    expect(inspect.some((l) => l.level === 30)).toBe(true); // other requests keep info
  });

  it('stopped, but paused outside EnderCloud → intervention_required with the observation (a frozen server cannot save its world)', async () => {
    const id = await create('drift-frozen');
    await waitState(id, 'online');
    await call('POST', `/instances/${id}/stop`);
    await waitState(id, 'stopped');
    // Hold the supervisor while the container is started and frozen, so no tick sees it merely running.
    await o.supervisor.stop();
    const c = await container(id);
    await c.start();
    await c.pause();
    o.supervisor.start();
    const held = await waitState(id, 'intervention_required');
    expect(held.stateReason).toMatch(/paused/);
    expect(await dockerState(id)).toBe('paused');
    await c.unpause();
  });
});
