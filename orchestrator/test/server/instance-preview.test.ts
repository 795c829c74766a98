// POST /instances/preview through the HTTP layer: the canonical deployment
// preview with secrets redacted, the host placement would choose now and the
// caps left — and nothing written (no instance, command or reserved memory).

import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('deployment preview', () => {
  it('shows the resolved configuration, redacted secrets, placement and caps without writing anything', async () => {
    const t = await testOrchestrator({ deps: { generateSecret: () => 'very-secret-value-42' } });
    cleanups.push(() => t.close());
    const a = await startFakeAgent();
    cleanups.push(() => a.close());
    expect((await t.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN })).status).toBe(200);
    await t.o.ctx.hosts.whenIdle();
    expect(
      (
        await t.call('PUT', '/api/v1/templates/mc/versions/1', {
          body: {
            image: 'mc:1',
            resources: { memoryMb: 256 },
            env: { EULA: 'TRUE' },
            variables: [
              { name: 'RCON_PASSWORD', type: 'string', secret: true },
              { name: 'MOTD', type: 'string', default: 'hi' },
            ],
            readiness: { kind: 'minecraft', startupTimeoutMs: 60_000 },
            stop: { signal: 'SIGTERM', timeoutMs: 3000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
            dataPaths: ['world'],
            technicalPaths: ['logs'],
          },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await t.call('PUT', '/api/v1/groups/g', {
          body: {
            kind: 'persistent',
            caps: { maxInstances: 3 },
            variants: [{ id: 'v', template: { name: 'mc', version: '1' }, env: { DIFFICULTY: 'hard' } }],
          },
        })
      ).status,
    ).toBe(201);
    const before = JSON.stringify(await t.o.store.hosts.list());

    const res = await t.call('POST', '/api/v1/instances/preview', {
      body: { groupId: 'g', variantId: 'v', name: 'survival', user: { mode: 'custom', uid: 1500, gid: 1500 } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      preview: true,
      wouldCreate: true,
      problems: [],
      name: 'survival',
      image: 'mc:1',
      template: { name: 'mc', version: '1' },
      env: { EULA: 'TRUE', MOTD: 'hi', DIFFICULTY: 'hard', RCON_PASSWORD: '<redacted>', ENDERCLOUD_INSTANCE_TOKEN: '<redacted>' },
      resources: { memoryMb: 256 },
      ports: { containerPort: expect.any(Number), rcon: { port: 25575, published: false } },
      readiness: { kind: 'minecraft', startupTimeoutMs: 60_000 },
      stop: { signal: 'SIGTERM', timeoutMs: 3000, rcon: { port: 25575, command: 'stop' } },
      dataPaths: ['world'],
      technicalPaths: ['logs'],
      user: { mode: 'custom', uid: 1500, gid: 1500 },
      placement: { hostId: 'host-a', memoryMb: 256 },
      caps: { group: { limit: 3, current: 0, left: 2 + 1 } },
    });
    expect(JSON.stringify(res.body)).not.toContain('very-secret-value-42');
    // Nothing was written.
    expect(await t.o.store.instances.list({})).toEqual([]);
    expect(await t.o.store.commands.list({})).toEqual([]);
    expect(JSON.stringify(await t.o.store.hosts.list())).toBe(before);

    const bad = await t.call('POST', '/api/v1/instances/preview', { body: { groupId: 'g', variantId: 'nope' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('has no variant nope');
  });

  it('answers what POST /instances would: the same plan (settings, secrets, import, lookups), the same refusals', async () => {
    const t = await testOrchestrator({ deps: { generateSecret: () => 'very-secret-value-42' } });
    cleanups.push(() => t.close());
    const a = await startFakeAgent();
    cleanups.push(() => a.close());
    expect((await t.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN })).status).toBe(200);
    await t.o.ctx.hosts.whenIdle();
    expect(
      (
        await t.call('PUT', '/api/v1/templates/mc/versions/1', {
          body: {
            image: 'mc:1',
            resources: { memoryMb: 256 },
            env: {},
            caps: { maxInstances: 5 },
            variables: [
              { name: 'RCON_PASSWORD', type: 'string', secret: true },
              { name: 'MOTD', type: 'string', default: 'hi' },
              { name: 'SLOTS', type: 'integer', default: 10 },
            ],
            readiness: { kind: 'tcp', startupTimeoutMs: 60_000 },
            stop: { signal: 'SIGTERM', timeoutMs: 3000 },
            dataPaths: ['world'],
          },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await t.call('PUT', '/api/v1/groups/g', {
          body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] },
        })
      ).status,
    ).toBe(201);

    // Given values show as create stores them (the old preview ignored them and showed the defaults).
    const shown = await t.call('POST', '/api/v1/instances/preview', {
      body: { groupId: 'g', variantId: 'v', settings: { MOTD: 'welcome' }, secrets: { RCON_PASSWORD: 'pw-given-1' } },
    });
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    expect(shown.body.env).toMatchObject({ MOTD: 'welcome', RCON_PASSWORD: '<redacted>' });
    expect(shown.body.settings).toMatchObject({ MOTD: 'welcome' });
    expect(shown.body.secrets).toContainEqual({ name: 'RCON_PASSWORD', value: '<redacted>', given: true, generatedAtCreation: false });
    expect(shown.body.caps.template).toEqual({ name: 'mc', limit: 5, current: 0, left: 5 });
    expect(JSON.stringify(shown.body)).not.toContain('pw-given-1');

    // Each body a create refuses, the preview refuses with the same status and code, and writes nothing.
    const refused = [
      { groupId: 'nope', variantId: 'v' },
      { groupId: 'g', variantId: 'nope' },
      { groupId: 'g', variantId: 'v', settings: { NOT_A_VARIABLE: 'x' } },
      { groupId: 'g', variantId: 'v', settings: { RCON_PASSWORD: 'x' } },
      { groupId: 'g', variantId: 'v', secrets: { MOTD: 'x' } },
      { groupId: 'g', variantId: 'v', settings: { SLOTS: 'many' } },
      { groupId: 'g', variantId: 'v', import: { uploadId: 'imp-missing' } },
      { groupId: 'g', variantId: 'v', import: { uploadId: 'imp-missing', destination: '../up' } },
    ];
    for (const body of refused) {
      const preview = await t.call('POST', '/api/v1/instances/preview', { body });
      const create = await t.call('POST', '/api/v1/instances', { body });
      expect(create.status, JSON.stringify({ body, create: create.body })).toBeGreaterThanOrEqual(400);
      expect([preview.status, preview.body.error?.code], JSON.stringify(body)).toEqual([create.status, create.body.error.code]);
    }
    expect(await t.o.store.instances.list({})).toEqual([]);
  });
});
