// Leader fencing on the agent: the highest x-leader-epoch of a mutating call is
// remembered (also across a restart, from the runtime directory) and a mutating
// call with an older one is refused with 409 STALE_LEADER; a mutating call must
// carry the header; a raise is bounded; reads are never refused and never raise it.
// Also through the orchestrator's real driver over HTTP: the engine announces
// itself (POST /leader) before its first call, API-side drivers send the epoch.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { EPOCH_FILE_NAME, MAX_EPOCH_JUMP, MAX_FIRST_EPOCH, fenceDecision, parseEpochHeader } from '../../src/agent/epoch-fence.js';
import { AgentHostDriver } from '../../src/server/drivers/agent-driver.js';
import { memoryAgentApp } from '../support/memory-agent.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'ec-epoch-'));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const createBody = { groupId: 'g', variantId: 'v', image: 'busybox:test', layers: [], resources: { memoryMb: 64 } };
const epoch = (n: number) => ({ 'x-leader-epoch': String(n) });

describe('fenceDecision (pure)', () => {
  it.each([
    // Reads: never refused, never raised, header or not.
    [0, undefined, false, 'pass'],
    [3, 2, false, 'pass'],
    [3, 4, false, 'pass'],
    [3, Number.MAX_SAFE_INTEGER, false, 'pass'],
    // Mutating calls must carry the header.
    [0, undefined, true, 'missing'],
    [5, undefined, true, 'missing'],
    [0, 1, true, 'raise'],
    [3, 4, true, 'raise'],
    [3, 3, true, 'pass'],
    [3, 2, true, 'refuse'],
    // The bound: a fresh agent accepts a first epoch up to MAX_FIRST_EPOCH, then at most +MAX_EPOCH_JUMP.
    [0, MAX_FIRST_EPOCH, true, 'raise'],
    [0, MAX_FIRST_EPOCH + 1, true, 'too-far'],
    [0, Number.MAX_SAFE_INTEGER, true, 'too-far'],
    [7, 7 + MAX_EPOCH_JUMP, true, 'raise'],
    [7, 7 + MAX_EPOCH_JUMP + 1, true, 'too-far'],
  ] as const)('highest %s, call epoch %s, mutating %s → %s', (highest, e, mutating, expected) => {
    expect(fenceDecision(highest, e, mutating)).toBe(expected);
  });

  it('parses the header strictly', () => {
    expect(parseEpochHeader(undefined)).toBeUndefined();
    expect(parseEpochHeader('7')).toBe(7);
    for (const bad of ['0', '-1', '1.5', 'abc', '99999999999999999']) expect(() => parseEpochHeader(bad)).toThrow(/x-leader-epoch/);
  });
});

describe('agent epoch fencing', () => {
  it('refuses a mutating call with an older epoch (409 STALE_LEADER), never a read, and acts on the current and newer ones', async () => {
    const { app, runtime } = await memoryAgentApp(base, path.join(base, 'rt1'));
    try {
      const created = await app.inject({
        method: 'PUT',
        url: '/api/v1/instances/i-1',
        payload: { ...createBody, start: false },
        headers: epoch(2),
      });
      expect(created.statusCode).toBe(200);
      const stale = await app.inject({ method: 'POST', url: '/api/v1/instances/i-1/start', payload: {}, headers: epoch(1) });
      expect(stale.statusCode).toBe(409);
      expect(stale.json().error.code).toBe('STALE_LEADER');
      expect((await app.inject({ method: 'GET', url: '/api/v1/instances/i-1' })).json().state).not.toBe('running');
      const staleCreate = await app.inject({ method: 'PUT', url: '/api/v1/instances/i-2', payload: createBody, headers: epoch(1) });
      expect(staleCreate.json().error.code).toBe('STALE_LEADER');
      expect(runtime.containers.size).toBe(1);
      // Reads are not fenced: a standby or an old leader may still look.
      expect((await app.inject({ method: 'GET', url: '/api/v1/instances', headers: epoch(1) })).statusCode).toBe(200);
      expect((await app.inject({ method: 'POST', url: '/api/v1/instances/i-1/start', payload: {}, headers: epoch(2) })).statusCode).toBe(
        200,
      );
      expect((await app.inject({ method: 'POST', url: '/api/v1/instances/i-1/stop', payload: {}, headers: epoch(3) })).statusCode).toBe(
        200,
      );
      expect(
        (await app.inject({ method: 'POST', url: '/api/v1/instances/i-1/start', payload: {}, headers: epoch(2) })).json().error.code,
      ).toBe('STALE_LEADER');
      expect(
        (await app.inject({ method: 'PUT', url: '/api/v1/instances/i-1', payload: createBody, headers: { 'x-leader-epoch': 'x' } }))
          .statusCode,
      ).toBe(400);
    } finally {
      await app.close();
    }
  });

  it('a restarted agent still refuses the old leader: the highest epoch is persisted in its runtime directory', async () => {
    const dir = path.join(base, 'rt2');
    const first = await memoryAgentApp(base, dir);
    // The new leader's announcement (a mutating call) is what raises it.
    const announced = await first.app.inject({ method: 'POST', url: '/api/v1/leader', payload: {}, headers: epoch(7) });
    expect(announced.statusCode).toBe(200);
    expect(announced.json()).toEqual({ epoch: 7 });
    await first.app.close();
    expect((await readFile(path.join(dir, EPOCH_FILE_NAME), 'utf8')).trim()).toBe('7');
    const second = await memoryAgentApp(base, dir);
    try {
      expect(second.fence.highest).toBe(7);
      const refused = await second.app.inject({ method: 'PUT', url: '/api/v1/instances/i-3', payload: createBody, headers: epoch(6) });
      expect(refused.json().error.code).toBe('STALE_LEADER');
      expect(second.runtime.containers.size).toBe(0);
    } finally {
      await second.app.close();
    }
  });

  it('a mutating call without the header is refused naming it; reads pass without one and never raise or persist the epoch', async () => {
    const dir = path.join(base, 'rt3');
    const { app, runtime, fence } = await memoryAgentApp(base, dir);
    try {
      const bare = await app.inject({ method: 'PUT', url: '/api/v1/instances/i-4', payload: createBody });
      expect(bare.statusCode).toBe(400);
      expect(bare.json().error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('x-leader-epoch') });
      expect((await app.inject({ method: 'POST', url: '/api/v1/leader', payload: {} })).statusCode).toBe(400);
      expect(runtime.containers.size).toBe(0);
      // The probe of the issue: a credential holder's GET with epoch 2^53-1 changes nothing.
      expect((await app.inject({ method: 'GET', url: '/api/v1/instances', headers: epoch(Number.MAX_SAFE_INTEGER) })).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/api/v1/instances' })).statusCode).toBe(200);
      expect(fence.highest).toBe(0);
      await expect(readFile(path.join(dir, EPOCH_FILE_NAME), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
      expect((await app.inject({ method: 'PUT', url: '/api/v1/instances/i-4', payload: createBody, headers: epoch(1) })).statusCode).toBe(
        200,
      );
      // An unknown route is a 404 whatever its headers.
      expect((await app.inject({ method: 'POST', url: '/api/v1/nope', payload: {} })).statusCode).toBe(404);
    } finally {
      await app.close();
    }
  });

  it('a raise past the bound is refused naming it, and the highest epoch stays', async () => {
    const { app, fence } = await memoryAgentApp(base, path.join(base, 'rt4'));
    try {
      const huge = await app.inject({ method: 'POST', url: '/api/v1/leader', payload: {}, headers: epoch(Number.MAX_SAFE_INTEGER) });
      expect(huge.statusCode).toBe(400);
      expect(huge.json().error.message).toMatch(new RegExp(`too far ahead.*at most ${MAX_FIRST_EPOCH}`));
      expect(fence.highest).toBe(0);
      expect((await app.inject({ method: 'POST', url: '/api/v1/leader', payload: {}, headers: epoch(1500) })).statusCode).toBe(200);
      const jump = await app.inject({ method: 'POST', url: '/api/v1/leader', payload: {}, headers: epoch(1500 + MAX_EPOCH_JUMP + 1) });
      expect(jump.json().error.message).toMatch(new RegExp(`at most ${1500 + MAX_EPOCH_JUMP}`));
      expect(fence.highest).toBe(1500);
      expect(
        (await app.inject({ method: 'POST', url: '/api/v1/leader', payload: {}, headers: epoch(1500 + MAX_EPOCH_JUMP) })).statusCode,
      ).toBe(200);
      expect(fence.highest).toBe(1500 + MAX_EPOCH_JUMP);
    } finally {
      await app.close();
    }
  });

  it("through the orchestrator's driver over HTTP: the engine announces its epoch before its first call (a read), so a deposed leader's late call is refused", async () => {
    const { app, runtime, fence } = await memoryAgentApp(base, path.join(base, 'rt5'));
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const host = { id: 'h-1', controlUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
      let held = 1;
      const oldLeader = new AgentHostDriver({ token: undefined, timeoutMs: 5000, epoch: { epoch: () => held }, announce: true });
      expect(await oldLeader.inventory(host)).toEqual([]);
      expect(fence.highest).toBe(1);
      // A new leader (epoch 2): its supervisor's first read is preceded by its announcement.
      const newLeader = new AgentHostDriver({ token: undefined, timeoutMs: 5000, epoch: { epoch: () => 2 }, announce: true });
      await newLeader.inventory(host);
      expect(fence.highest).toBe(2);
      const late = await oldLeader.create(host, 'i-5', { ...createBody, start: false }).then(
        () => undefined,
        (e: unknown) => e as { code: string },
      );
      expect(late?.code).toBe('STALE_LEADER');
      expect(runtime.containers.size).toBe(0);
      // An API-side driver (no announcement) sends the current lease's epoch on its mutating calls.
      const api = new AgentHostDriver({ token: undefined, timeoutMs: 5000, epoch: { epoch: () => 2 } });
      await api.create(host, 'i-5', { ...createBody, start: false });
      expect(runtime.containers.size).toBe(1);
      held = 3;
      // The old leader's engine becoming leader again (epoch 3) announces the new epoch at once.
      await oldLeader.inventory(host);
      expect(fence.highest).toBe(3);
    } finally {
      await app.close();
    }
  });
});
