// Everything can be removed, through the HTTP layer: groups (409 while
// instances exist), template versions and layers (409 while referenced; prune
// removes the unreferenced), hosts (only when empty, or forget=true for an
// OFFLINE one) and the data a scoped delete kept (listed per host, purged).
// Each removal is audited.

import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instance } from '../store/fixtures.js';
import {
  AGENT_TOKEN,
  heartbeatBody,
  layerArchive,
  startFakeAgent,
  testOrchestrator,
  type FakeAgent,
  type Loose,
  type TestOrchestrator,
} from './support.js';

let t: TestOrchestrator;
let agent: FakeAgent;
beforeAll(async () => {
  agent = await startFakeAgent({ agentId: 'rm-host' });
  t = await testOrchestrator();
  expect((await t.call('POST', '/api/v1/agents/rm-host/heartbeat', { body: heartbeatBody(agent.url), token: AGENT_TOKEN })).status).toBe(
    200,
  );
  await t.o.ctx.hosts.whenIdle();
});
afterAll(async () => {
  await t?.close();
  await agent?.close();
});

const gz = { 'content-type': 'application/gzip' };
const audited = async (action: string): Promise<Loose[]> =>
  (await t.call('GET', '/api/v1/audit')).body.entries.filter((e: Loose) => e.action === action);

describe('catalog removal', () => {
  let checksum = '';
  let spare = '';

  it('a layer used by a template version is refused (409 naming it); an unreferenced checksum is deleted with its blob', async () => {
    checksum = (await t.call('PUT', '/api/v1/template-layers/cfg', { payload: await layerArchive({ 'a.txt': 'A' }), headers: gz })).body
      .checksum;
    spare = (await t.call('PUT', '/api/v1/template-layers/cfg', { payload: await layerArchive({ 'a.txt': 'B' }), headers: gz })).body
      .checksum;
    expect(
      (
        await t.call('PUT', '/api/v1/templates/rm/versions/1', {
          body: { image: 'busybox:1', resources: { memoryMb: 64 }, layers: [{ id: 'cfg', checksum }] },
        })
      ).status,
    ).toBe(201);
    const refused = await t.call('DELETE', '/api/v1/template-layers/cfg');
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain('template rm@1');
    const one = await t.call('DELETE', `/api/v1/template-layers/cfg?checksum=${spare}`);
    expect(one.status).toBe(200);
    expect(one.body.deleted.map((l: Loose) => l.checksum)).toEqual([spare]);
    expect(await readdir(path.join(t.dataDir, 'layers', 'cfg'))).toEqual([`${checksum}.tar.gz`]);
    expect((await t.call('DELETE', `/api/v1/template-layers/cfg?checksum=${spare}`)).status).toBe(404);
    expect(await audited('layer.delete')).toHaveLength(3);
  });

  it('a template version used by a variant is refused; a group with instances is refused; both go once unused', async () => {
    expect(
      (
        await t.call('PUT', '/api/v1/groups/rmg', {
          body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'rm', version: '1' } }] },
        })
      ).status,
    ).toBe(201);
    const usedTemplate = await t.call('DELETE', '/api/v1/templates/rm/versions/1');
    expect(usedTemplate.status).toBe(409);
    expect(usedTemplate.body.error.message).toContain('group rmg variant v');
    await t.o.store.instances.create(instance('i-rm', { name: 'rm-one', groupId: 'rmg', variantId: 'v', hostId: null }));
    const usedGroup = await t.call('DELETE', '/api/v1/groups/rmg');
    expect(usedGroup.status).toBe(409);
    expect(usedGroup.body.error.message).toMatch(/still has instances/);
    await t.o.store.instances.delete('i-rm');
    expect((await t.call('DELETE', '/api/v1/groups/rmg')).body).toEqual({ id: 'rmg', deleted: true });
    expect((await t.call('GET', '/api/v1/groups/rmg')).status).toBe(404);
    expect((await t.call('DELETE', '/api/v1/templates/rm/versions/1')).body).toEqual({ name: 'rm', version: '1', deleted: true });
    expect((await t.call('DELETE', '/api/v1/templates/rm/versions/1')).status).toBe(404);
    expect(await audited('group.delete')).toHaveLength(2);
    expect(await audited('template.delete')).toHaveLength(3); // refused, deleted, not found
  });

  it('prune removes every layer checksum nothing references, blobs included', async () => {
    const pruned = await t.call('POST', '/api/v1/template-layers/prune');
    expect(pruned.status).toBe(200);
    expect(pruned.body.deleted.map((l: Loose) => `${l.id}@${l.checksum}`)).toEqual([`cfg@${checksum}`]);
    expect(await readdir(path.join(t.dataDir, 'layers', 'cfg'))).toEqual([]);
    expect((await t.call('GET', '/api/v1/template-layers')).body.layers).toEqual([]);
    expect((await t.call('POST', '/api/v1/template-layers/prune', { token: null })).status).toBe(401);
  });
});

describe('kept data', () => {
  it("lists the world and backups of a deleted instance per host, never a live instance's, and purges them", async () => {
    const instances = path.join(agent.runtimeDirectory, 'instances');
    await mkdir(path.join(instances, 'i-gone'), { recursive: true });
    await writeFile(path.join(instances, 'i-gone', 'level.dat'), 'world');
    await mkdir(path.join(instances, 'i-live'), { recursive: true });
    const backups = path.join(agent.runtimeDirectory, 'backups', 'i-gone');
    await mkdir(backups, { recursive: true });
    await writeFile(path.join(backups, 'b1.tar.gz'), 'x');
    await writeFile(
      path.join(backups, 'b1.json'),
      JSON.stringify({ backupId: 'b1', sizeBytes: 1, sha256: 'f'.repeat(64), createdAt: '2026-01-01T00:00:00.000Z' }),
    );
    await t.o.store.instances.create(instance('i-live', { name: 'live-one', hostId: 'rm-host' }));
    const listed = await t.call('GET', '/api/v1/kept-data');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      keptData: [{ hostId: 'rm-host', instanceId: 'i-gone', data: true, backups: [expect.objectContaining({ backupId: 'b1' })] }],
      unreachable: [],
    });
    expect((await t.call('DELETE', '/api/v1/kept-data/rm-host/i-live')).status).toBe(409);
    const purged = await t.call('DELETE', '/api/v1/kept-data/rm-host/i-gone');
    expect(purged.body).toEqual({ hostId: 'rm-host', instanceId: 'i-gone', dataRemoved: true, backupsRemoved: 1 });
    expect((await readdir(instances)).filter((n) => !n.startsWith('.'))).toEqual(['i-live']);
    expect((await t.call('GET', '/api/v1/kept-data')).body.keptData).toEqual([]);
    expect(await audited('kept-data.delete')).toHaveLength(2);
  });
});

describe('attaching a kept world', () => {
  const work = async () => {
    for (let i = 0; i < 10; i++) {
      const claimed = await t.o.worker.tick();
      await t.o.worker.whenIdle();
      if (claimed.length === 0) return;
    }
  };
  const createStopped = async (name: string, user?: object): Promise<string> => {
    const res = await t.call('POST', '/api/v1/instances', {
      body: { groupId: 'keep', variantId: 'v', name, start: false, ...(user ? { user } : {}) },
    });
    expect(res.status).toBe(202);
    await work();
    expect((await t.o.store.instances.get(res.body.id))?.state).toBe('stopped');
    return res.body.id as string;
  };

  it('gives a new stopped instance on the same host the kept world (never changing ownership), with a history entry', async () => {
    expect(
      (await t.call('PUT', '/api/v1/templates/keep/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 64 } } })).status,
    ).toBe(201);
    expect(
      (
        await t.call('PUT', '/api/v1/groups/keep', {
          body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'keep', version: '1' } }] },
        })
      ).status,
    ).toBe(201);
    const instances = path.join(agent.runtimeDirectory, 'instances');
    await mkdir(path.join(instances, 'i-world'), { recursive: true });
    await writeFile(path.join(instances, 'i-world', 'level.dat'), 'the old world');
    // The default user (1000:1000) does not own the kept world: refused, naming the user to create it with.
    const other = await createStopped('keep-other');
    const refused = await t.call('POST', '/api/v1/kept-data/rm-host/i-world/attach', { body: { instance: 'keep-other' } });
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(new RegExp(`create it with user \\{"mode": "custom", "uid": ${process.getuid!()}`));
    const id = await createStopped('keep-new', { mode: 'custom', uid: process.getuid!(), gid: process.getgid!() });
    const attached = await t.call('POST', '/api/v1/kept-data/rm-host/i-world/attach', { body: { instance: 'keep-new' } });
    expect(attached.body).toEqual({ hostId: 'rm-host', instanceId: id, from: 'i-world', replacedFresh: true });
    expect(await readFile(path.join(instances, id, 'level.dat'), 'utf8')).toBe('the old world');
    expect((await readdir(instances)).filter((n) => !n.startsWith('.')).sort()).toEqual([id, other, 'i-live'].sort());
    expect((await t.call('GET', `/api/v1/instances/${id}/history`)).body.history[0]).toMatchObject({
      from: 'stopped',
      to: 'stopped',
      details: { event: 'kept_data_attached', from: 'i-world' },
    });
    expect((await t.call('POST', '/api/v1/kept-data/rm-host/i-world/attach', { body: { instance: 'keep-new' } })).status).toBe(404);
    expect(await audited('kept-data.attach')).toHaveLength(3);
    for (const gone of [id, other]) await t.o.store.instances.delete(gone);
  });
});

describe('host removal', () => {
  it('a host with instances is refused; an ONLINE host cannot be forgotten; OFFLINE + forget hands its instances to an operator', async () => {
    const refused = await t.call('DELETE', '/api/v1/hosts/rm-host');
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/still holds 1 instance/);
    expect((await t.call('DELETE', '/api/v1/hosts/rm-host?forget=true')).body.error.message).toMatch(/forget is only for an OFFLINE/);
    await t.o.store.hosts.setStatus('rm-host', 'OFFLINE', { now: t.clock.now() });
    expect((await t.call('DELETE', '/api/v1/hosts/rm-host')).body.error.message).toMatch(/forget=true removes it anyway/);
    const forgotten = await t.call('DELETE', '/api/v1/hosts/rm-host?forget=true');
    expect(forgotten.status).toBe(200);
    expect(forgotten.body).toEqual({ hostId: 'rm-host', status: 'OFFLINE', forgottenInstances: ['i-live'], deleted: true });
    expect((await t.call('GET', '/api/v1/hosts/rm-host')).status).toBe(404);
    const live = await t.o.store.instances.get('i-live');
    expect(live).toMatchObject({ state: 'intervention_required', stateReason: expect.stringContaining('forgotten') });
    expect((await audited('host.delete')).map((e) => e.params)).toEqual(expect.arrayContaining([{ forget: true }, { forget: false }]));
  });

  it('an empty host is removed without forget', async () => {
    expect((await t.call('POST', '/api/v1/agents/rm-empty/heartbeat', { body: heartbeatBody(agent.url), token: AGENT_TOKEN })).status).toBe(
      200,
    );
    await t.o.ctx.hosts.whenIdle();
    expect((await t.call('DELETE', '/api/v1/hosts/rm-empty')).body).toMatchObject({
      hostId: 'rm-empty',
      forgottenInstances: [],
      deleted: true,
    });
    expect((await t.call('DELETE', '/api/v1/hosts/rm-empty')).status).toBe(404);
  });
});
