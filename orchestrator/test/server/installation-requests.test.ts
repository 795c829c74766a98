// Installation requests (docs/lifecycle.md "Installation requests") through the HTTP layer: a token
// with only `instances:request` asks, cannot approve nor create directly; an
// administrator previews, approves (normal creation path) or rejects, once.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator, type FakeAgent, type TestOrchestrator } from './support.js';

let t: TestOrchestrator;
let agent: FakeAgent;
let requester: string;

beforeAll(async () => {
  t = await testOrchestrator();
  agent = await startFakeAgent();
  expect((await t.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(agent.url), token: AGENT_TOKEN })).status).toBe(
    200,
  );
  await t.o.ctx.hosts.whenIdle();
  expect(
    (
      await t.call('PUT', '/api/v1/templates/mc/versions/1', {
        body: {
          image: 'mc:1',
          resources: { memoryMb: 256 },
          variables: [{ name: 'MOTD', type: 'string', default: 'hi' }],
          readiness: { kind: 'minecraft', startupTimeoutMs: 60_000 },
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
  const tok = await t.call('POST', '/api/v1/tokens', { body: { name: 'player-alice', scopes: ['instances:request'] } });
  expect(tok.status, JSON.stringify(tok.body)).toBe(201);
  requester = tok.body.secret as string;
});

afterAll(async () => {
  await agent?.close();
  await t?.close();
});

async function ask(name: string): Promise<string> {
  const res = await t.call('POST', '/api/v1/installation-requests', {
    token: requester,
    body: { groupId: 'g', variantId: 'v', name, suggested: { settings: { MOTD: 'mine' }, note: 'for my friends' } },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

describe('installation requests', () => {
  it('a requester asks (201 pending, nothing created) but can neither approve nor create instances directly', async () => {
    const res = await t.call('POST', '/api/v1/installation-requests', {
      token: requester,
      body: { groupId: 'g', variantId: 'v', name: 'alice-world', suggested: { note: 'hi' } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      requestedBy: 'player-alice',
      groupId: 'g',
      variantId: 'v',
      name: 'alice-world',
      status: 'pending',
      suggested: { note: 'hi' },
      instanceId: null,
    });
    expect(await t.o.store.instances.list({})).toEqual([]);
    expect(await t.o.store.commands.list({})).toEqual([]);

    expect((await t.call('POST', `/api/v1/installation-requests/${res.body.id}/approve`, { token: requester, body: {} })).status).toBe(403);
    expect(
      (await t.call('POST', `/api/v1/installation-requests/${res.body.id}/reject`, { token: requester, body: { note: 'x' } })).status,
    ).toBe(403);
    expect((await t.call('GET', `/api/v1/installation-requests/${res.body.id}/preview`, { token: requester })).status).toBe(403);
    const direct = await t.call('POST', '/api/v1/instances', { token: requester, body: { groupId: 'g', variantId: 'v' } });
    expect(direct.status).toBe(403);
    expect(direct.body.error.code).toBe('FORBIDDEN');

    // The requester sees its own request.
    expect((await t.call('GET', `/api/v1/installation-requests/${res.body.id}`, { token: requester })).body.status).toBe('pending');
    const audit = await t.o.store.audit.list({ targetId: res.body.id });
    expect(audit.map((e) => [e.action, e.actor, e.result])).toContainEqual(['installation-request.create', 'player-alice', 'ok']);
  });

  it('an unknown group is 404 and an unknown variant 400; nothing is stored', async () => {
    const before = (await t.o.store.installationRequests.list()).length;
    const res = await t.call('POST', '/api/v1/installation-requests', { token: requester, body: { groupId: 'nope', variantId: 'v' } });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('GROUP_NOT_FOUND');
    const bad = await t.call('POST', '/api/v1/installation-requests', { token: requester, body: { groupId: 'g', variantId: 'x' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('has no variant x');
    expect((await t.o.store.installationRequests.list()).length).toBe(before);
  });

  it('the administrator previews, approves with the reviewed name: the instance is created through the normal path; approving again is 409', async () => {
    const id = await ask('suggested-name');
    const preview = await t.call('GET', `/api/v1/installation-requests/${id}/preview`);
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body).toMatchObject({
      request: { id, status: 'pending' },
      preview: { preview: true, wouldCreate: true, name: 'suggested-name', placement: { hostId: 'host-a' } },
    });
    expect(await t.o.store.instances.list({})).toEqual([]);

    const approved = await t.call('POST', `/api/v1/installation-requests/${id}/approve`, { body: { name: 'reviewed-name' } });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body.instance).toMatchObject({
      id: expect.stringMatching(/^i-/),
      state: 'installing',
      hostId: 'host-a',
      commandId: expect.stringMatching(/^cmd-/),
    });
    expect(approved.body.request).toMatchObject({
      status: 'approved',
      decidedBy: expect.any(String),
      instanceId: approved.body.instance.id,
    });
    const instance = await t.o.store.instances.get(approved.body.instance.id);
    expect(instance).toMatchObject({ name: 'reviewed-name', groupId: 'g', variantId: 'v', hostId: 'host-a' });
    expect((await t.o.store.commands.get(approved.body.instance.commandId))?.kind).toBe('create');
    expect((await t.o.store.hosts.get('host-a'))?.memoryReservedMb).toBe(256);

    const again = await t.call('POST', `/api/v1/installation-requests/${id}/approve`, { body: {} });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
    expect((await t.call('POST', `/api/v1/installation-requests/${id}/reject`, { body: { note: 'late' } })).status).toBe(409);
    expect((await t.o.store.instances.list({})).length).toBe(1);
    const actions = (await t.o.store.audit.list({ targetId: id })).map((e) => e.action);
    expect(actions).toContain('installation-request.approve');
  });

  it('a refused creation (name taken) leaves the request pending; reviewed settings are refused clearly', async () => {
    const id = await ask('another');
    const taken = await t.call('POST', `/api/v1/installation-requests/${id}/approve`, { body: { name: 'reviewed-name' } });
    expect(taken.status).toBe(409);
    expect((await t.o.store.installationRequests.get(id))?.status).toBe('pending');
    const settings = await t.call('POST', `/api/v1/installation-requests/${id}/approve`, { body: { settings: { MOTD: 'x' } } });
    expect(settings.status).toBe(400);
    expect(settings.body.error.message).toContain('settings');
  });

  it('two concurrent approvals of one request create one instance: one 200, the other 409 (one transaction creates and decides)', async () => {
    // No name: a second creation would not be refused by a name already taken.
    const id = (await t.call('POST', '/api/v1/installation-requests', { token: requester, body: { groupId: 'g', variantId: 'v' } })).body
      .id as string;
    const before = (await t.o.store.instances.list({})).length;
    // Both approvals read the request while it is still pending before either goes on (a barrier on the store's read).
    const repo = t.o.store.installationRequests;
    const read = repo.get;
    let arrived: (() => void)[] | undefined = [];
    repo.get = async (rid) => {
      const found = await read.call(repo, rid);
      if (rid === id && arrived) {
        await new Promise<void>((resolve) => {
          arrived!.push(resolve);
          if (arrived!.length === 2) [arrived, (arrived = undefined)][0]!.forEach((go) => go());
        });
      }
      return found;
    };
    const answers = await Promise.all(
      [1, 2].map(() => t.call('POST', `/api/v1/installation-requests/${id}/approve`, { body: {} })),
    ).finally(() => {
      repo.get = read;
    });
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const won = answers.find((a) => a.status === 200)!;
    const after = await t.o.store.instances.list({});
    expect(after.length).toBe(before + 1);
    expect(after.map((i) => i.id)).toContain(won.body.instance.id);
    expect(await t.o.store.installationRequests.get(id)).toMatchObject({ status: 'approved', instanceId: won.body.instance.id });
    expect(
      (await t.o.store.commands.list({})).filter(
        (c) => c.kind === 'create' && c.instanceId !== won.body.instance.id && !after.some((i) => i.id === c.instanceId),
      ),
    ).toEqual([]);
  });

  it('a creation refused inside its transaction (the group cap) leaves the request pending and nothing reserved; approving after the cap is raised works', async () => {
    const group = { kind: 'persistent', caps: { maxInstances: 0 }, variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] };
    expect((await t.call('PUT', '/api/v1/groups/capped', { body: group })).status).toBe(201);
    const res = await t.call('POST', '/api/v1/installation-requests', {
      token: requester,
      body: { groupId: 'capped', variantId: 'v', name: 'capped-world' },
    });
    const id = res.body.id as string;
    const reserved = (await t.o.store.hosts.get('host-a'))?.memoryReservedMb;
    const refused = await t.call('POST', `/api/v1/installation-requests/${id}/approve`, { body: {} });
    expect(refused.status, JSON.stringify(refused.body)).toBeGreaterThanOrEqual(400);
    expect((await t.o.store.installationRequests.get(id))?.status).toBe('pending');
    expect(await t.o.store.instances.getByName('capped-world')).toBeUndefined();
    expect((await t.o.store.hosts.get('host-a'))?.memoryReservedMb).toBe(reserved);
    expect((await t.call('PUT', '/api/v1/groups/capped', { body: { ...group, caps: { maxInstances: 1 } } })).status).toBe(200);
    const approved = await t.call('POST', `/api/v1/installation-requests/${id}/approve`, { body: {} });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body.request).toMatchObject({ status: 'approved', instanceId: approved.body.instance.id });
  });

  it('reject records the note and creates nothing; requesters see only their own requests, administrators all', async () => {
    const id = await ask('rejected-one');
    const count = (await t.o.store.instances.list({})).length;
    const rejected = await t.call('POST', `/api/v1/installation-requests/${id}/reject`, { body: { note: 'no capacity this week' } });
    expect(rejected.status, JSON.stringify(rejected.body)).toBe(200);
    expect(rejected.body.request).toMatchObject({ status: 'rejected', decisionNote: 'no capacity this week', instanceId: null });
    expect((await t.o.store.instances.list({})).length).toBe(count);
    expect((await t.call('POST', `/api/v1/installation-requests/${id}/approve`, { body: {} })).status).toBe(409);
    expect((await t.o.store.audit.list({ targetId: id })).map((e) => e.action)).toContain('installation-request.reject');

    const other = await t.call('POST', '/api/v1/tokens', { body: { name: 'player-bob', scopes: ['instances:request'] } });
    const bob = other.body.secret as string;
    expect((await t.call('GET', '/api/v1/installation-requests', { token: bob })).body.requests).toEqual([]);
    expect((await t.call('GET', `/api/v1/installation-requests/${id}`, { token: bob })).status).toBe(404);
    const mine = (await t.call('GET', '/api/v1/installation-requests', { token: requester })).body.requests as { requestedBy: string }[];
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.every((r) => r.requestedBy === 'player-alice')).toBe(true);
    const all = await t.call('GET', '/api/v1/installation-requests?status=rejected');
    expect(all.body.requests.map((r: { id: string }) => r.id)).toEqual([id]);
  });
});
