// One credential per host (issue 26): one-time join tokens, enrolment over
// POST /agents/enrol, heartbeats bound to the host's own credential and its
// enrolled controlUrl, re-enrolment rotating both credentials, revocation, and
// the driver sending each host's call credential to its enrolled URL only.
// Real parts: the orchestrator's app, the real agent app (over the in-memory
// runtime) listening on 127.0.0.1, and a plain HTTP listener standing for an
// attacker's address.

import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_TOKEN,
  heartbeatBody,
  startFakeAgent,
  testOrchestrator,
  type FakeAgent,
  type Loose,
  type TestOrchestrator,
} from './support.js';
import { freePort } from '../support/registry.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => undefined);
});

async function orchestrator(): Promise<TestOrchestrator> {
  const t = await testOrchestrator();
  cleanups.push(() => t.close());
  return t;
}

async function agent(agentId: string, token?: string, port?: number): Promise<FakeAgent> {
  const a = await startFakeAgent({ agentId, ...(token !== undefined ? { token } : {}), ...(port !== undefined ? { port } : {}) });
  cleanups.push(() => a.close());
  return a;
}

/** A listener at "any other URL": records every request it receives. */
async function trap(): Promise<{ url: string; seen: Array<{ url: string; headers: IncomingHttpHeaders }> }> {
  const seen: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
  const server: Server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"instances":[]}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function joinToken(t: TestOrchestrator, body: Record<string, unknown> = {}): Promise<Loose> {
  const res = await t.call('POST', '/api/v1/hosts/join-tokens', { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

function enrol(t: TestOrchestrator, secret: string | null, agentId: string, controlUrl: string) {
  return t.call('POST', '/api/v1/agents/enrol', { token: secret, body: { agentId, ...heartbeatBody(controlUrl) } });
}

function beat(t: TestOrchestrator, token: string | null, agentId: string, controlUrl: string) {
  return t.call('POST', `/api/v1/agents/${agentId}/heartbeat`, { token, body: heartbeatBody(controlUrl) });
}

/**
 * Enrols `agentId` at a fresh 127.0.0.1 port (a fresh join token), then starts the real agent app there with the
 * call credential it was given: the agent as an enrolled agent runs it.
 */
async function enrolled(t: TestOrchestrator, agentId: string) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const jt = await joinToken(t, { agentId });
  const res = await enrol(t, jt.secret, agentId, url);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const answer = res.body as { hostCredential: string; callCredential: string; credentialGeneration: number; controlUrl: string };
  expect(answer.controlUrl).toBe(url);
  const a = await agent(agentId, answer.callCredential, port);
  return { jt, agent: a, url, ...answer };
}

describe('join tokens', () => {
  it('are shown once, stored without their secret, enrol once, expire, can be bound to one agent id and revoked', async () => {
    const t = await orchestrator();
    const a = await agent('jt-a');
    const jt = await joinToken(t, { agentId: 'jt-a', ttl: '1h' });
    expect(jt.secret).toMatch(/^ecj_/);
    expect(jt).toMatchObject({ agentId: 'jt-a', state: 'active' });
    expect(Date.parse(jt.expiresAt) - t.clock.now()).toBe(3_600_000);
    const listed = await t.call('GET', '/api/v1/hosts/join-tokens');
    expect(listed.body.joinTokens).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(jt.secret);

    // Bound to jt-a: another agent id is 403, and the token stays usable.
    const other = await enrol(t, jt.secret, 'jt-b', a.url);
    expect(other.status).toBe(403);
    expect(other.body.error.message).toMatch(/enrols agent jt-a only, not jt-b/);
    expect((await enrol(t, jt.secret, 'jt-a', a.url)).status).toBe(200);
    const again = await enrol(t, jt.secret, 'jt-a', a.url);
    expect(again.status).toBe(401);
    expect(again.body.error.message).toMatch(/already used \(by agent jt-a/);
    expect((await t.call('GET', '/api/v1/hosts/join-tokens')).body.joinTokens[0]).toMatchObject({ state: 'used', usedBy: 'jt-a' });

    const short = await joinToken(t, { ttl: 60 });
    t.clock.advance(61_000);
    const expired = await enrol(t, short.secret, 'jt-c', a.url);
    expect(expired.status).toBe(401);
    expect(expired.body.error.message).toMatch(/expired at/);

    const revoked = await joinToken(t);
    expect((await t.call('DELETE', `/api/v1/hosts/join-tokens/${revoked.id}`)).body).toMatchObject({ state: 'revoked' });
    const refused = await enrol(t, revoked.secret, 'jt-d', a.url);
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toMatch(/was revoked/);

    expect((await enrol(t, 'ecj_unknown-token-0123456789', 'jt-e', a.url)).status).toBe(401);
    expect((await enrol(t, null, 'jt-e', a.url)).status).toBe(401);
    expect((await enrol(t, AGENT_TOKEN, 'jt-e', a.url)).status).toBe(401);
    expect((await t.call('POST', '/api/v1/hosts/join-tokens', { body: { ttl: '8d' } })).status).toBe(400);
    expect((await t.call('POST', '/api/v1/hosts/join-tokens', { body: { ttl: 'soon' } })).status).toBe(400);
    // Only the refused enrolments that reached no host left nothing behind.
    expect((await t.call('GET', '/api/v1/hosts/jt-b')).status).toBe(404);

    const audit = (await t.call('GET', '/api/v1/audit?targetKind=host&limit=100')).body.entries as Loose[];
    const enrolments = audit.filter((e) => e.action === 'host.enrol');
    expect(enrolments.filter((e) => e.result === 'ok')).toHaveLength(1);
    expect(enrolments.filter((e) => e.result === 'error').length).toBeGreaterThanOrEqual(5);
    expect(enrolments.find((e) => e.result === 'ok')).toMatchObject({ targetId: 'jt-a', params: { kind: 'enrol', generation: 1 } });
  });
});

describe('enrolled hosts', () => {
  it('beat with their own credential only: never as another agent id, never with the shared token, never moving the controlUrl', async () => {
    const t = await orchestrator();
    const h = await enrolled(t, 'eh-a');
    const other = await enrolled(t, 'eh-b');
    expect(h.hostCredential).toMatch(/^ech_/);
    expect(h.callCredential).not.toBe(other.callCredential);
    expect((await t.call('GET', '/api/v1/hosts/eh-a')).body).toMatchObject({
      status: 'RECOVERING',
      credential: { mode: 'enrolled', generation: 1 },
    });

    // The first beat runs the recovery: the driver reads the inventory from the enrolled URL with the call credential.
    const first = await beat(t, h.hostCredential, 'eh-a', h.url);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    await t.o.ctx.hosts.whenIdle();
    expect((await t.call('GET', '/api/v1/hosts/eh-a')).body.status).toBe('ONLINE');
    expect(h.agent.calls.map((c) => `${c.method} ${c.path}`)).toContain('GET /instances');
    expect(h.agent.calls.every((c) => c.headers.authorization === `Bearer ${h.callCredential}`)).toBe(true);

    // Every agent route takes it too (a layer download of an unknown layer: past the auth hook, a 400/404, not 401).
    const layer = await t.call('GET', '/api/v1/template-layers/nope/archive?checksum=sha256:' + '0'.repeat(64), {
      token: h.hostCredential,
    });
    expect([400, 404]).toContain(layer.status);
    expect(
      (await t.call('GET', '/api/v1/template-layers/nope/archive?checksum=sha256:' + '0'.repeat(64), { token: 'ech_wrong' })).status,
    ).toBe(401);

    const asOther = await beat(t, h.hostCredential, 'eh-b', other.url);
    expect(asOther.status).toBe(403);
    expect(asOther.body.error.message).toMatch(/host credential of eh-a cannot heartbeat as agent eh-b/);
    const shared = await beat(t, AGENT_TOKEN, 'eh-a', h.url);
    expect(shared.status).toBe(403);
    expect(shared.body.error.message).toMatch(/enrolled: its heartbeats need its own host credential/);
    expect((await beat(t, null, 'eh-a', h.url)).status).toBe(401);

    const evil = await trap();
    const moved = await beat(t, h.hostCredential, 'eh-a', evil.url);
    expect(moved.status).toBe(409);
    expect(moved.body.error.code).toBe('CONFLICT');
    expect(moved.body.error.message).toContain(h.url);
    expect(moved.body.error.message).toContain(evil.url);
    expect(moved.body.error.message).toMatch(/re-enrol to move a host/);
    expect((await t.call('GET', '/api/v1/hosts/eh-a')).body.controlUrl).toBe(h.url);
    const audit = (await t.call('GET', '/api/v1/audit?targetKind=host&targetId=eh-a')).body.entries as Loose[];
    expect(audit.find((e) => e.action === 'host.heartbeat.move-refused')).toMatchObject({
      actor: 'host eh-a',
      result: 'error',
      errorCode: 'CONFLICT',
      params: { enrolledControlUrl: h.url, reportedControlUrl: evil.url },
    });

    // The driver keeps calling the enrolled URL, with this host's credential; the other URL receives nothing.
    const calls = h.agent.calls.length;
    await t.o.ctx.driver.inventory((await t.o.store.hosts.get('eh-a'))!);
    await t.o.ctx.driver.keptData!.list((await t.o.store.hosts.get('eh-a'))!);
    expect(h.agent.calls.length).toBe(calls + 2);
    expect(h.agent.calls.every((c) => c.headers.authorization === `Bearer ${h.callCredential}`)).toBe(true);
    expect(evil.seen).toEqual([]);
  });

  it('legacy shared-token hosts: the first beat registers, a later one cannot move the controlUrl (refused and audited)', async () => {
    const t = await orchestrator();
    const a = await agent('lg-a', AGENT_TOKEN);
    const evil = await trap();
    expect((await beat(t, AGENT_TOKEN, 'lg-a', a.url)).status).toBe(200);
    await t.o.ctx.hosts.whenIdle();
    const moved = await beat(t, AGENT_TOKEN, 'lg-a', evil.url);
    expect(moved.status).toBe(409);
    expect(moved.body.error.message).toMatch(/re-enrol to move a host/);
    const host = (await t.call('GET', '/api/v1/hosts/lg-a')).body;
    expect(host).toMatchObject({ controlUrl: a.url, credential: { mode: 'shared', generation: null } });
    const audit = (await t.call('GET', '/api/v1/audit?targetKind=host&targetId=lg-a')).body.entries as Loose[];
    expect(audit.find((e) => e.action === 'host.heartbeat.move-refused')).toMatchObject({
      actor: 'agent',
      params: { reportedControlUrl: evil.url },
    });
    await t.o.ctx.driver.inventory((await t.o.store.hosts.get('lg-a'))!);
    expect(evil.seen).toEqual([]);
    // A legacy host still gets the shared token (its only credential).
    expect(a.calls.every((c) => c.headers.authorization === `Bearer ${AGENT_TOKEN}`)).toBe(true);
  });

  it('re-enrolment rotates both credentials at once and is the one way to move a host', async () => {
    const t = await orchestrator();
    const h = await enrolled(t, 're-a');
    expect((await beat(t, h.hostCredential, 're-a', h.url)).status).toBe(200);
    await t.o.ctx.hosts.whenIdle();
    const before = h.agent.calls.length;

    // The host moves: a new join token for it, an enrolment from the new URL.
    const port = await freePort();
    const newUrl = `http://127.0.0.1:${port}`;
    const jt = await joinToken(t, { agentId: 're-a' });
    const res = await enrol(t, jt.secret, 're-a', newUrl);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const rotated = res.body as { hostCredential: string; callCredential: string; credentialGeneration: number };
    expect(rotated.credentialGeneration).toBe(2);
    expect(rotated.hostCredential).not.toBe(h.hostCredential);
    expect(rotated.callCredential).not.toBe(h.callCredential);
    const moved = await agent('re-a', rotated.callCredential, port);

    const old = await beat(t, h.hostCredential, 're-a', h.url);
    expect(old.status).toBe(401);
    expect(old.body.error.message).toMatch(/unknown or revoked host credential/);
    expect((await beat(t, rotated.hostCredential, 're-a', newUrl)).status).toBe(200);
    await t.o.ctx.hosts.whenIdle();
    const host = (await t.call('GET', '/api/v1/hosts/re-a')).body;
    expect(host).toMatchObject({ controlUrl: newUrl, status: 'ONLINE', credential: { mode: 'enrolled', generation: 2 } });
    // Calls go to the new URL with the new credential; the old agent hears nothing more.
    expect(moved.calls.map((c) => `${c.method} ${c.path}`)).toContain('GET /instances');
    expect(moved.calls.every((c) => c.headers.authorization === `Bearer ${rotated.callCredential}`)).toBe(true);
    expect(h.agent.calls.length).toBe(before);

    const audit = (await t.call('GET', '/api/v1/audit?targetKind=host&targetId=re-a')).body.entries as Loose[];
    expect(audit.find((e) => e.action === 'host.enrol' && e.params?.kind === 're-enrol')).toMatchObject({
      result: 'ok',
      actor: `join token ${jt.id}`,
      params: { previousControlUrl: h.url, controlUrl: newUrl, generation: 2 },
    });
  });

  it('revoke-credential: the host credential stops at once; the host comes back by re-enrolment only', async () => {
    const t = await orchestrator();
    const h = await enrolled(t, 'rv-a');
    expect((await beat(t, h.hostCredential, 'rv-a', h.url)).status).toBe(200);
    const revoked = await t.call('POST', '/api/v1/hosts/rv-a/revoke-credential');
    expect(revoked.status).toBe(200);
    expect(revoked.body.credential).toMatchObject({ mode: 'revoked', generation: 1 });
    expect((await beat(t, h.hostCredential, 'rv-a', h.url)).status).toBe(401);
    expect((await beat(t, AGENT_TOKEN, 'rv-a', h.url)).status).toBe(403);
    // Goes offline by the normal detector.
    t.clock.advance(60_000);
    await t.o.detector.sweep();
    expect((await t.call('GET', '/api/v1/hosts/rv-a')).body.status).toBe('OFFLINE');

    const legacy = await agent('rv-b', AGENT_TOKEN);
    expect((await beat(t, AGENT_TOKEN, 'rv-b', legacy.url)).status).toBe(200);
    expect((await t.call('POST', '/api/v1/hosts/rv-b/revoke-credential')).status).toBe(409);
    expect((await t.call('POST', '/api/v1/hosts/nope/revoke-credential')).status).toBe(404);

    const jt = await joinToken(t, { agentId: 'rv-a' });
    const back = await enrol(t, jt.secret, 'rv-a', h.url);
    expect(back.status).toBe(200);
    expect((await beat(t, back.body.hostCredential, 'rv-a', h.url)).status).toBe(200);
    const audit = (await t.call('GET', '/api/v1/audit?targetKind=host&targetId=rv-a')).body.entries as Loose[];
    expect(audit.some((e) => e.action === 'host.credential.revoke' && e.result === 'ok')).toBe(true);
  });
});

describe('without ENDERCLOUD_AGENT_TOKEN', () => {
  it('an unknown agent may beat without a credential only from this machine (loopback); from elsewhere it must enrol', async () => {
    const t = await testOrchestrator({ env: { ENDERCLOUD_AGENT_TOKEN: '' } });
    cleanups.push(() => t.close());
    const a = await startFakeAgent();
    cleanups.push(() => a.close());
    const beat = (remoteAddress: string, agentId: string) =>
      t.o.app.inject({
        method: 'POST',
        url: `/api/v1/agents/${agentId}/heartbeat`,
        remoteAddress,
        payload: heartbeatBody(a.url),
      });
    const remote = await beat('10.1.2.3', 'remote-host');
    expect(remote.statusCode).toBe(401);
    expect(remote.json().error.message).toMatch(
      /enrol the agent with a join token: AGENT_JOIN_TOKEN.*only an agent on this machine \(loopback\)/,
    );
    expect(await t.o.store.hosts.get('remote-host')).toBeUndefined();
    expect((await beat('127.0.0.1', 'local-host')).statusCode).toBe(200);
    expect((await beat('::ffff:127.0.0.1', 'local-host')).statusCode).toBe(200);
  });
});
