// Leader fencing on the agent: the highest x-leader-epoch is remembered (also
// across a restart, from the runtime directory) and a mutating call with an
// older one is refused with 409 STALE_LEADER; reads are never refused.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EPOCH_FILE_NAME, fenceDecision, parseEpochHeader } from '../../src/agent/epoch-fence.js';
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
    [0, undefined, true, 'pass'],
    [5, undefined, true, 'pass'],
    [0, 1, true, 'raise'],
    [3, 4, false, 'raise'],
    [3, 3, true, 'pass'],
    [3, 2, true, 'refuse'],
    [3, 2, false, 'pass'],
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
    // A read is enough to learn the new leader's epoch (its supervisor's inventory).
    expect((await first.app.inject({ method: 'GET', url: '/api/v1/instances', headers: epoch(7) })).statusCode).toBe(200);
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
});
