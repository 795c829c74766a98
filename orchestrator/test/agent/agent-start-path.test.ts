// One start path and one lock per instance on the agent, against the real Docker engine: a
// retried create that finds its container, POST /instances/:id/start and a replace that keeps its
// container all apply the template's config-file edits before the engine's start; a start issued
// while a restore of the same instance runs waits for the restore.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestAgent,
  randomPortRange,
  removeNetwork,
  startFakeOrchestrator,
  type FakeOrchestrator,
  type TestAgent,
} from '../support/agent-harness.js';
import { removeContainersByLabel, uniqueId } from '../support/docker.js';
import { busyboxImage, imageTag } from '../support/images.js';
import type { LayerRef } from '../../src/agent/contracts.js';

const RUN = uniqueId('agent-start-path');
const NETWORK = `ec-${RUN}`;

let orch: FakeOrchestrator;
let agent: TestAgent;
let layer: LayerRef;

const CONTAINER = {
  groupId: 'lobby',
  variantId: 'v1',
  image: imageTag(busyboxImage),
  resources: { memoryMb: 64 },
  command: ['sh', '-c', 'exec sleep 3600'],
  configFiles: [{ path: 'server.properties', parser: 'properties', edits: [{ key: 'motd', value: 'edited' }] }],
};

const inject = (method: 'PUT' | 'POST', id: string, url: string, payload?: object) =>
  agent.app.inject({ method, url: `/api/v1/instances/${id}${url}`, ...(payload ? { payload } : {}) });
const properties = (id: string): string => readFileSync(join(agent.runtimeDirectory, 'instances', id, 'server.properties'), 'utf8');
const reset = (id: string): void => writeFileSync(join(agent.runtimeDirectory, 'instances', id, 'server.properties'), 'motd=base\n');

async function waitUntil(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  orch = await startFakeOrchestrator();
  layer = await orch.addLayer('base', { 'server.properties': { content: 'motd=base\n' } });
  agent = await createTestAgent({
    agentId: RUN,
    orchestratorUrl: orch.url,
    portRange: randomPortRange(10),
    network: NETWORK,
    leaderEpoch: 1,
  });
});

afterAll(async () => {
  await removeContainersByLabel({ 'orchestrator.host': RUN });
  await agent?.close();
  await removeNetwork(NETWORK);
  await orch?.close();
});

describe('one start path', () => {
  it('a retried create that finds its container starts it with the config-file edits, as POST start and a keeping replace do', async () => {
    const id = 'i-retry-edits';
    const created = await inject('PUT', id, '', { ...CONTAINER, layers: [layer], start: false });
    expect(created.statusCode, created.body).toBe(200);
    expect(created.json().state).toBe('created');
    expect(properties(id)).toBe('motd=base\n'); // nothing is edited before a start

    // The retry case: the container exists (created, never started) and this create starts it.
    const retried = await inject('PUT', id, '', { ...CONTAINER, layers: [layer] });
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.json()).toMatchObject({ containerId: created.json().containerId, state: 'running' });
    expect(properties(id)).toBe('motd=edited\n');

    // POST /instances/:id/start: the same step.
    expect((await inject('POST', id, '/stop', { timeoutSeconds: 1 })).statusCode).toBe(200);
    reset(id);
    const started = await inject('POST', id, '/start');
    expect(started.statusCode, started.body).toBe(200);
    expect(started.json().state).toBe('running');
    expect(properties(id)).toBe('motd=edited\n');

    // A replace whose container already has the requested config starts that container: the same step.
    expect((await inject('POST', id, '/stop', { timeoutSeconds: 1 })).statusCode).toBe(200);
    reset(id);
    const replaced = await inject('POST', id, '/replace', { ...CONTAINER, start: true });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.json()).toMatchObject({ replaced: false, containerId: created.json().containerId, state: 'running' });
    expect(properties(id)).toBe('motd=edited\n');
  }, 60_000);
});

describe('one lock per instance', () => {
  it('a start issued while a restore of the same instance runs waits for the restore', async () => {
    const id = 'i-lock';
    expect((await inject('PUT', id, '', { ...CONTAINER, layers: [layer], start: false })).statusCode).toBe(200);
    const backup = await inject('POST', id, '/backups', { backupId: 'b1' });
    expect(backup.statusCode, backup.body).toBe(200);
    // A backup whose archive is a FIFO: the restore blocks reading it until the test writes the real archive.
    const dir = join(agent.runtimeDirectory, 'backups', id);
    const archive = readFileSync(join(dir, 'b1.tar.gz'));
    writeFileSync(join(dir, 'held.json'), JSON.stringify({ ...backup.json(), backupId: 'held' }));
    execFileSync('mkfifo', [join(dir, 'held.tar.gz')]);

    const order: string[] = [];
    const restore = inject('POST', id, '/restore', { backupId: 'held' }).then((r) => (order.push('restore'), r));
    const writer = createWriteStream(join(dir, 'held.tar.gz'));
    try {
      // The writer's open returns once the restore has opened the archive, i.e. inside the instance's lock.
      await Promise.race([
        once(writer, 'open'),
        restore.then((r) => Promise.reject(new Error(`restore answered before reading: ${r.body}`))),
      ]);
      const start = inject('POST', id, '/start').then((r) => (order.push('start'), r));
      const queued = (): boolean =>
        agent.logLines.some((l) => l.msg === 'action queued behind another action on this instance' && l.instanceId === id);
      await waitUntil(() => queued() || order.includes('start'), 'the start to queue (or to answer)');
      expect(order).toEqual([]); // the start waits; it did not run beside the restore
      writer.end(archive);
      const [restored, started] = await Promise.all([restore, start]);
      expect(restored.statusCode, restored.body).toBe(200);
      expect(started.statusCode, started.body).toBe(200);
      expect(started.json().state).toBe('running');
      expect(order).toEqual(['restore', 'start']);
    } finally {
      if (!writer.writableEnded) writer.end(archive); // never leave the restore blocked on the FIFO
      await restore;
    }
  }, 60_000);
});
