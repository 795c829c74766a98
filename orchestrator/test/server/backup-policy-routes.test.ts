// Backup policies through the HTTP layer: a group's `backup:` field (validated
// where the group body is, shown in the group view) and an instance's own
// policy (PUT/GET /instances/:id/backup-policy) that replaces the group's.

import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup() {
  const t = await testOrchestrator({ deps: { runBackupScheduler: false } });
  cleanups.push(() => t.close());
  const agent = await startFakeAgent();
  cleanups.push(() => agent.close());
  expect((await t.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(agent.url), token: AGENT_TOKEN })).status).toBe(
    200,
  );
  await t.o.ctx.hosts.whenIdle();
  expect(
    (await t.call('PUT', '/api/v1/templates/mc/versions/1', { body: { image: 'mc:1', resources: { memoryMb: 256 } } })).status,
  ).toBeLessThan(300);
  return t;
}

const groupBody = (backup: unknown) => ({ kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }], backup });

describe('backup policies', () => {
  it('a group backup field is validated and shown; an instance policy replaces it until cleared', async () => {
    const t = await setup();
    const bad = await t.call('PUT', '/api/v1/groups/g', { body: groupBody({ schedule: '0 4 * * * *' }) });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('backup.schedule');
    expect((await t.call('PUT', '/api/v1/groups/g', { body: groupBody({ retention: { hourly: 1 } }) })).status).toBe(400);
    const policy = { schedule: '0 4 * * *', retention: { last: 3, daily: 7, weekly: 4 } };
    expect((await t.call('PUT', '/api/v1/groups/g', { body: groupBody(policy) })).status).toBe(201);
    expect((await t.call('GET', '/api/v1/groups/g')).body).toMatchObject({ backup: policy });
    // Re-applying the same body changes nothing.
    expect((await t.call('PUT', '/api/v1/groups/g', { body: groupBody(policy) })).status).toBe(200);

    const created = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', name: 'w' } });
    const id = created.body.id as string;
    const fromGroup = await t.call('GET', `/api/v1/instances/${id}/backup-policy`);
    expect(fromGroup.body).toMatchObject({
      id,
      own: null,
      effective: policy,
      source: 'group',
      nextRunAt: expect.stringMatching(/T04:00:00\.000Z$/),
    });

    const own = await t.call('PUT', `/api/v1/instances/${id}/backup-policy`, { body: { schedule: '*/30 * * * *' } });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ own: { schedule: '*/30 * * * *' }, effective: { schedule: '*/30 * * * *' }, source: 'instance' });
    const refused = await t.call('PUT', `/api/v1/instances/${id}/backup-policy`, { body: { schedule: '99 * * * *' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('body.schedule');
    const cleared = await t.call('PUT', `/api/v1/instances/${id}/backup-policy`, {
      payload: Buffer.from('null'),
      headers: { 'content-type': 'application/json' },
    });
    expect(cleared.status, JSON.stringify(cleared.body)).toBe(200);
    expect(cleared.body).toMatchObject({ own: null, source: 'group' });
    const audit = (await t.call('GET', `/api/v1/audit?targetId=${id}`)).body.entries as { action: string }[];
    expect(audit.filter((e) => e.action === 'instance.backup_policy')).toHaveLength(3);
  });
});
