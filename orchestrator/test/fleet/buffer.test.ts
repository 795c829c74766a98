// Fleets on the real Docker engine (docs/provisioning.md "How fleets scale"): a buffer of 2 keeps two test
// servers online; an allocation takes one and the buffer refills; the network
// secret generated at the first start reaches a spawned container's env and
// nothing else (API answers, logs, templates); group scopes; the template cap.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker } from '../support/docker.js';
import { groupIn, NETWORK_SECRET_ENV, startFleetStack, testServerTemplate, type FleetStack, type Loose } from '../support/fleet-stack.js';
import { loginBot, mcServerImageTag } from '../support/mc-server.js';

let stack: FleetStack;
const G = 'buf';

beforeAll(async () => {
  stack = await startFleetStack('fl-buf');
  await stack.putGroup(G, { minInstances: 0, maxInstances: 5, buffer: { count: 2 } });
});

afterAll(async () => {
  await stack?.close();
});

describe('buffer and allocation (real containers)', () => {
  it('buffer 2 → two online instances; an allocation takes one and the buffer refills; release returns it', async () => {
    const online = await groupIn(stack, G, 'online', 2, 40_000);
    // The buffer is full: no more spawns over a few provisioner ticks.
    await new Promise((r) => setTimeout(r, 1000));
    expect(await stack.groupInstances(G)).toHaveLength(2);
    for (const i of online) {
      const bot = await loginBot(i.endpoint.host, i.endpoint.port, `Buf${String(i.name).slice(-4)}`.replace(/[^A-Za-z0-9_]/g, '_'));
      await bot.end();
    }

    const alloc = await stack.api('POST', `/groups/${G}/allocations`, { players: ['Alice'] });
    expect(alloc.status).toBe(201);
    expect(alloc.body).toMatchObject({
      groupId: G,
      instanceId: expect.any(String),
      sessionId: alloc.body.allocationId,
      endpoint: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
    });
    expect(online.map((i) => i.id)).toContain(alloc.body.instanceId);
    const [host, port] = (alloc.body.endpoint as string).split(':');
    const alice = await loginBot(host!, Number(port), 'Alice');
    await alice.end();

    // Refilled: two Ready unallocated instances beside the allocated one.
    await groupIn(stack, G, 'online', 3, 40_000);
    const fleet = (await stack.api('GET', `/groups/${G}/fleet`)).body;
    expect(JSON.stringify(fleet)).toContain(alloc.body.instanceId);
    const allocations = (await stack.api('GET', `/groups/${G}/allocations`)).body.allocations as Loose[];
    expect(allocations.map((a) => a.instanceId)).toEqual([alloc.body.instanceId]);
    const scale = ((await stack.api('GET', '/audit?limit=500')).body.entries as Loose[]).filter(
      (e) => e.action === 'fleet.scale' && e.targetId === G,
    );
    expect(scale.length).toBeGreaterThanOrEqual(2);

    const released = await stack.api('DELETE', `/allocations/${alloc.body.allocationId}`);
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ status: 'released' });
    expect((await stack.api('GET', `/groups/${G}/allocations`)).body.allocations).toEqual([]);
  });

  it('scopes: spawn:other gets 403 on a spawn of this group; allocate:* allocates; spawn:<group> spawns', async () => {
    const token = async (scopes: string[]) =>
      (await stack.must('POST', '/tokens', { name: `${stack.run}-${scopes.join('-').replace(/[^a-z0-9-]/gi, '')}`, scopes }))
        .secret as string;
    const other = await token(['spawn:other']);
    const refused = await stack.api('POST', `/groups/${G}/spawn`, {}, other);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect((await stack.api('POST', `/groups/${G}/allocations`, {}, other)).status).toBe(403);
    expect((await stack.groupInstances(G)).length).toBe(3);

    const allocator = await token(['allocate:*']);
    const alloc = await stack.api('POST', `/groups/${G}/allocations`, {}, allocator);
    expect(alloc.status).toBe(201);
    expect((await stack.api('DELETE', `/allocations/${alloc.body.allocationId}`, undefined, allocator)).status).toBe(200);
    expect((await stack.api('POST', `/groups/${G}/spawn`, {}, allocator)).status).toBe(403);

    const spawner = await token([`spawn:${G}`]);
    const spawned = await stack.api('POST', `/groups/${G}/spawn`, { name: `${stack.run}-scoped` }, spawner);
    expect(spawned.status).toBe(202);
    await stack.waitState(spawned.body.id, 'online');
  });

  it('the template cap refuses a spawn above it', async () => {
    const capped = `${stack.run}-capped`;
    await stack.must('PUT', `/templates/${capped}/versions/1`, testServerTemplate(mcServerImageTag(), { caps: { maxInstances: 1 } }));
    await stack.must('PUT', '/groups/capped', {
      kind: 'ephemeral',
      variants: [{ id: 'main', template: { name: capped, version: '1' }, env: {} }],
    });
    const first = await stack.api('POST', '/groups/capped/spawn', { wait: '20s' });
    expect(first.status).toBe(200);
    expect(first.body.state).toBe('online');
    const second = await stack.api('POST', '/groups/capped/spawn', {});
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('CAP_REACHED');
    expect(second.body.error.message).toContain(capped);
    expect(await stack.groupInstances('capped')).toHaveLength(1);
  });

  it('the network secret generated at the first start is in a spawned container env and in no API answer, log line or template', async () => {
    const secret = await stack.orchestrator().store.system.get('network-secret');
    expect(typeof secret).toBe('string');
    expect((secret as string).length).toBeGreaterThanOrEqual(32);
    const instances = await stack.groupInstances(G);
    expect(instances.length).toBeGreaterThan(0);
    for (const i of instances) {
      const c = await stack.containerOf(i.id);
      const env = (await docker().getContainer(c!.Id).inspect()).Config.Env ?? [];
      expect(env).toContain(`${NETWORK_SECRET_ENV}=${secret as string}`);
    }
    const answers: string[] = [];
    const all = (await stack.api('GET', '/instances')).body;
    answers.push(JSON.stringify(all));
    for (const i of all.instances as Loose[]) {
      for (const path of ['', '/history?limit=200', '/revisions', '/logs?tail=500', '/players'])
        answers.push(JSON.stringify((await stack.api('GET', `/instances/${i.id}${path}`)).body));
    }
    for (const path of [
      '/audit?limit=1000',
      '/commands',
      '/templates',
      `/templates/${stack.template}/versions/1`,
      '/groups',
      `/groups/${G}`,
      `/groups/${G}/fleet`,
      `/groups/${G}/allocations`,
    ]) {
      answers.push(JSON.stringify((await stack.api('GET', path)).body));
    }
    const haystacks = {
      'API answers': answers.join('\n'),
      'orchestrator log': stack.logs.join(''),
      'agent log': JSON.stringify(stack.agent.logLines),
    };
    expect(stack.logs.length).toBeGreaterThan(50);
    for (const [where, text] of Object.entries(haystacks))
      expect(text.includes(secret as string), `${where} holds the network secret`).toBe(false);
  });
});
