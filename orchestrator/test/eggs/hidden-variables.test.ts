// Hidden template variables (egg `user_viewable: false`): a narrow token reads
// no value of them in any answer that shows settings (instance, list, pending
// changes, revisions, history, ectl settings get); admin, manager and operator
// tokens still see them.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import {
  AGENT_TOKEN,
  heartbeatBody,
  startFakeAgent,
  testOrchestrator,
  type FakeAgent,
  type Loose,
  type TestOrchestrator,
} from '../server/support.js';

const HIDDEN_VALUE = 'hidden-value-7f3a';
let t: TestOrchestrator;
let agent: FakeAgent;
let url: string;
let dir: string;
let id: string;
const tokens: Record<string, string> = {};

async function ectl(args: string[], token: string) {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    env: { configPath: join(dir, 'config.json'), urlOverride: url, tokenOverride: token },
    version: 'test',
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

beforeAll(async () => {
  t = await testOrchestrator();
  url = await t.o.app.listen({ host: '127.0.0.1', port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'ec-hidden-'));
  agent = await startFakeAgent();
  expect(
    (
      await t.call('POST', '/api/v1/agents/host-a/heartbeat', {
        body: heartbeatBody(agent.url, { heartbeatIntervalMs: 600_000 }),
        token: AGENT_TOKEN,
      })
    ).status,
  ).toBe(200);
  await t.o.ctx.hosts.whenIdle();
  expect(
    (
      await t.call('PUT', '/api/v1/templates/egg/versions/1', {
        body: {
          image: 'mc:1',
          resources: { memoryMb: 256 },
          variables: [
            { name: 'MOTD', type: 'string', default: 'hi', apply: 'restart_required' },
            {
              name: 'DL_TOKEN',
              env: 'DOWNLOAD_TOKEN',
              type: 'string',
              default: 'none',
              operatorOnly: true,
              hidden: true,
              apply: 'restart_required',
            },
          ],
        },
      })
    ).status,
  ).toBe(201);
  expect(
    (
      await t.call('PUT', '/api/v1/groups/g', {
        body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'egg', version: '1' } }] },
      })
    ).status,
  ).toBe(201);
  const created = await t.call('POST', '/api/v1/instances', {
    body: { groupId: 'g', variantId: 'v', name: 'srv', settings: { MOTD: 'welcome', DL_TOKEN: HIDDEN_VALUE } },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(202);
  id = created.body.id as string;
  for (const [name, scopes] of [
    ['narrow', ['read', 'instances:write']],
    ['manager', ['manager']],
    ['operator', ['operator']],
  ] as const) {
    const res = await t.call('POST', '/api/v1/tokens', { body: { name, scopes } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    tokens[name] = res.body.secret as string;
  }
  // A pending change of the hidden variable (restart_required), set by an administrator.
  expect(
    (await t.call('PATCH', `/api/v1/instances/${id}/settings`, { body: { settings: { DL_TOKEN: `${HIDDEN_VALUE}-next` } } })).status,
  ).toBeLessThan(300);
});

afterAll(async () => {
  await t?.close();
  await agent?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const read = async (path: string, token: string): Promise<Loose> => {
  const res = await t.call('GET', `/api/v1${path}`, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

describe('hidden variables (user_viewable: false)', () => {
  it('a narrow token sees no value of them: instance, list, pending changes, revisions, history', async () => {
    const narrow = tokens.narrow!;
    const one = await read(`/instances/${id}`, narrow);
    expect(one.settings).toEqual({ MOTD: 'welcome' });
    expect(one.hiddenSettings).toEqual(['DL_TOKEN']);
    expect(one.pendingChanges).toEqual([expect.objectContaining({ key: 'settings.DL_TOKEN', hidden: true })]);
    expect(one.pendingChanges[0]).not.toHaveProperty('value');
    const list = await read('/instances', narrow);
    expect(list.instances[0].settings).toEqual({ MOTD: 'welcome' });
    const revisions = await read(`/instances/${id}/revisions`, narrow);
    expect(revisions.revisions[0].config.settings).toEqual({ MOTD: 'welcome' });
    expect(revisions.revisions[0].config.env).not.toHaveProperty('DOWNLOAD_TOKEN');
    const everything = JSON.stringify([one, list, revisions, await read(`/instances/${id}/history`, narrow)]);
    expect(everything).not.toContain(HIDDEN_VALUE);
  });

  it('admin, manager and operator tokens see the values', async () => {
    for (const token of [t.adminToken, tokens.manager!, tokens.operator!]) {
      const one = await read(`/instances/${id}`, token);
      expect(one.settings).toEqual({ MOTD: 'welcome', DL_TOKEN: HIDDEN_VALUE });
      expect(one).not.toHaveProperty('hiddenSettings');
      expect(one.pendingChanges).toEqual([expect.objectContaining({ key: 'settings.DL_TOKEN', value: `${HIDDEN_VALUE}-next` })]);
      expect((await read(`/instances/${id}/revisions`, token)).revisions[0].config.env.DOWNLOAD_TOKEN).toBe(HIDDEN_VALUE);
    }
  });

  it('the PATCH answer of a narrow token hides them too; the narrow token still may not set one', async () => {
    const res = await t.call('PATCH', `/api/v1/instances/${id}/settings`, {
      token: tokens.narrow!,
      body: { settings: { MOTD: 'changed' } },
    });
    expect(res.status).toBeLessThan(300);
    expect(JSON.stringify(res.body)).not.toContain(HIDDEN_VALUE);
    expect(
      (await t.call('PATCH', `/api/v1/instances/${id}/settings`, { token: tokens.narrow!, body: { settings: { DL_TOKEN: 'x' } } })).status,
    ).toBe(403);
  });

  it('ectl settings get shows a hidden variable by name only to a narrow token', async () => {
    const narrow = await ectl(['instances', 'settings', 'get', 'srv'], tokens.narrow!);
    expect(narrow.code).toBe(0);
    expect(narrow.stdout).toMatch(/^DL_TOKEN:\s+\(hidden: operators only\)$/m);
    expect(narrow.stdout).toMatch(/^pending: settings\.DL_TOKEN = \(hidden\) \(restart_required\)$/m);
    expect(narrow.stdout).not.toContain(HIDDEN_VALUE);
    expect((await ectl(['instances', 'settings', 'get', 'srv'], t.adminToken)).stdout).toMatch(
      new RegExp(`^DL_TOKEN:\\s+${HIDDEN_VALUE}$`, 'm'),
    );
  });
});
