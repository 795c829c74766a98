// An archived world comes back on another host (issue 9: "a start re-creates it
// on a host that fits"), on the real Docker engine with two agents on the one
// daemon: worlds archived on host A (their final backups copied to the
// orchestrator's backup store), host A goes OFFLINE and its agent away, and a
// start re-creates the world on host B from the final backup — the marker file
// written on A is there. A world whose final backup is not in the store is
// refused with a reason naming it, and no empty world is started in its place.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Heartbeater } from '../../src/agent/heartbeat.js';
import { realTimers } from '../../src/shared/timers.js';
import { createTestAgent, randomPortRange, removeNetwork, type TestAgent } from '../support/agent-harness.js';
import { docker, removeContainersByLabel } from '../support/docker.js';
import { startFleetStack, until, type FleetStack, type Loose } from '../support/fleet-stack.js';
import { freePort } from '../support/registry.js';

let stack: FleetStack;
/** Host A: the second agent, where the worlds are archived; it goes away. */
let hostA: string;
let agentA: TestAgent | undefined;
let beatsA: Heartbeater | undefined;
const networkA = (): string => `${stack.run}-neta`;

async function startSecondAgent(hostId: string): Promise<void> {
  const portRange = randomPortRange(10);
  const port = await freePort();
  agentA = await createTestAgent({ agentId: hostId, orchestratorUrl: stack.url, portRange, network: networkA(), token: stack.agentToken });
  await agentA.app.listen({ host: '127.0.0.1', port });
  beatsA = new Heartbeater({
    orchestratorUrl: stack.url,
    agentId: hostId,
    token: stack.agentToken,
    intervalMs: 500,
    fetch: globalThis.fetch,
    timers: realTimers,
    now: () => Date.now(),
    logger: pino({ level: 'silent' }),
    body: async () => ({
      controlUrl: `http://127.0.0.1:${port}`,
      gameAddress: '127.0.0.1',
      version: 'test',
      heartbeatIntervalMs: 500,
      resources: { cpuCount: 2, memoryTotalBytes: 8 * 1024 ** 3, memoryAvailableBytes: 8 * 1024 ** 3, diskFreeBytes: null },
      portRange,
    }),
  });
  beatsA.start();
  await hostIs(hostId, 'ONLINE', 30_000);
}

async function stopSecondAgent(): Promise<void> {
  await beatsA?.stop().catch(() => undefined);
  beatsA = undefined;
  await agentA?.app.close().catch(() => undefined);
}

const hostIs = (id: string, status: string, timeoutMs = 20_000) =>
  until(`host ${id} ${status}`, async () => (await stack.api('GET', `/hosts/${id}`)).body?.status === status, timeoutMs, 100);
const containersOn = async (id: string, hostId: string): Promise<Loose[]> =>
  (await docker().listContainers({
    all: true,
    filters: { label: [`orchestrator.instance=${id}`, `orchestrator.host=${hostId}`] },
  })) as Loose[];

/** Spawned on host A (host B is in maintenance meanwhile), a marker written into its world, then archived by a despawn. */
async function archivedOnA(name: string, marker: string): Promise<Loose> {
  const id = (await stack.must('POST', '/groups/vault/spawn', { name: `${stack.run}-${name}`, wait: '25s' })).id as string;
  expect((await stack.get(id)).hostId).toBe(hostA);
  writeFileSync(join(agentA!.runtimeDirectory, 'instances', id, 'marker.txt'), marker);
  expect((await stack.api('POST', `/instances/${id}/despawn`, { timeout: '10s' })).status).toBe(202);
  return stack.waitState(id, 'archived', 30_000);
}

beforeAll(async () => {
  stack = await startFleetStack('fl-unar');
  hostA = `${stack.run}-a`.toLowerCase();
  await stack.putGroup('vault', { savegame: { mode: 'archive' } });
  await startSecondAgent(hostA);
});

afterAll(async () => {
  await stopSecondAgent();
  await removeContainersByLabel({ 'orchestrator.host': hostA }).catch(() => undefined);
  await removeNetwork(networkA());
  await agentA?.close().catch(() => undefined);
  await stack?.close();
});

describe('unarchive on another host (two agents, real containers)', () => {
  it('host A gone: a start re-creates the world on host B from its final backup (the marker is back); without a stored backup it is refused', async () => {
    expect((await stack.api('POST', `/hosts/${stack.hostId}/maintenance`, { enabled: true, message: 'test: place on A' })).status).toBe(
      200,
    );
    const kept = await archivedOnA('kept', 'the world written on host A');
    const lost = await archivedOnA('lost', 'a world whose backup copy is gone');
    expect((await stack.api('POST', `/hosts/${stack.hostId}/maintenance`, { enabled: false })).status).toBe(200);
    await hostIs(stack.hostId, 'ONLINE');
    const finalBackup = async (id: string): Promise<Loose | undefined> =>
      ((await stack.must('GET', `/instances/${id}/backups`)).backups as Loose[]).find((b) => b.trigger === 'archive');
    expect(await finalBackup(kept.id as string)).toMatchObject({ stored: true, onHost: true });
    const lostBackup = (await finalBackup(lost.id as string))?.backupId as string;
    expect(lostBackup).toBeDefined();

    // Host A goes away: heartbeats stop, its agent no longer answers.
    await stopSecondAgent();
    await hostIs(hostA, 'OFFLINE', 20_000);

    // The lost world's final backup is no longer in the store: refused, naming it and why.
    const lostId = lost.id as string;
    expect(await stack.orchestrator().ctx.backupStore.delete(lostId, lostBackup)).toBe(true);
    const refused = await stack.api('POST', `/instances/${lostId}/start`);
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('HOST_UNAVAILABLE');
    expect(refused.body.error.message).toContain(`archived instance ${String(lost.name)} is kept on host ${hostA}, which is OFFLINE`);
    expect(refused.body.error.message).toMatch(/not in the orchestrator's backup store|has no final backup/);
    expect((await stack.get(lostId)).state).toBe('archived');
    expect(await containersOn(lostId, stack.hostId)).toEqual([]);

    // The kept world comes back on host B, with the marker from host A.
    const keptId = kept.id as string;
    expect((await stack.api('POST', `/instances/${keptId}/start`)).status).toBe(202);
    const online = await stack.waitState(keptId, 'online', 40_000);
    expect(online.hostId).toBe(stack.hostId);
    expect(readFileSync(join(stack.runtimeDir(keptId), 'marker.txt'), 'utf8')).toBe('the world written on host A');
    expect(existsSync(join(stack.runtimeDir(keptId), 'level.json'))).toBe(true);
    expect((await containersOn(keptId, stack.hostId)).length).toBe(1);
    const reasons = (await stack.history(keptId)).map((h) => String(h.reason));
    expect(reasons.some((r) => r.includes(`is kept on host ${hostA}, which is OFFLINE: restoring its final backup`))).toBe(true);
    expect(reasons.some((r) => r.includes('world restored from final backup'))).toBe(true);
  }, 180_000);
});
