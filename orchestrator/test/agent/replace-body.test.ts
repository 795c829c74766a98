// A replace keeps the runtime directory and never re-materializes layers: the
// agent refuses a replace body naming `layers` (once accepted and ignored).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryAgentApp } from '../support/memory-agent.js';

/** The test plays the leader: agents refuse a mutating call without an epoch. */
const LEADER = { 'x-leader-epoch': '1' };
let base: string;
beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'ec-replace-body-'));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('POST /instances/:id/replace body', () => {
  it('refuses layers with 400 naming the field; the same body without them replaces', async () => {
    const { app } = await memoryAgentApp(base, path.join(base, 'rt'));
    try {
      const create = { groupId: 'g', variantId: 'v', image: 'busybox:test', layers: [], resources: { memoryMb: 64 } };
      expect((await app.inject({ method: 'PUT', url: '/api/v1/instances/i-r', payload: create, headers: LEADER })).statusCode).toBe(200);
      const { layers, ...replace } = create;
      const refused = await app.inject({
        method: 'POST',
        url: '/api/v1/instances/i-r/replace',
        payload: { ...replace, layers, start: false },
        headers: LEADER,
      });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringContaining('body/layers') });
      const replaced = await app.inject({
        method: 'POST',
        url: '/api/v1/instances/i-r/replace',
        payload: { ...replace, start: false },
        headers: LEADER,
      });
      expect(replaced.statusCode, replaced.body).toBe(200);
      expect(replaced.json()).toMatchObject({ instanceId: 'i-r' });
    } finally {
      await app.close();
    }
  });
});
