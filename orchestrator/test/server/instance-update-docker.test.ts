// Image updates on the real Docker engine: an in-process orchestrator and a
// real agent drive the Minecraft-protocol test server. A second local tag of
// the same image → online on the new reference with the world kept; an image
// that exits at start → rolled back to the previous image and online again.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestAgent } from '../support/agent-harness.js';
import { docker, uniqueId } from '../support/docker.js';
import { ensureImage } from '../support/images.js';
import { mcServerImageTag, pingStatus } from '../support/mc-server.js';
import { startRealAgentStack, type RealAgentStack } from '../support/real-agent-stack.js';
import type { Loose } from './support.js';

const RUN = uniqueId('upd');
const AGENT_ID = `${RUN}-host`;
const NEXT_REPO = 'endercloud-test/mc-server-next';

let stack: RealAgentStack;
let agent: TestAgent;
let call: RealAgentStack['call'];
let brokenTag: string;

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 40_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const get = async (id: string): Promise<Loose> => (await call('GET', `/instances/${id}`)).body;
const idle = (state: string) => async (id: string) => {
  const v = await get(id);
  return v.state === state && v.activeAction === null ? v : undefined;
};
async function imageOfContainer(id: string): Promise<string | undefined> {
  const list = await docker().listContainers({
    all: true,
    filters: { label: [`orchestrator.instance=${id}`, `orchestrator.host=${AGENT_ID}`] },
  });
  return list[0]?.Image;
}

beforeAll(async () => {
  const mcTag = mcServerImageTag();
  await docker().getImage(mcTag).tag({ repo: NEXT_REPO, tag: RUN });
  // Same server, but its command exits at once: it never becomes ready.
  brokenTag = await ensureImage({ name: 'mc-server-broken', dockerfile: `FROM ${mcTag}\nCMD ["/bin/busybox", "false"]`, files: () => [] });
  stack = await startRealAgentStack({
    agentId: AGENT_ID,
    env: { ENDERCLOUD_COMMAND_MAX_ATTEMPTS: '1' },
    heartbeat: {
      resources: {
        cpuCount: 2,
        memoryTotalBytes: 4096 * 1024 * 1024,
        memoryAvailableBytes: 2048 * 1024 * 1024,
        diskFreeBytes: 10 * 1024 ** 3,
      },
    },
  });
  ({ agent, call } = stack);
  expect(
    (
      await call('PUT', '/templates/mc/versions/1', {
        image: mcTag,
        resources: { memoryMb: 256 },
        containerPort: 25565,
        variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true }],
        readiness: { kind: 'minecraft', startupTimeoutMs: 6000, intervalMs: 150, probeTimeoutMs: 1000 },
        stop: { signal: 'SIGTERM', timeoutMs: 3000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
        dataPaths: ['level.json', 'playerdata'],
      })
    ).status,
  ).toBe(201);
  expect(
    (await call('PUT', '/groups/mc', { kind: 'persistent', variants: [{ id: 'plain', template: { name: 'mc', version: '1' } }] })).status,
  ).toBe(201);
}, 120_000);

afterAll(async () => {
  try {
    await stack?.close();
  } finally {
    await docker()
      .getImage(`${NEXT_REPO}:${RUN}`)
      .remove()
      .catch(() => undefined);
  }
});

describe('image update on Docker', () => {
  it('agent: GET /images/inspect resolves a local image and answers 404 IMAGE_NOT_FOUND for an absent one', async () => {
    const found = await agent.app.inject({
      method: 'GET',
      url: `/api/v1/images/inspect?ref=${encodeURIComponent(mcServerImageTag())}`,
      headers: { authorization: `Bearer ${stack.agentToken}` },
    });
    expect(found.statusCode).toBe(200);
    expect(JSON.parse(found.body)).toMatchObject({
      ref: mcServerImageTag(),
      id: expect.stringMatching(/^sha256:/),
      pulled: false,
      created: expect.stringMatching(/^\d{4}-/),
      sizeBytes: expect.any(Number),
    });
    const absent = await agent.app.inject({
      method: 'GET',
      url: `/api/v1/images/inspect?ref=endercloud-test/absent:${RUN}&pull=false`,
      headers: { authorization: `Bearer ${stack.agentToken}` },
    });
    expect(absent.statusCode).toBe(404);
    expect(JSON.parse(absent.body).error.code).toBe('IMAGE_NOT_FOUND');
  });

  it('updates to a second tag (online on it, world kept), then rolls back from an image that exits at start', async () => {
    const created = await call('POST', '/instances', { groupId: 'mc', variantId: 'plain', name: `${RUN}-srv` });
    expect(created.status).toBe(202);
    const id = created.body.id as string;
    const online = await waitFor('online', () => idle('online')(id));
    const levelFile = join(agent.runtimeDirectory, 'instances', id, 'level.json');
    const seed = await waitFor('level.json', async () => {
      try {
        return (JSON.parse(readFileSync(levelFile, 'utf8')) as { seed: string }).seed;
      } catch {
        return undefined;
      }
    });

    const next = `${NEXT_REPO}:${RUN}`;
    const plan = await call('GET', `/instances/${id}/update-plan?image=${encodeURIComponent(next)}`);
    expect(plan.body).toMatchObject({ sameImage: true, compatible: true, candidate: { ref: next } });
    expect((await call('POST', `/instances/${id}/update`, { image: next, confirm: true })).status).toBe(202);
    const updated = await waitFor('online on the new tag', async () => {
      const v = await idle('online')(id);
      return v && (await imageOfContainer(id)) === next ? v : undefined;
    });
    expect(updated.endpoint).toEqual(online.endpoint);
    expect((await pingStatus('127.0.0.1', updated.endpoint.port)).max).toBeGreaterThan(0);
    expect((JSON.parse(readFileSync(levelFile, 'utf8')) as { seed: string }).seed).toBe(seed);

    expect((await call('POST', `/instances/${id}/update`, { image: brokenTag, confirm: true })).status).toBe(202);
    await waitFor('the rollback finished', async () => {
      const h = (await call('GET', `/instances/${id}/history?limit=50`)).body.history as Loose[];
      return h.some((e) => String(e.reason).includes(`rolled back to ${next}`)) ? h : undefined;
    });
    const back = await waitFor('online after the rollback', () => idle('online')(id));
    expect(await imageOfContainer(id)).toBe(next);
    expect((await pingStatus('127.0.0.1', back.endpoint.port)).max).toBeGreaterThan(0);
    const history = (await call('GET', `/instances/${id}/history?limit=50`)).body.history as Loose[];
    expect(history.some((e) => String(e.reason).includes(`update to ${brokenTag} failed: the new container exited`))).toBe(true);
    expect((JSON.parse(readFileSync(levelFile, 'utf8')) as { seed: string }).seed).toBe(seed);
  }, 120_000);
});
