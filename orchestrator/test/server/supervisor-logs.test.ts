// Honest logs: a reconciliation the lifecycle refuses is logged at info once
// per change (then at debug), and each lifecycle transition is one info line
// with instance, from, to and reason (logged by the store adapter the composition root wires, after commit).

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveInstance } from '../../src/server/lifecycle-engine/instance-transitions.js';
import {
  AGENT_TOKEN,
  heartbeatBody,
  startFakeAgent,
  testOrchestrator,
  type FakeAgent,
  type Loose,
  type TestOrchestrator,
} from './support.js';

const lines: Loose[] = [];
const logger = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
let t: TestOrchestrator;
let a: FakeAgent;
let id: string;

beforeAll(async () => {
  t = await testOrchestrator({ deps: { logger } });
  a = await startFakeAgent();
  expect((await t.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN })).status).toBe(200);
  await t.o.ctx.hosts.whenIdle();
  await t.call('PUT', '/api/v1/templates/mc/versions/1', {
    body: {
      image: 'mc:1',
      resources: { memoryMb: 256 },
      readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 5000, intervalMs: 100 },
    },
  });
  await t.call('PUT', '/api/v1/groups/g', {
    body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] },
  });
  id = (await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', name: 'logged' } })).body.id;
  for (let i = 0; i < 10; i++) {
    const claimed = await t.o.worker.tick();
    await t.o.worker.whenIdle();
    if (claimed.length === 0) break;
  }
  await t.o.supervisor.probeOnce(id);
});
afterAll(async () => {
  await t?.close();
  await a?.close();
});

describe('supervisor and transition logs', () => {
  it('each transition of the create and start was one info line naming instance, from, to and reason', () => {
    const moves = lines.filter((l) => l.component === 'lifecycle' && l.instanceId === id);
    expect(moves.map((l) => `${l.from}>${l.to}`)).toEqual(['installing>stopped', 'stopped>starting', 'starting>online']);
    for (const l of moves)
      expect(l).toMatchObject({
        level: 30,
        instance: 'logged',
        reason: expect.any(String),
        msg: expect.stringContaining(`${l.from} → ${l.to}`),
      });
  });

  it('a refused reconciliation is logged at info once, not every tick, and again when it changes', async () => {
    const instance = (await t.o.store.instances.get(id))!;
    // Degraded but desired paused: reconciliation asks for a pause, which is only allowed from online.
    const degraded = await moveInstance(t.o.store, instance, 'degraded', { now: t.clock.now(), reason: 'test: probes failing' });
    await t.o.store.instances.update(id, { desiredState: 'paused' }, { now: t.clock.now() });
    expect(degraded?.state).toBe('degraded');
    const refused = () => lines.filter((l) => l.instanceId === id && /reconciliation action refused/.test(l.msg));
    for (let i = 0; i < 4; i++) await t.o.supervisor.tick();
    expect(refused().filter((l) => l.level === 30)).toHaveLength(1);
    expect(refused().filter((l) => l.level === 20)).toHaveLength(3);
    expect(refused()[0]).toMatchObject({ state: 'degraded', action: 'pause', err: expect.stringMatching(/cannot pause/) });
  });
});
